//! The checks of one signed token, in order, each refusal with a reason the page or agent can read
//! (never the token itself): its size; its header (`alg: none` and a missing or unknown `kid` are
//! refused); the key's algorithm against the header's; the signature, `exp` (required), `nbf` and
//! `aud` (and `iss` when configured) by `jsonwebtoken`, with 60 s of leeway; then `role` and `sub`.

use base64::Engine;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{decode, decode_header, Validation};
use serde_json::Value;

use super::key_set::KeySet;
use crate::limits::{MAX_TOKEN_BYTES, MAX_TOKEN_SUBJECT_CHARS, TOKEN_LEEWAY};

/// What a token is for: its `role` claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A page's: `role: "page"`.
    Page,
    /// An agent's, for one user's pages: `role: "agent"`.
    Agent,
}

impl Role {
    fn claim(self) -> &'static str {
        match self {
            Role::Page => "page",
            Role::Agent => "agent",
        }
    }
}

/// A token that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The user (`sub`).
    pub sub: String,
    /// Its `exp`, in unix milliseconds.
    pub expires_at_ms: u64,
}

impl Verified {
    /// When it lapses (unix ms): its `exp` plus [`TOKEN_LEEWAY`], the leeway the checks give `exp`
    /// (`validation.leeway` in [`verify`]).
    pub fn lapses_at_ms(&self) -> u64 {
        let leeway_ms = u64::try_from(TOKEN_LEEWAY.as_millis()).unwrap_or(u64::MAX);
        self.expires_at_ms.saturating_add(leeway_ms)
    }

    /// Whether it is still good at `now_ms` (unix ms): before [`Self::lapses_at_ms`]. What a verdict
    /// kept for later (crate::tokens) is held to.
    pub fn in_date(&self, now_ms: u64) -> bool {
        now_ms < self.lapses_at_ms()
    }
}

/// Why a token was refused: readable by whoever presented it, and never holding the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRefusal(String);

impl TokenRefusal {
    fn new(reason: impl Into<String>) -> Self {
        Self(reason.into())
    }

    pub(super) fn expired() -> Self {
        Self::new(format!(
            "it expired (exp is past, with {} s of leeway)",
            TOKEN_LEEWAY.as_secs()
        ))
    }

    pub(super) fn unknown_kid() -> Self {
        Self::new("its key (kid) is not one the bridge has")
    }
}

impl std::fmt::Display for TokenRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A token not verified with the keys at hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unverified {
    Refused(TokenRefusal),
    /// It names a key the bridge does not have (a fetch of the JWKS URL may bring it).
    UnknownKid,
}

fn refused(reason: impl Into<String>) -> Unverified {
    Unverified::Refused(TokenRefusal::new(reason))
}

/// Every check of `token` for `role`.
pub(super) fn verify(
    token: &str,
    role: Role,
    keys: &KeySet,
    audience: &str,
    issuer: Option<&str>,
) -> Result<Verified, Unverified> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(refused(format!(
            "the token is {} bytes, over the {MAX_TOKEN_BYTES} bytes a token may have",
            token.len()
        )));
    }
    let header = decode_header(token).map_err(|_| refused(unreadable_header(token)))?;
    let Some(kid) = header.kid.as_deref() else {
        return Err(refused("its header names no key (kid)"));
    };
    let Some(key) = keys.get(kid) else {
        return Err(Unverified::UnknownKid);
    };
    if header.alg != key.algorithm {
        return Err(refused(format!(
            "its alg {:?} is not its key's ({:?}, key '{kid}')",
            header.alg, key.algorithm
        )));
    }
    let mut validation = Validation::new(key.algorithm);
    validation.leeway = TOKEN_LEEWAY.as_secs();
    validation.validate_nbf = true;
    validation.set_required_spec_claims(&["exp", "aud", "sub"]);
    validation.set_audience(&[audience]);
    if let Some(issuer) = issuer {
        validation.set_issuer(&[issuer]);
        validation.required_spec_claims.insert("iss".to_owned());
    }
    let data = decode::<Value>(token, &key.decoding, &validation).map_err(|error| {
        refused(match error.kind() {
            ErrorKind::InvalidSignature => "bad signature".to_owned(),
            ErrorKind::ExpiredSignature => TokenRefusal::expired().0,
            ErrorKind::ImmatureSignature => "it is not valid yet (nbf is in the future)".to_owned(),
            ErrorKind::InvalidAudience => {
                format!("wrong audience (aud): this bridge is '{audience}'")
            }
            ErrorKind::InvalidIssuer => "wrong issuer (iss)".to_owned(),
            ErrorKind::MissingRequiredClaim(claim) => format!("it has no '{claim}' claim"),
            ErrorKind::InvalidClaimFormat(claim) => format!("its '{claim}' claim is malformed"),
            ErrorKind::InvalidAlgorithm => "its alg does not fit its key".to_owned(),
            _ => "malformed token".to_owned(),
        })
    })?;
    let claims = data.claims;
    match claims.get("role").and_then(Value::as_str) {
        Some(found) if found == role.claim() => {}
        Some(found) => {
            return Err(refused(format!(
                "wrong role '{found}': a {} token is needed here",
                role.claim()
            )))
        }
        None => {
            return Err(refused(format!(
                "it has no 'role' claim (\"{}\" is needed here)",
                role.claim()
            )))
        }
    }
    let sub = claims
        .get("sub")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let chars = sub.chars().count();
    if chars == 0 || chars > MAX_TOKEN_SUBJECT_CHARS {
        return Err(refused(format!(
            "its sub (the user) must be 1 to {MAX_TOKEN_SUBJECT_CHARS} characters, not {chars}"
        )));
    }
    let exp = claims
        .get("exp")
        .and_then(Value::as_f64)
        .unwrap_or_default();
    Ok(Verified {
        sub: sub.to_owned(),
        expires_at_ms: (exp.max(0.0) * 1000.0) as u64,
    })
}

/// Why a header was not read: `alg: none` named as such (an unsigned token), else malformed.
fn unreadable_header(token: &str) -> String {
    let segment = token.split('.').next().unwrap_or_default();
    let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(segment.trim_end_matches('='))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
    match header
        .as_ref()
        .and_then(|h| h.get("alg"))
        .and_then(Value::as_str)
    {
        Some(alg) if alg.eq_ignore_ascii_case("none") => {
            "alg none is not accepted: the token must be signed".to_owned()
        }
        Some(alg) => format!("alg '{alg}' is not accepted (EdDSA, ES256, RS256, HS256 are)"),
        None => "malformed token: not a JWT (header.payload.signature)".to_owned(),
    }
}
