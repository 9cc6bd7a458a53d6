//! `--token-jwks-url`: the key set fetched from the site's identity provider — with a timeout, its
//! body read in chunks and refused past a bound (a 10 MB answer is never kept whole), junk refused;
//! fetched again for a token naming an unknown `kid`, at most once in its interval
//! ([`JWKS_REFETCH_EVERY`](crate::limits::JWKS_REFETCH_EVERY): a minute). A failed fetch keeps
//! the keys at hand (crate::tokens). Whether a fetch is due is decided on the time it is given
//! (unix ms), never a clock of its own.

use std::sync::atomic::{AtomicU64, Ordering};

use super::key_set::KeySet;
use std::time::Duration;

use crate::limits::{JWKS_FETCH_TIMEOUT, MAX_JWKS_BYTES};

pub(super) struct JwksUrl {
    url: String,
    client: reqwest::Client,
    /// The shortest time between two fetches, in ms.
    refetch_every_ms: u64,
    /// When the last fetch started (unix ms; 0: never).
    last_try_ms: AtomicU64,
}

impl JwksUrl {
    /// `refetch_every`: the shortest time between two fetches.
    pub(super) fn new(url: &str, refetch_every: Duration) -> Result<Self, String> {
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
            refetch_every_ms: u64::try_from(refetch_every.as_millis()).unwrap_or(u64::MAX),
            last_try_ms: AtomicU64::new(0),
        })
    }

    pub(super) fn url(&self) -> &str {
        &self.url
    }

    /// Whether a refetch would start at `now_ms` (its interval since the last try).
    pub(super) fn refetch_due(&self, now_ms: u64) -> bool {
        let last = self.last_try_ms.load(Ordering::Relaxed);
        now_ms.saturating_sub(last) >= self.refetch_every_ms
    }

    /// Claims the refetch at `now_ms`: `false` when one started less than its interval before
    /// (or another caller claimed it first).
    pub(super) fn start_refetch(&self, now_ms: u64) -> bool {
        let last = self.last_try_ms.load(Ordering::Relaxed);
        if now_ms.saturating_sub(last) < self.refetch_every_ms {
            return false;
        }
        self.last_try_ms
            .compare_exchange(last, now_ms, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// One fetch, started at `now_ms` (the next is due an interval later): the whole answer
    /// within the timeout, at most [`MAX_JWKS_BYTES`], a JWK Set.
    pub(super) async fn fetch(&self, now_ms: u64) -> Result<KeySet, String> {
        self.last_try_ms.fetch_max(now_ms, Ordering::Relaxed);
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
