//! The keys signed tokens may be signed with: a JWK Set (RFC 7517), each key with its `kid` and
//! exactly one algorithm — EdDSA (Ed25519), ES256 (P-256), RS256 or HS256. The algorithm is the
//! key's `alg` when it has one, else the only one its type allows here (`OKP`/`Ed25519`: EdDSA,
//! `EC`/`P-256`: ES256, `oct`: HS256; an `RSA` key names its `alg`, RS256). A token must name the
//! same algorithm: an HS256 token "signed" with an RSA public key's bytes is refused.

use std::collections::HashMap;

use base64::Engine;
use std::sync::Arc;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey};
use sha2::{Digest, Sha256};

use crate::ids::hex;
use crate::limits::{MIN_HMAC_KEY_BYTES, MIN_RSA_BITS};

/// One usable key.
#[derive(Clone)]
pub(crate) struct Key {
    pub algorithm: Algorithm,
    pub decoding: Arc<DecodingKey>,
}

/// The keys by `kid`.
#[derive(Clone, Default)]
pub struct KeySet {
    keys: HashMap<String, Key>,
    /// A digest of the keys' JSON (what cluster nodes compare).
    digests: Vec<String>,
}

impl KeySet {
    /// Reads a JWK Set; the error names the key (its `kid`, else its place) that is wrong.
    pub fn from_json(json: &str) -> Result<Self, String> {
        let set: JwkSet = serde_json::from_str(json)
            .map_err(|e| format!("not a JWK Set ({{\"keys\": [...]}}): {e}"))?;
        if set.keys.is_empty() {
            return Err("the JWK Set has no keys".to_owned());
        }
        let mut keys = KeySet::default();
        for (index, jwk) in set.keys.iter().enumerate() {
            let Some(kid) = jwk.common.key_id.clone().filter(|k| !k.is_empty()) else {
                return Err(format!("key {index} has no \"kid\": every key needs one"));
            };
            let key = read(jwk).map_err(|e| format!("key '{kid}': {e}"))?;
            if keys.keys.insert(kid.clone(), key).is_some() {
                return Err(format!("key '{kid}' appears twice"));
            }
            let json = serde_json::to_string(jwk).unwrap_or_default();
            keys.digests
                .push(format!("{kid}:{}", hex(&Sha256::digest(json))));
        }
        Ok(keys)
    }

    pub(crate) fn get(&self, kid: &str) -> Option<&Key> {
        self.keys.get(kid)
    }

    /// The key ids, sorted.
    pub fn kids(&self) -> Vec<String> {
        let mut kids: Vec<String> = self.keys.keys().cloned().collect();
        kids.sort();
        kids
    }

    /// These keys and `other`'s (a `kid` in both is refused: which would sign?).
    pub(crate) fn merged(&self, other: &KeySet) -> Result<KeySet, String> {
        let mut merged = self.clone();
        for (kid, key) in &other.keys {
            if merged.keys.insert(kid.clone(), key.clone()).is_some() {
                return Err(format!(
                    "key '{kid}' is both in --token-keys and at --token-jwks-url"
                ));
            }
        }
        merged.digests.extend(other.digests.iter().cloned());
        Ok(merged)
    }

    pub(crate) fn digest(&self) -> String {
        let mut digests = self.digests.clone();
        digests.sort();
        digests.join(",")
    }
}

/// The algorithm and decoding key of one JWK.
fn read(jwk: &Jwk) -> Result<Key, String> {
    let implied = match &jwk.algorithm {
        AlgorithmParameters::OctetKeyPair(_) => Algorithm::EdDSA,
        AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
            Algorithm::ES256
        }
        AlgorithmParameters::EllipticCurve(ec) => {
            return Err(format!(
                "curve {:?} is not accepted (ES256 on P-256 is)",
                ec.curve
            ))
        }
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::OctetKey(_) => Algorithm::HS256,
        _ => return Err("its key type is not one of OKP, EC, RSA, oct".to_owned()),
    };
    let algorithm = match jwk.common.key_algorithm {
        None => implied,
        Some(KeyAlgorithm::EdDSA) if implied == Algorithm::EdDSA => Algorithm::EdDSA,
        Some(KeyAlgorithm::ES256) if implied == Algorithm::ES256 => Algorithm::ES256,
        Some(KeyAlgorithm::RS256) if implied == Algorithm::RS256 => Algorithm::RS256,
        Some(KeyAlgorithm::HS256) if implied == Algorithm::HS256 => Algorithm::HS256,
        Some(other) => {
            return Err(format!(
                "\"alg\": {other:?} is not accepted for this key type (EdDSA for OKP, ES256 for \
                 EC P-256, RS256 for RSA, HS256 for oct)"
            ))
        }
    };
    // The parts' sizes, checked here: the library reads a key's numbers only when a token comes.
    let bytes = |part: &str, value: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(value.trim_end_matches('='))
            .map_err(|_| format!("its \"{part}\" is not base64url"))
    };
    match &jwk.algorithm {
        AlgorithmParameters::OctetKeyPair(okp) => {
            if format!("{:?}", okp.curve) != "Ed25519" {
                return Err(format!(
                    "curve {:?} is not accepted (Ed25519 is)",
                    okp.curve
                ));
            }
            if bytes("x", &okp.x)?.len() != 32 {
                return Err("an Ed25519 key's \"x\" is 32 bytes".to_owned());
            }
        }
        AlgorithmParameters::EllipticCurve(ec)
            if bytes("x", &ec.x)?.len() != 32 || bytes("y", &ec.y)?.len() != 32 =>
        {
            return Err("a P-256 key's \"x\" and \"y\" are 32 bytes each".to_owned());
        }
        AlgorithmParameters::RSA(rsa) => {
            let modulus = bytes("n", &rsa.n)?;
            let significant = modulus.iter().skip_while(|b| **b == 0).count();
            if significant * 8 < MIN_RSA_BITS || bytes("e", &rsa.e)?.is_empty() {
                return Err(format!(
                    "an RSA key needs a modulus of at least {MIN_RSA_BITS} bits and an exponent"
                ));
            }
        }
        _ => {}
    }
    let decoding = DecodingKey::from_jwk(jwk).map_err(|e| format!("unreadable: {e}"))?;
    if algorithm == Algorithm::HS256 {
        let bytes = decoding.try_get_as_bytes().map_or(0, <[u8]>::len);
        if bytes < MIN_HMAC_KEY_BYTES {
            return Err(format!(
                "an HS256 key of {bytes} bytes is too short to sign tokens (at least \
                 {MIN_HMAC_KEY_BYTES})"
            ));
        }
    }
    Ok(Key {
        algorithm,
        decoding: Arc::new(decoding),
    })
}
