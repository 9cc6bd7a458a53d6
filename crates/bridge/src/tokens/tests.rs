//! Every refusal of a signed token, and each algorithm accepted, with keys of the test fixtures
//! (crates/bridge/tests/fixtures: test keys, worth nothing) minted as a site's backend would.

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use super::*;

const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read(path).unwrap()
}

/// Each algorithm's signing key and its public JWK (with `kid` = the algorithm's name).
fn signing_keys() -> Vec<(Algorithm, EncodingKey, Jwk)> {
    let keys = [
        (Algorithm::HS256, EncodingKey::from_secret(SECRET).unwrap()),
        (
            Algorithm::EdDSA,
            EncodingKey::from_ed_pem(&fixture("ed25519-test-key.pem")).unwrap(),
        ),
        (
            Algorithm::ES256,
            EncodingKey::from_ec_pem(&fixture("p256-test-key.pem")).unwrap(),
        ),
        (
            Algorithm::RS256,
            EncodingKey::from_rsa_pem(&fixture("rsa-test-key.pem")).unwrap(),
        ),
    ];
    keys.into_iter()
        .map(|(alg, key)| {
            let mut jwk = Jwk::from_encoding_key(&key, alg).unwrap();
            jwk.common.key_id = Some(format!("{alg:?}"));
            (alg, key, jwk)
        })
        .collect()
}

fn key_set() -> TokenKeys {
    let keys: Vec<Jwk> = signing_keys().into_iter().map(|(_, _, jwk)| jwk).collect();
    let json = serde_json::to_string(&JwkSet { keys }).unwrap();
    TokenKeys::from_jwk_set_json(&json, "client-tools".into(), None).unwrap()
}

fn now_s() -> i64 {
    (crate::ids::now_unix_ms() / 1000) as i64
}

fn claims(role: &str, sub: &str) -> Value {
    json!({"sub": sub, "role": role, "aud": "client-tools", "exp": now_s() + 600})
}

fn mint_with(alg: Algorithm, kid: &str, claims: &Value) -> String {
    let (_, key, _) = signing_keys()
        .into_iter()
        .find(|(a, _, _)| *a == alg)
        .unwrap();
    let mut header = Header::new(alg);
    header.kid = Some(kid.into());
    encode(&header, claims, &key).unwrap()
}

fn mint(claims: &Value) -> String {
    mint_with(Algorithm::HS256, "HS256", claims)
}

fn refusal(keys: &TokenKeys, token: &str, role: Role) -> String {
    match keys.verify_cached(token, role, crate::ids::now_unix_ms()) {
        Err(Unverified::Refused(why)) => why.to_string(),
        other => panic!("refused, not {other:?}"),
    }
}

#[test]
fn each_algorithm_is_accepted_with_its_own_key() {
    let keys = key_set();
    for alg in [
        Algorithm::HS256,
        Algorithm::EdDSA,
        Algorithm::ES256,
        Algorithm::RS256,
    ] {
        let token = mint_with(alg, &format!("{alg:?}"), &claims("page", "alice"));
        let verified = keys.verify_cached(&token, Role::Page, 0).unwrap();
        assert_eq!(verified.sub, "alice", "{alg:?}");
        assert!(
            verified.expires_at_ms > crate::ids::now_unix_ms(),
            "{alg:?}"
        );
    }
    // Another kid's key does not verify it: the signature is checked with the named key.
    let token = mint_with(Algorithm::EdDSA, "ES256", &claims("page", "alice"));
    assert!(refusal(&keys, &token, Role::Page).contains("alg EdDSA is not its key's"));
}

#[test]
fn every_refusal_says_why_and_never_shows_the_token() {
    let keys = key_set();
    let past = json!({"sub": "a", "role": "page", "aud": "client-tools", "exp": now_s() - 61});
    let just = json!({"sub": "a", "role": "page", "aud": "client-tools", "exp": now_s() - 50});
    let early = json!({"sub": "a", "role": "page", "aud": "client-tools", "exp": now_s() + 600,
        "nbf": now_s() + 120});
    let no_exp = json!({"sub": "a", "role": "page", "aud": "client-tools"});
    let wrong_aud = json!({"sub": "a", "role": "page", "aud": "other", "exp": now_s() + 600});
    let no_role = json!({"sub": "a", "aud": "client-tools", "exp": now_s() + 600});
    let long_sub = "x".repeat(257);
    let cases = [
        (mint(&past), "expired"),
        (mint(&early), "not valid yet"),
        (mint(&no_exp), "no 'exp'"),
        (mint(&wrong_aud), "wrong audience"),
        (mint(&no_role), "no 'role'"),
        (mint(&claims("agent", "a")), "wrong role 'agent'"),
        (mint(&claims("page", "")), "1 to 256 characters, not 0"),
        (mint(&claims("page", &long_sub)), "not 257"),
        (
            mint_with(Algorithm::HS256, "nobody", &claims("page", "a")),
            "not one the bridge has",
        ),
        ("a.b".to_owned(), "malformed"),
        ("x".repeat(9000), "over the 8192 bytes"),
    ];
    for (token, expected) in cases {
        let why = refusal(&keys, &token, Role::Page);
        assert!(why.contains(expected), "{expected}: {why}");
        assert!(!why.contains(&token), "{why}");
    }
    // Within the 60 s leeway, a token just past its exp is still good.
    assert!(keys.verify_cached(&mint(&just), Role::Page, 0).is_ok());
    // A bad signature: the payload changed after signing.
    let token = mint(&claims("page", "alice"));
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    let forged = mint(&claims("page", "mallory"));
    parts[1] = forged.split('.').nth(1).unwrap().to_owned();
    let tampered = parts.join(".");
    assert_eq!(refusal(&keys, &tampered, Role::Page), "bad signature");
    // A header without a kid.
    let no_kid = encode(
        &Header::new(Algorithm::HS256),
        &claims("page", "a"),
        &EncodingKey::from_secret(SECRET).unwrap(),
    )
    .unwrap();
    assert!(refusal(&keys, &no_kid, Role::Page).contains("names no key"));
}

#[test]
fn an_unsigned_token_and_an_rsa_key_used_as_an_hmac_secret_are_refused() {
    use base64::Engine;
    let keys = key_set();
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "kid": "HS256", "typ": "JWT"})),
        b64(&claims("page", "alice"))
    );
    assert!(refusal(&keys, &none, Role::Page).contains("alg none is not accepted"));
    // The classic confusion: HS256 "signed" with the RSA key's public bytes, kid of the RSA key.
    let public = fixture("rsa-test-key.pub.pem");
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("RS256".into());
    let confused = encode(
        &header,
        &claims("page", "alice"),
        &EncodingKey::from_secret(&public).unwrap(),
    )
    .unwrap();
    assert!(refusal(&keys, &confused, Role::Page).contains("alg HS256 is not its key's (RS256"));
}

#[test]
fn an_issuer_when_set_is_required() {
    let keys: Vec<Jwk> = signing_keys().into_iter().map(|(_, _, jwk)| jwk).collect();
    let json = serde_json::to_string(&JwkSet { keys }).unwrap();
    let keys =
        TokenKeys::from_jwk_set_json(&json, "client-tools".into(), Some("https://site".into()))
            .unwrap();
    let mut with_iss = claims("agent", "alice");
    with_iss["iss"] = "https://site".into();
    assert!(keys.verify_cached(&mint(&with_iss), Role::Agent, 0).is_ok());
    with_iss["iss"] = "https://other".into();
    assert!(refusal(&keys, &mint(&with_iss), Role::Agent).contains("wrong issuer"));
    assert!(refusal(&keys, &mint(&claims("agent", "alice")), Role::Agent).contains("no 'iss'"));
}

#[test]
fn a_bad_key_file_names_the_key() {
    let cases = [
        (
            json!({"keys": [{"kty": "oct", "k": "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI"}]}),
            "key 0 has no \"kid\"",
        ),
        (
            json!({"keys": [{"kty": "oct", "kid": "short", "k": "c2hvcnQ"}]}),
            "key 'short': an HS256 key of 5 bytes",
        ),
        (
            json!({"keys": [{"kty": "RSA", "kid": "r", "alg": "HS256", "n": "AQAB", "e": "AQAB"}]}),
            "key 'r': \"alg\": HS256 is not accepted",
        ),
        (
            json!({"keys": [{"kty": "RSA", "kid": "small", "n": "AQAB", "e": "AQAB"}]}),
            "key 'small': an RSA key needs a modulus of at least 2048 bits",
        ),
        (
            json!({"keys": [{"kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"}]}),
            "key 'ec': a P-256 key's",
        ),
        (json!({"keys": []}), "no keys"),
        (json!({"nokeys": 1}), "not a JWK Set"),
    ];
    for (set, expected) in cases {
        let error = TokenKeys::from_jwk_set_json(&set.to_string(), "a".into(), None).unwrap_err();
        assert!(error.contains(expected), "{expected}: {error}");
    }
    let duplicate = json!({"keys": [
        {"kty": "oct", "kid": "k", "k": "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI"},
        {"kty": "oct", "kid": "k", "k": "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI"},
    ]});
    let error = TokenKeys::from_jwk_set_json(&duplicate.to_string(), "a".into(), None).unwrap_err();
    assert!(error.contains("key 'k' appears twice"), "{error}");
}

// The verdicts kept for agent tokens (verdicts.rs), on the time the tests give.

fn agent_token(sub: &str) -> String {
    mint_with(Algorithm::EdDSA, "EdDSA", &claims("agent", sub))
}

fn kept(keys: &TokenKeys) -> usize {
    keys.lock().verdicts.len()
}

#[test]
fn an_agent_token_verified_once_is_accepted_on_its_verdict_until_it_lapses() {
    let keys = key_set();
    let token = agent_token("alice");
    let now = crate::ids::now_unix_ms();
    let verified = keys.verify_cached(&token, Role::Agent, now).unwrap();
    assert_eq!(kept(&keys), 1);
    // No key left to check a signature with (set behind the verdicts' back: a real change of keys
    // forgets them): the token is accepted on its verdict, so its signature is not checked again.
    keys.lock().keys = Arc::new(KeySet::default());
    for at in [now, now + 300_000, verified.lapses_at_ms() - 1] {
        assert_eq!(
            keys.verify_cached(&token, Role::Agent, at),
            Ok(verified.clone())
        );
    }
    // Its exp plus the leeway past, it is refused as expired, and forgotten.
    assert_eq!(
        verified.lapses_at_ms(),
        verified.expires_at_ms + TOKEN_LEEWAY_MS
    );
    let why = refusal_at(&keys, &token, Role::Agent, verified.lapses_at_ms());
    assert!(why.contains("expired"), "{why}");
    assert_eq!(kept(&keys), 0);
    // The same token as a page token is checked in full (here: no key), never by the verdict.
    let keys = key_set();
    keys.verify_cached(&token, Role::Agent, now).unwrap();
    keys.lock().keys = Arc::new(KeySet::default());
    assert!(refusal(&keys, &token, Role::Page).contains("not one the bridge has"));
}

const TOKEN_LEEWAY_MS: u64 = crate::limits::TOKEN_LEEWAY.as_millis() as u64;

fn refusal_at(keys: &TokenKeys, token: &str, role: Role, now_ms: u64) -> String {
    match keys.verify_cached(token, role, now_ms) {
        Err(Unverified::Refused(why)) => why.to_string(),
        other => panic!("refused, not {other:?}"),
    }
}

#[test]
fn a_change_of_keys_forgets_every_verdict_and_the_same_keys_keep_them() {
    let keys = key_set();
    let token = agent_token("alice");
    let now = crate::ids::now_unix_ms();
    keys.verify_cached(&token, Role::Agent, now).unwrap();
    // The same keys again (a refetch that brought nothing new): the verdicts stay.
    let same = keys.lock().keys.as_ref().clone();
    keys.set_keys(same);
    assert_eq!(kept(&keys), 1);
    // The EdDSA key removed: its token is refused at once.
    let without: Vec<Jwk> = signing_keys()
        .into_iter()
        .filter(|(alg, _, _)| *alg != Algorithm::EdDSA)
        .map(|(_, _, jwk)| jwk)
        .collect();
    let without = KeySet::from_json(&serde_json::to_string(&JwkSet { keys: without }).unwrap());
    keys.set_keys(without.unwrap());
    assert_eq!(kept(&keys), 0);
    assert!(refusal_at(&keys, &token, Role::Agent, now).contains("not one the bridge has"));
}

#[test]
fn refusals_and_page_tokens_are_never_kept() {
    let keys = key_set();
    let now = crate::ids::now_unix_ms();
    let good = agent_token("alice");
    let mut parts: Vec<&str> = good.split('.').collect();
    let forged_payload = agent_token("mallory");
    parts[1] = forged_payload.split('.').nth(1).unwrap();
    let forged = parts.join(".");
    let expired = json!({"sub": "a", "role": "agent", "aud": "client-tools", "exp": now_s() - 61});
    let bad = [
        forged,
        mint_with(Algorithm::EdDSA, "EdDSA", &expired),
        mint_with(Algorithm::EdDSA, "EdDSA", &claims("page", "alice")),
        mint_with(Algorithm::EdDSA, "nobody", &claims("agent", "alice")),
        "x".repeat(9000),
    ];
    // Each twice: refused both times, none kept.
    for token in bad.iter().chain(bad.iter()) {
        refusal_at(&keys, token, Role::Agent, now);
    }
    assert_eq!(kept(&keys), 0);
    // A page token is checked once per connect: not kept either.
    let page = mint_with(Algorithm::EdDSA, "EdDSA", &claims("page", "alice"));
    keys.verify_cached(&page, Role::Page, now).unwrap();
    assert_eq!(kept(&keys), 0);
    // A token verified on the clock but lapsed at the time given is not kept.
    keys.verify_cached(&good, Role::Agent, now + 3_600_000)
        .unwrap();
    assert_eq!(kept(&keys), 0);
}

#[test]
fn the_verdicts_never_outgrow_their_bound_and_keep_the_newest_and_those_in_use() {
    use super::verdicts::{Cached, Verdicts};
    use crate::limits::MAX_VERIFIED_AGENT_TOKENS;
    let verified = |n: usize| Verified {
        sub: format!("user-{n}"),
        expires_at_ms: 1_000_000,
    };
    let mut verdicts = Verdicts::default();
    let hot = super::verdicts::digest("a token used on every request");
    verdicts.insert(hot, verified(0));
    for n in 1..=3 * MAX_VERIFIED_AGENT_TOKENS {
        verdicts.insert(super::verdicts::digest(&format!("token {n}")), verified(n));
        assert!(verdicts.len() <= MAX_VERIFIED_AGENT_TOKENS, "{n}");
        if n % 100 == 0 {
            assert_eq!(verdicts.get(&hot, 0), Cached::InDate(verified(0)), "{n}");
        }
    }
    assert!(verdicts.len() >= MAX_VERIFIED_AGENT_TOKENS / 2);
    let newest = super::verdicts::digest(&format!("token {}", 3 * MAX_VERIFIED_AGENT_TOKENS));
    assert_eq!(
        verdicts.get(&newest, 0),
        Cached::InDate(verified(3 * MAX_VERIFIED_AGENT_TOKENS))
    );
    assert_eq!(
        verdicts.get(&super::verdicts::digest("token 1"), 0),
        Cached::Unknown
    );
    // A small bound, the same rule: never more than it.
    let mut small = Verdicts::with_capacity(4);
    for n in 0..50 {
        small.insert(super::verdicts::digest(&n.to_string()), verified(n));
        assert!(small.len() <= 4);
    }
    // Past its lapse, a verdict is refused and dropped.
    let lapse = verified(0).lapses_at_ms();
    assert_eq!(verdicts.get(&hot, lapse - 1), Cached::InDate(verified(0)));
    assert_eq!(verdicts.get(&hot, lapse), Cached::Lapsed);
    assert_eq!(verdicts.get(&hot, 0), Cached::Unknown);
}
