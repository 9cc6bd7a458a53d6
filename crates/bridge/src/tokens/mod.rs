//! Signed tokens (SPEC §13): the site's backend signs a short-lived JWT naming the person a page
//! serves (`role: "page"`) or the person an agent acts for (`role: "agent"`); the bridge checks it
//! against the keys it was given (`--token-keys FILE`, a JWK Set; `--token-jwks-url URL`, fetched)
//! with a well-kept JOSE library (`jsonwebtoken`), and learns the user (`sub`).
//!
//! - `key_set`: the keys, read from a JWK Set (each with its `kid` and one algorithm);
//! - `verify`: the checks of one token, each refusal with its reason;
//! - `jwks_url`: the key set fetched from a URL, bounded, kept when a fetch fails.
//!
//! Minting a token for a test, as a site's backend would (`jsonwebtoken::encode`):
//! `encode(&Header { kid: Some(kid), ..Header::new(Algorithm::HS256) }, &json!({"sub": "alice",
//! "role": "page", "aud": "client-tools", "exp": now + 600}), &EncodingKey::from_secret(secret))`.

mod jwks_url;
mod key_set;
mod verify;

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

pub use key_set::KeySet;
pub use verify::{Role, TokenRefusal, Unverified, Verified};

use crate::ids::now_unix_ms;

/// The keys, audience and issuer signed tokens are checked against. `Debug` shows the key ids,
/// never key material.
pub struct TokenKeys {
    /// From `--token-keys FILE` (fixed) and `--token-jwks-url` (replaced on each good fetch).
    keys: Mutex<KeySet>,
    file_keys: KeySet,
    audience: String,
    issuer: Option<String>,
    jwks: Option<jwks_url::JwksUrl>,
}

impl std::fmt::Debug for TokenKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenKeys")
            .field("kids", &self.lock().kids())
            .field("audience", &self.audience)
            .field("issuer", &self.issuer)
            .field("jwks_url", &self.jwks.as_ref().map(|j| j.url()))
            .finish()
    }
}

impl TokenKeys {
    /// The keys of a JWK Set file; the error names the file and the key that is wrong.
    pub fn from_file(
        path: &Path,
        audience: String,
        issuer: Option<String>,
    ) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--token-keys {}: {e}", path.display()))?;
        let keys = KeySet::from_json(&text)
            .map_err(|e| format!("--token-keys {}: {e}", path.display()))?;
        Ok(Self::new(keys, audience, issuer))
    }

    /// The keys of a JWK Set (JSON text).
    pub fn from_jwk_set_json(
        json: &str,
        audience: String,
        issuer: Option<String>,
    ) -> Result<Self, String> {
        Ok(Self::new(KeySet::from_json(json)?, audience, issuer))
    }

    fn new(keys: KeySet, audience: String, issuer: Option<String>) -> Self {
        Self {
            keys: Mutex::new(keys.clone()),
            file_keys: keys,
            audience,
            issuer,
            jwks: None,
        }
    }

    /// No keys of a file: only those of `--token-jwks-url` ([`Self::with_jwks_url`]).
    pub fn none(audience: String, issuer: Option<String>) -> Self {
        Self::new(KeySet::default(), audience, issuer)
    }

    /// Adds the keys of a JWK Set URL, fetched now: a failure at start is an error (the bridge
    /// does not start without the keys it was told to use). Fetched again for a token naming a
    /// key the bridge does not have, at most once in `refetch_every` (the bridge's:
    /// [`crate::limits::JWKS_REFETCH_EVERY`], a minute).
    pub async fn with_jwks_url(
        mut self,
        url: &str,
        refetch_every: Duration,
    ) -> Result<Self, String> {
        let jwks = jwks_url::JwksUrl::new(url, refetch_every)?;
        let fetched = jwks
            .fetch(now_unix_ms())
            .await
            .map_err(|e| format!("--token-jwks-url {url}: {e}"))?;
        let merged = self.file_keys.merged(&fetched)?;
        *self.lock() = merged;
        self.jwks = Some(jwks);
        Ok(self)
    }

    /// Checks `token` for `role` with the keys at hand (no `await`: the agent routes' check is a
    /// plain function). [`Unverified::UnknownKid`] only when a refetch of the JWKS URL is due at
    /// `now_ms` (unix ms; `exp` and `nbf` are checked on the clock).
    pub fn verify_cached(
        &self,
        token: &str,
        role: Role,
        now_ms: u64,
    ) -> Result<Verified, Unverified> {
        let keys = self.lock().clone();
        let checked = verify::verify(token, role, &keys, &self.audience, self.issuer.as_deref());
        match checked {
            Err(Unverified::UnknownKid) => match &self.jwks {
                Some(jwks) if jwks.refetch_due(now_ms) => Err(Unverified::UnknownKid),
                _ => Err(Unverified::Refused(TokenRefusal::unknown_kid())),
            },
            other => other,
        }
    }

    /// [`Self::verify_cached`], fetching the JWKS URL again (if due at `now_ms`: at most once in
    /// its interval) when the token names a key the bridge does not have, then checking once more.
    pub async fn verify(
        &self,
        token: &str,
        role: Role,
        now_ms: u64,
    ) -> Result<Verified, TokenRefusal> {
        match self.verify_cached(token, role, now_ms) {
            Ok(verified) => Ok(verified),
            Err(Unverified::Refused(why)) => Err(why),
            Err(Unverified::UnknownKid) => {
                self.refetch_if_due(now_ms).await;
                match self.verify_cached(token, role, now_ms) {
                    Ok(verified) => Ok(verified),
                    Err(Unverified::Refused(why)) => Err(why),
                    Err(Unverified::UnknownKid) => Err(TokenRefusal::unknown_kid()),
                }
            }
        }
    }

    /// Fetches the JWKS URL again if it is due at `now_ms` (unix ms: its interval since the last
    /// try); on failure the keys at hand are kept, and a warning says so.
    pub async fn refetch_if_due(&self, now_ms: u64) {
        let Some(jwks) = &self.jwks else { return };
        if jwks.start_refetch(now_ms) {
            self.refetch(jwks, now_ms).await;
        }
    }

    /// Fetches the JWKS URL again now, whenever it was last fetched (an embedding runtime told of
    /// a key rotation); on failure the keys at hand are kept, and a warning says so.
    pub async fn refetch_now(&self) {
        let Some(jwks) = &self.jwks else { return };
        self.refetch(jwks, now_unix_ms()).await;
    }

    async fn refetch(&self, jwks: &jwks_url::JwksUrl, now_ms: u64) {
        match jwks.fetch(now_ms).await {
            Ok(fetched) => match self.file_keys.merged(&fetched) {
                Ok(merged) => {
                    tracing::info!(kids = ?merged.kids(), "token key set fetched again");
                    *self.lock() = merged;
                }
                Err(error) => {
                    tracing::warn!(%error, url = jwks.url(), "the token key set fetched is unusable: the keys at hand are kept")
                }
            },
            Err(error) => {
                tracing::warn!(%error, url = jwks.url(), "fetching the token key set failed: the keys at hand are kept")
            }
        }
    }

    /// What every cluster node must share (crate::cluster): the keys, audience, issuer and URL.
    pub fn digest(&self) -> String {
        let keys = self.lock().digest();
        let url = self.jwks.as_ref().map_or("", |j| j.url());
        let issuer = self.issuer.as_deref().unwrap_or("\u{0}");
        format!("{keys}|{}|{issuer}|{url}", self.audience)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, KeySet> {
        self.keys.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests;
