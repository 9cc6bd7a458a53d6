//! Signed tokens' keys (SPEC §13): a key file the bridge cannot use stops the shipped binary with
//! exit 2 naming the key, so does `--page-token` beside signed tokens; and `--token-jwks-url` — a
//! real local HTTP server, the keys given the time (a minute is an addition, not a sleep): a key
//! rotated at the site verifies after exactly one fetch, a burst of tokens naming unknown keys
//! fetches once a minute, a fetch that hangs, answers 10 MB, or answers junk leaves the bridge with
//! the keys it had, and it says so; an agent token of a rotated key is served on `/api` once its
//! key is fetched; and an agent token whose verdict is kept is refused once a refetch removed its
//! key.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use client_tools_bridge::limits::JWKS_REFETCH_EVERY;
use client_tools_bridge::tokens::{Role, TokenKeys, TokenRefusal, Verified};
use client_tools_bridge::{Bridge, BridgeConfig};
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::json;

const GOOD_SET: &str = r#"{"keys": [{"kty": "oct", "kid": "k1", "alg": "HS256",
    "k": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"}]}"#;
const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

fn temp_file(name: &str, text: &str) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("client-tools-keys-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

/// The bridge with `args`: it must stop before serving (one still running after the deadline is
/// killed and fails the test).
fn bridge_stopping(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_client-tools-bridge"))
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env_remove("CLIENT_TOOLS_PAGE_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "the bridge kept running: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_bad_key_file_stops_the_bridge_naming_the_key() {
    let file = temp_file(
        "bad.json",
        r#"{"keys": [{"kty": "oct", "kid": "fine", "k": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"},
                     {"kty": "EC", "kid": "broken-ec", "crv": "P-256", "x": "AA", "y": "AA"}]}"#,
    );
    let output = bridge_stopping(&["--token-keys", file.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("key 'broken-ec'"), "{stderr}");
    assert!(stderr.contains(file.to_str().unwrap()), "{stderr}");
}

#[test]
fn a_static_page_token_beside_signed_tokens_stops_the_bridge() {
    let file = temp_file("good.json", GOOD_SET);
    let output = bridge_stopping(&["--token-keys", file.to_str().unwrap(), "--page-token", "p"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--page-token is refused with signed tokens"),
        "{stderr}"
    );
}

/// What the JWKS server answers, switched by the test.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Keys,
    /// The key set after a rotation: `k1` and a new `k2`.
    Rotated,
    Hang,
    Huge,
    Junk,
}

struct JwksServer {
    url: String,
    answer: Arc<std::sync::Mutex<Answer>>,
    requests: Arc<AtomicUsize>,
}

impl JwksServer {
    fn answer(&self, answer: Answer) {
        *self.answer.lock().unwrap() = answer;
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

async fn jwks_server() -> JwksServer {
    let answer = Arc::new(std::sync::Mutex::new(Answer::Keys));
    let requests = Arc::new(AtomicUsize::new(0));
    let (a, r) = (answer.clone(), requests.clone());
    let app = Router::new().route(
        "/jwks",
        get(move || {
            let (a, r) = (a.clone(), r.clone());
            async move {
                r.fetch_add(1, Ordering::SeqCst);
                let now = *a.lock().unwrap();
                match now {
                    Answer::Keys => GOOD_SET.to_owned(),
                    Answer::Rotated => ROTATED_SET.to_owned(),
                    Answer::Hang => std::future::pending().await,
                    Answer::Huge => "x".repeat(10 * 1024 * 1024),
                    Answer::Junk => "<html>not a key set</html>".to_owned(),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    JwksServer {
        url: format!("http://{address}/jwks"),
        answer,
        requests,
    }
}

/// `k1` of [`GOOD_SET`] and `k2`, added by a rotation, with a secret of its own.
const ROTATED_SET: &str = r#"{"keys": [{"kty": "oct", "kid": "k1", "alg": "HS256",
    "k": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"},
    {"kty": "oct", "kid": "k2", "alg": "HS256",
    "k": "cm90YXRlZC1zZWNyZXQtcm90YXRlZC1zZWNyZXQtMzI"}]}"#;
const ROTATED_SECRET: &[u8] = b"rotated-secret-rotated-secret-32";

/// A token of `role` for alice, signed as the key `kid` of [`GOOD_SET`] or [`ROTATED_SET`].
fn token_for(kid: &str, role: &str) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(kid.into());
    let claims =
        json!({"sub": "alice", "role": role, "aud": "client-tools", "exp": now_ms() / 1000 + 600});
    let secret = if kid == "k2" { ROTATED_SECRET } else { SECRET };
    encode(&header, &claims, &EncodingKey::from_secret(secret).unwrap()).unwrap()
}

fn token(kid: &str) -> String {
    token_for(kid, "page")
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// [`JWKS_REFETCH_EVERY`] in ms: the tests hand the keys the time, a minute is one addition.
const EVERY_MS: u64 = JWKS_REFETCH_EVERY.as_millis() as u64;

/// The keys of `server`'s URL, fetched once at start, again at most once a minute.
async fn keys_of(server: &JwksServer) -> TokenKeys {
    TokenKeys::none("client-tools".into(), None)
        .with_jwks_url(&server.url, JWKS_REFETCH_EVERY)
        .await
        .expect("the first fetch brings the keys")
}

fn refused_for_its_kid(verified: Result<Verified, TokenRefusal>) {
    let refused = verified.unwrap_err();
    assert!(refused.to_string().contains("kid"), "{refused}");
}

#[tokio::test]
async fn a_rotated_key_verifies_after_exactly_one_fetch_once_the_minute_is_over() {
    let server = jwks_server().await;
    let keys = keys_of(&server).await;
    let start = now_ms();
    assert_eq!(server.requests(), 1);
    server.answer(Answer::Rotated);
    // Within the minute of the first fetch, `k2` is unknown and nothing is fetched.
    refused_for_its_kid(keys.verify(&token("k2"), Role::Page, start + 1_000).await);
    assert_eq!(server.requests(), 1);
    // A minute on, the token naming `k2` has the key set fetched once, and verifies.
    let later = start + EVERY_MS;
    let verified = keys.verify(&token("k2"), Role::Page, later).await.unwrap();
    assert_eq!(verified.sub, "alice");
    assert_eq!(server.requests(), 2);
    // `k2` is at hand now (so is `k1`): no fetch for it, however late.
    for kid in ["k2", "k1"] {
        assert!(keys
            .verify(&token(kid), Role::Page, later + 10 * EVERY_MS)
            .await
            .is_ok());
    }
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn a_burst_of_unknown_kids_fetches_once_a_minute() {
    let server = jwks_server().await;
    let keys = keys_of(&server).await;
    let due = now_ms() + EVERY_MS;
    // Twenty tokens, each naming a key nobody has, at once and through the following minute.
    let burst: Vec<String> = (0..20).map(|n| token(&format!("unknown-{n}"))).collect();
    let at_once = burst.iter().map(|t| keys.verify(t, Role::Page, due));
    for verified in futures_util::future::join_all(at_once).await {
        refused_for_its_kid(verified);
    }
    for (n, t) in burst.iter().enumerate() {
        let at = due + n as u64 * (EVERY_MS - 1) / 19;
        refused_for_its_kid(keys.verify(t, Role::Page, at).await);
    }
    assert_eq!(
        server.requests(),
        2,
        "the start's fetch and one for the burst"
    );
    // The next minute, the next unknown kid fetches again.
    refused_for_its_kid(keys.verify(&burst[0], Role::Page, due + EVERY_MS).await);
    assert_eq!(server.requests(), 3);
}

/// What `tracing` writes on this thread, captured (as the crate's own `trace_capture`).
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// The lines written since the last call.
    fn take(&self) -> String {
        String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
    }
}

fn capture_trace() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    // A second dispatcher, alive for good: every callsite asks this thread's subscriber, whatever
    // another test's thread met first.
    static SECOND: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
    SECOND.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
    (captured, tracing::subscriber::set_default(subscriber))
}

#[tokio::test]
async fn a_jwks_url_that_hangs_floods_or_answers_junk_leaves_the_keys_the_bridge_had_and_says_so() {
    let (trace, _guard) = capture_trace();
    let server = jwks_server().await;
    server.answer(Answer::Rotated);
    let keys = keys_of(&server).await;
    let mut now = now_ms();
    for (bad, errors) in [
        // The fetch's own timeout or the client's, whichever fires first.
        (
            Answer::Hang,
            &["no whole answer within 5 s", "the request failed"][..],
        ),
        (Answer::Huge, &["the answer is over 262144 bytes"]),
        (Answer::Junk, &["not a JWK Set"]),
    ] {
        server.answer(bad);
        trace.take();
        // A token naming an unknown key, a minute on, has the key set fetched again: it fails...
        now += EVERY_MS;
        let before = server.requests();
        let started = Instant::now();
        refused_for_its_kid(keys.verify(&token("k3"), Role::Page, now).await);
        assert_eq!(server.requests(), before + 1);
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the fetch is bounded in time"
        );
        // ...the bridge says so, naming the URL and why...
        let logged = trace.take();
        let warning = logged
            .lines()
            .find(|line| {
                line.contains("fetching the token key set failed: the keys at hand are kept")
            })
            .unwrap_or_else(|| panic!("no warning in {logged}"));
        assert!(warning.contains("WARN"), "{warning}");
        assert!(warning.contains(&server.url), "{warning}");
        assert!(
            errors.iter().any(|error| warning.contains(error)),
            "{errors:?} in {warning}"
        );
        // ...and the keys it had still verify.
        for kid in ["k1", "k2"] {
            assert!(
                keys.verify(&token(kid), Role::Page, now).await.is_ok(),
                "{kid}"
            );
        }
    }
}

/// An agent route's check (`Checked::AfterKeyRefetch`): a signed agent token naming a key the
/// bridge does not have yet is refused until the JWKS URL has it, then accepted on `/api`.
#[tokio::test]
async fn an_agent_token_of_a_rotated_key_is_accepted_on_api_after_the_refetch() {
    let server = jwks_server().await;
    // No minute between refetches here: the route runs on the clock.
    let keys = TokenKeys::none("client-tools".into(), None)
        .with_jwks_url(&server.url, Duration::ZERO)
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let bridge = Bridge::new(BridgeConfig {
        listen: address,
        token_keys: Some(Arc::new(keys)),
        ..BridgeConfig::default()
    });
    tokio::spawn(async move { bridge.serve(listener).await });
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let sessions = |token: String| {
        http.get(format!("http://{address}/api/sessions"))
            .bearer_auth(token)
            .send()
    };
    let agent = token_for("k2", "agent");
    // The key set has no `k2` yet: fetched again, still without it, the token is refused.
    let refused = sessions(agent.clone()).await.unwrap();
    assert_eq!(refused.status(), 401);
    let why = refused.text().await.unwrap();
    assert!(why.contains("kid"), "{why}");
    assert_eq!(server.requests(), 2);
    // The key rotated at the site: the next request has it fetched, and is served.
    server.answer(Answer::Rotated);
    let served = sessions(agent.clone()).await.unwrap();
    assert_eq!(served.status(), 200);
    assert_eq!(served.text().await.unwrap(), "[]");
    assert_eq!(server.requests(), 3);
    // At hand from now on: no fetch.
    assert_eq!(sessions(agent).await.unwrap().status(), 200);
    assert_eq!(server.requests(), 3);
}

/// An agent token's verdict is kept (its signature is checked once, not on every request), but
/// only with the keys that reached it: a key the site removed refuses its tokens from the refetch
/// that brings the new key set on, verdicts or not.
#[tokio::test]
async fn an_agent_token_of_a_key_removed_at_a_refetch_is_refused_at_once() {
    let server = jwks_server().await;
    server.answer(Answer::Rotated);
    let keys = keys_of(&server).await;
    let now = now_ms();
    let (old, new) = (token_for("k1", "agent"), token_for("k2", "agent"));
    for token in [&old, &new] {
        let verified = keys.verify(token, Role::Agent, now).await.unwrap();
        assert_eq!(verified.sub, "alice");
        // Again, from its verdict.
        assert_eq!(
            keys.verify_cached(token, Role::Agent, now + 1),
            Ok(verified)
        );
    }
    // The site removes `k2`; the bridge fetches the key set again (told of the rotation, or for
    // another token's unknown kid a minute on).
    server.answer(Answer::Keys);
    keys.refetch_if_due(now + EVERY_MS).await;
    assert_eq!(server.requests(), 2);
    refused_for_its_kid(keys.verify(&new, Role::Agent, now + EVERY_MS + 1).await);
    // `k1`'s token, checked again with the new key set, still passes.
    assert!(keys
        .verify(&old, Role::Agent, now + EVERY_MS + 1)
        .await
        .is_ok());
}

#[tokio::test]
async fn a_jwks_url_unusable_at_start_is_an_error() {
    let server = jwks_server().await;
    server.answer(Answer::Junk);
    let error = TokenKeys::none("client-tools".into(), None)
        .with_jwks_url(&server.url, JWKS_REFETCH_EVERY)
        .await
        .unwrap_err();
    assert!(error.contains("--token-jwks-url"), "{error}");
    server.answer(Answer::Huge);
    let error = TokenKeys::none("client-tools".into(), None)
        .with_jwks_url(&server.url, JWKS_REFETCH_EVERY)
        .await
        .unwrap_err();
    assert!(error.contains("over 262144 bytes"), "{error}");
}
