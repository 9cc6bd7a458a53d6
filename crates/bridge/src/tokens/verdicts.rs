//! The agent tokens verified lately, so that an agent's every request does not check its token's
//! signature again (an EdDSA check costs ~60 µs; an agent sends its token on each request, a page
//! once per connect). Kept: a SHA-256 of the whole token (never the token) and what its checks
//! found (`sub`, `exp`); used only while [`Verified::in_date`] (`exp` plus the leeway the checks
//! allow, the same rule). Only verdicts that passed are kept, so tokens refused, however many,
//! take no room; crate::tokens forgets them all when the keys change.
//!
//! Bounded by [`MAX_VERIFIED_AGENT_TOKENS`] in two halves: new verdicts go to the newer half; when
//! it is full it becomes the older one and the older one is forgotten (expired entries with it), so
//! an insert costs O(1) and a verdict still used is moved to the newer half when looked up.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::verify::Verified;
use crate::limits::MAX_VERIFIED_AGENT_TOKENS;

/// A token's name here: the SHA-256 of the whole token.
pub(super) type TokenDigest = [u8; 32];

/// The SHA-256 of the whole `token`.
pub(super) fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

/// What the verdicts say of a token at a time.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Cached {
    /// Verified, and still in date.
    InDate(Verified),
    /// Verified, but its `exp` plus the leeway is past (the entry is dropped).
    Lapsed,
    /// Not here: to be verified.
    Unknown,
}

pub(super) struct Verdicts {
    /// The most either half holds: half the bound.
    half: usize,
    newer: HashMap<TokenDigest, Verified>,
    older: HashMap<TokenDigest, Verified>,
}

impl Default for Verdicts {
    fn default() -> Self {
        Self::with_capacity(MAX_VERIFIED_AGENT_TOKENS)
    }
}

impl Verdicts {
    /// At most `capacity` verdicts (at least 2).
    pub(super) fn with_capacity(capacity: usize) -> Self {
        Self {
            half: (capacity / 2).max(1),
            newer: HashMap::new(),
            older: HashMap::new(),
        }
    }

    /// The verdict of the token of `digest` at `now_ms` (unix ms).
    pub(super) fn get(&mut self, digest: &TokenDigest, now_ms: u64) -> Cached {
        if let Some(verified) = self.newer.get(digest) {
            if verified.in_date(now_ms) {
                return Cached::InDate(verified.clone());
            }
            self.newer.remove(digest);
            return Cached::Lapsed;
        }
        match self.older.remove(digest) {
            Some(verified) if verified.in_date(now_ms) => {
                self.insert(*digest, verified.clone());
                Cached::InDate(verified)
            }
            Some(_) => Cached::Lapsed,
            None => Cached::Unknown,
        }
    }

    /// Keeps the verdict of a token that passed every check.
    pub(super) fn insert(&mut self, digest: TokenDigest, verified: Verified) {
        if self.newer.len() >= self.half && !self.newer.contains_key(&digest) {
            self.older = std::mem::take(&mut self.newer);
        }
        self.older.remove(&digest);
        self.newer.insert(digest, verified);
    }

    /// Forgets every verdict (the keys changed).
    pub(super) fn clear(&mut self) {
        self.newer.clear();
        self.older.clear();
    }

    /// How many verdicts are kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.newer.len() + self.older.len()
    }
}
