//! `--token-jwks-url`: the key set fetched from the site's identity provider — with a timeout, its
//! body read in chunks and refused past a bound (a 10 MB answer is never kept whole), junk refused;
//! fetched again for a token naming an unknown `kid`, at most once a minute. A failed fetch keeps
//! the keys at hand (crate::tokens).

use std::sync::atomic::{AtomicU64, Ordering};

use super::key_set::KeySet;
use crate::limits::{JWKS_FETCH_TIMEOUT, JWKS_REFETCH_EVERY, MAX_JWKS_BYTES};

pub(super) struct JwksUrl {
    url: String,
    client: reqwest::Client,
    /// When the last fetch started (unix ms; 0: never).
    last_try_ms: AtomicU64,
}

impl JwksUrl {
    pub(super) fn new(url: &str) -> Result<Self, String> {
        let parsed: reqwest::Url = url
            .parse()
            .map_err(|e| format!("--token-jwks-url {url}: not a URL: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!(
                "--token-jwks-url {url}: only http and https URLs are fetched"
            ));
        }
        let client = reqwest::Client::builder()
            .timeout(JWKS_FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("--token-jwks-url: {e}"))?;
        Ok(Self {
            url: url.to_owned(),
            client,
            last_try_ms: AtomicU64::new(0),
        })
    }

    pub(super) fn url(&self) -> &str {
        &self.url
    }

    /// Whether a refetch would start now (a minute since the last try).
    pub(super) fn refetch_due(&self, now_ms: u64) -> bool {
        let last = self.last_try_ms.load(Ordering::Relaxed);
        now_ms.saturating_sub(last) >= JWKS_REFETCH_EVERY.as_millis() as u64
    }

    /// Claims the next refetch: `false` when one started less than a minute ago.
    pub(super) fn start_refetch(&self, now_ms: u64) -> bool {
        let last = self.last_try_ms.load(Ordering::Relaxed);
        if now_ms.saturating_sub(last) < JWKS_REFETCH_EVERY.as_millis() as u64 {
            return false;
        }
        self.last_try_ms
            .compare_exchange(last, now_ms, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// One fetch: the whole answer within the timeout, at most [`MAX_JWKS_BYTES`], a JWK Set.
    pub(super) async fn fetch(&self) -> Result<KeySet, String> {
        self.last_try_ms
            .fetch_max(crate::ids::now_unix_ms(), Ordering::Relaxed);
        let fetched = tokio::time::timeout(JWKS_FETCH_TIMEOUT, self.fetch_body()).await;
        let body = fetched
            .map_err(|_| format!("no whole answer within {} s", JWKS_FETCH_TIMEOUT.as_secs()))??;
        let text = String::from_utf8(body).map_err(|_| "the answer is not UTF-8".to_owned())?;
        KeySet::from_json(&text)
    }

    async fn fetch_body(&self) -> Result<Vec<u8>, String> {
        let mut response = self
            .client
            .get(&self.url)
            .send()
            .await
            .map_err(|e| format!("the request failed: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("answered {}", response.status()));
        }
        if response
            .content_length()
            .is_some_and(|length| length > MAX_JWKS_BYTES as u64)
        {
            return Err(format!("the answer is over {MAX_JWKS_BYTES} bytes"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("reading the answer failed: {e}"))?
        {
            if body.len() + chunk.len() > MAX_JWKS_BYTES {
                return Err(format!("the answer is over {MAX_JWKS_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}
