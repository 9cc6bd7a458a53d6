//! The sealed `requestState`s the bridge hands out to agents on 2026-07-28, which they echo back
//! with their answers: a confirmation's (crate::agent::confirmation, `v1`) and a round's
//! (crate::agent::rounds, `r1`). A state is `<domain>.<payload hex>.<tag hex>`: the payload is in
//! the clear (integrity-protected, not secret), the tag is HMAC-SHA256 over the domain and the
//! payload under a 256-bit key drawn from the operating system when the bridge starts (never
//! stored, never sent: a restarted bridge refuses older states). Also the confirmations' spent
//! nonces, which make each of their states single-use.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::ids::hex;
use crate::limits::{
    MAX_SPENT_STATES, MAX_SPENT_STATES_PER_SESSION, MAX_STATE_HEX, REQUEST_STATE_TTL_MS,
};

/// Seals and opens `requestState`s under a per-bridge random key; remembers spent confirmation
/// states.
pub struct RequestStates {
    key: [u8; 32],
    /// Nonces already redeemed, until they expire (then they are refused anyway).
    pub(super) spent: Mutex<Spent>,
}

/// The spent nonces, by expiry (forgetting the expired ones is a walk from the front, not a scan),
/// by nonce, and counted by page session.
#[derive(Default)]
pub(super) struct Spent {
    pub(super) by_expiry: BTreeSet<(u64, String)>,
    /// Nonce → its page session hash.
    pub(super) nonces: HashMap<String, String>,
    pub(super) per_session: HashMap<String, usize>,
}

impl Spent {
    fn forget_expired(&mut self, now_ms: u64) {
        while let Some(first) = self.by_expiry.first() {
            if first.0 > now_ms {
                return;
            }
            let (_, nonce) = self.by_expiry.pop_first().expect("there is a first");
            if let Some(session) = self.nonces.remove(&nonce) {
                if let Some(count) = self.per_session.get_mut(&session) {
                    *count -= 1;
                    if *count == 0 {
                        self.per_session.remove(&session);
                    }
                }
            }
        }
    }

    /// Spends `nonce` (valid until `expiry`) of the page session hashed `session`.
    pub(super) fn spend(
        &mut self,
        nonce: String,
        session: String,
        expiry: u64,
        now_ms: u64,
    ) -> Result<(), String> {
        self.forget_expired(now_ms);
        if self.nonces.contains_key(&nonce) {
            return Err(
                "requestState was already used: make the request again without it".to_owned(),
            );
        }
        let in_session = self.per_session.get(&session).copied().unwrap_or(0);
        if in_session >= MAX_SPENT_STATES_PER_SESSION {
            return Err(format!(
                "too many confirmations in this page session: at most \
                 {MAX_SPENT_STATES_PER_SESSION} within {} s; try again later",
                REQUEST_STATE_TTL_MS / 1000
            ));
        }
        if self.nonces.len() >= MAX_SPENT_STATES {
            return Err(format!(
                "too many confirmations on this bridge: at most {MAX_SPENT_STATES} within {} s; \
                 try again later",
                REQUEST_STATE_TTL_MS / 1000
            ));
        }
        self.by_expiry.insert((expiry, nonce.clone()));
        self.nonces.insert(nonce, session.clone());
        *self.per_session.entry(session).or_insert(0) += 1;
        Ok(())
    }
}

impl Default for RequestStates {
    fn default() -> Self {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the operating system's random source");
        Self::with_key(key)
    }
}

impl RequestStates {
    pub fn with_key(key: [u8; 32]) -> Self {
        Self {
            key,
            spent: Mutex::new(Spent::default()),
        }
    }

    /// `payload` sealed under this bridge's key for `domain` (also the state's prefix):
    /// `<domain>.<hex payload>.<hex tag>`.
    pub(crate) fn seal(&self, domain: &str, payload: &[u8]) -> String {
        let mut mac = self.mac(domain);
        mac.update(payload);
        let tag = mac.finalize().into_bytes();
        format!("{domain}.{}.{}", hex(payload), hex(&tag))
    }

    /// The payload of a state [`Self::seal`] made for `domain`; `None` when it was not, or was
    /// altered.
    pub(crate) fn open(&self, domain: &str, state: &str) -> Option<Vec<u8>> {
        let (payload, tag) = parts(domain, state)?;
        let (payload, tag) = (unhex(payload)?, unhex(tag)?);
        let mut mac = self.mac(domain);
        mac.update(&payload);
        mac.verify_slice(&tag).ok()?;
        Some(payload)
    }

    /// Spends the single-use `nonce` of a confirmation state of the page session hashed
    /// `session`, valid until `expiry`: refused when it was spent already, or when too many are
    /// (per page session, per bridge; each is remembered until it expires).
    pub(crate) fn spend(
        &self,
        nonce: String,
        session: String,
        expiry: u64,
        now_ms: u64,
    ) -> Result<(), String> {
        let mut spent = self.spent.lock().unwrap_or_else(|p| p.into_inner());
        spent.spend(nonce, session, expiry, now_ms)
    }

    fn mac(&self, domain: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        mac.update(b"client-tools requestState v1\0");
        mac.update(domain.as_bytes());
        mac.update(&[0]);
        mac
    }
}

/// The payload of a state sealed for `domain`, read without checking its tag: for routing only
/// (which node keeps the call, crate::agent::rounds::holder), never for trusting it.
pub(crate) fn unsealed_payload(domain: &str, state: &str) -> Option<Vec<u8>> {
    let (payload, _tag) = parts(domain, state)?;
    unhex(payload)
}

/// The payload and tag (hex) of a state of `domain`.
fn parts<'a>(domain: &str, state: &'a str) -> Option<(&'a str, &'a str)> {
    let mut parts = state.split('.');
    let (Some(prefix), Some(payload), Some(tag), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    (prefix == domain).then_some((payload, tag))
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > MAX_STATE_HEX {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
