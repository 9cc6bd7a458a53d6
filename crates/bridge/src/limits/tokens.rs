//! Bounds of signed tokens (SPEC §13, crate::tokens).

use std::time::Duration;

/// A token longer than this is refused before it is parsed (a JWT with a few claims is well under
/// 1 KiB).
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// The clock skew allowed on `exp` and `nbf`.
pub const TOKEN_LEEWAY: Duration = Duration::from_secs(60);

/// The longest `sub` (a user id) a token may carry, in characters.
pub const MAX_TOKEN_SUBJECT_CHARS: usize = 256;

/// How long a fetch of `--token-jwks-url` may take.
pub const JWKS_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest key set `--token-jwks-url` may answer: read in chunks, refused past this without
/// being kept whole.
pub const MAX_JWKS_BYTES: usize = 256 * 1024;

/// The key set is fetched again (for a token naming a `kid` it does not have) at most this often.
pub const JWKS_REFETCH_EVERY: Duration = Duration::from_secs(60);

/// The shortest HS256 key accepted (RFC 7518 §3.2: a key at least as long as the hash).
pub const MIN_HMAC_KEY_BYTES: usize = 32;

/// The smallest RSA modulus accepted, in bits (NIST SP 800-57: 2048 bits through 2030).
pub const MIN_RSA_BITS: usize = 2048;

/// Agent tokens whose verdict is kept (crate::tokens, by the SHA-256 of each, with its `sub` and
/// `exp`: at most ~1.1 KB each, so ~9 MB at most), so that an agent's every request does not check
/// its signature again; only tokens that passed, each until its `exp` plus [`TOKEN_LEEWAY`] or the
/// keys change. Past it, the older half is forgotten (their next request checks them again).
pub const MAX_VERIFIED_AGENT_TOKENS: usize = 8_192;
