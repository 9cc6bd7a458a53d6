//! Signed tokens (SPEC §13): the site's backend signs a short-lived JWT naming the person a page
//! serves (`role: "page"`) or the person an agent acts for (`role: "agent"`); the bridge checks it
//! against the keys it was given (`--token-keys FILE`, a JWK Set; `--token-jwks-url URL`, fetched)
//! with a well-kept JOSE library (`jsonwebtoken`), and learns the user (`sub`).
//!
//! - `key_set`: the keys, read from a JWK Set (each with its `kid` and one algorithm);
//! - `verify`: the checks of one token, each refusal with its reason;
//! - `jwks_url`: the key set fetched from a URL, bounded, kept when a fetch fails;
//! - `verdicts`: the agent tokens verified lately (by their SHA-256), bounded, forgotten when the
//!   keys change: an agent sends its token on every request, and its signature is checked once.
//!
//! Minting a token for a test, as a site's backend would (`jsonwebtoken::encode`):
//! `encode(&Header { kid: Some(kid), ..Header::new(Algorithm::HS256) }, &json!({"sub": "alice",
//! "role": "page", "aud": "client-tools", "exp": now + 600}), &EncodingKey::from_secret(secret))`.

mod jwks_url;
mod key_set;
mod verdicts;
mod verify;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use key_set::KeySet;
pub use verify::{Role, TokenRefusal, Unverified, Verified};

use crate::ids::now_unix_ms;
use crate::limits::MAX_TOKEN_BYTES;
use verdicts::{Cached, Verdicts};

/// The keys, audience and issuer signed tokens are checked against. `Debug` shows the key ids,
/// never key material.
pub struct TokenKeys {
    /// The keys, and the verdicts reached with them.
    state: Mutex<State>,
    file_keys: KeySet,
    audience: String,
    issuer: Option<String>,
    jwks: Option<jwks_url::JwksUrl>,
}

/// The keys at hand and the agent tokens they verified, under one lock: a verdict reached with keys
/// since replaced is never kept.
struct State {
    /// From `--token-keys FILE` (fixed) and `--token-jwks-url` (replaced on each good fetch).
    keys: Arc<KeySet>,
    /// Counts the changes of `keys`: a verdict reached with an older count is not kept.
    generation: u64,
    /// The agent tokens verified with `keys`, still in date.
    verdicts: Verdicts,
}

impl std::fmt::Debug for TokenKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenKeys")
            .field("kids", &self.lock().keys.kids())
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
            state: Mutex::new(State {
                keys: Arc::new(keys.clone()),
                generation: 0,
                verdicts: Verdicts::default(),
            }),
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
        self.set_keys(merged);
        self.jwks = Some(jwks);
        Ok(self)
    }

    /// Checks `token` for `role` with the keys at hand (no `await`: the agent routes' check is a
    /// plain function). [`Unverified::UnknownKid`] only when a refetch of the JWKS URL is due at
    /// `now_ms` (unix ms; `exp` and `nbf` are checked on the clock).
    ///
    /// An agent token (`Role::Agent`: sent on every request) that passed is remembered by its
    /// SHA-256 ([`MAX_VERIFIED_AGENT_TOKENS`](crate::limits::MAX_VERIFIED_AGENT_TOKENS) of them)
    /// until it lapses at `now_ms` ([`Verified::in_date`]) or the keys change: the same token is
    /// then accepted without its signature checked again, and refused once it lapsed. Refusals are
    /// not remembered.
    pub fn verify_cached(
        &self,
        token: &str,
        role: Role,
        now_ms: u64,
    ) -> Result<Verified, Unverified> {
        // A token over the bound is refused unread: not even hashed.
        let digest = (role == Role::Agent && token.len() <= MAX_TOKEN_BYTES)
            .then(|| verdicts::digest(token));
        let (keys, generation) = {
            let mut state = self.lock();
            if let Some(digest) = &digest {
                match state.verdicts.get(digest, now_ms) {
                    Cached::InDate(verified) => return Ok(verified),
                    Cached::Lapsed => return Err(Unverified::Refused(TokenRefusal::expired())),
                    Cached::Unknown => {}
                }
            }
            (state.keys.clone(), state.generation)
        };
        let checked = verify::verify(token, role, &keys, &self.audience, self.issuer.as_deref());
        if let (Ok(verified), Some(digest)) = (&checked, digest) {
            let mut state = self.lock();
            if state.generation == generation && verified.in_date(now_ms) {
                state.verdicts.insert(digest, verified.clone());
            }
        }
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
                    self.set_keys(merged);
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
        let keys = self.lock().keys.digest();
        let url = self.jwks.as_ref().map_or("", |j| j.url());
        let issuer = self.issuer.as_deref().unwrap_or("\u{0}");
        format!("{keys}|{}|{issuer}|{url}", self.audience)
    }

    /// Replaces the keys at hand; when they differ from the last (a key added, changed or
    /// removed), the verdicts reached with them are forgotten: a removed key's tokens are refused
    /// from this moment.
    fn set_keys(&self, keys: KeySet) {
        let mut state = self.lock();
        if keys.digest() != state.keys.digest() {
            state.verdicts.clear();
            state.generation += 1;
        }
        state.keys = Arc::new(keys);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests;
