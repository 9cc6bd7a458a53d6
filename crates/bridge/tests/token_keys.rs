//! Signed tokens' keys (SPEC §13): a key file the bridge cannot use stops the shipped binary with
//! exit 2 naming the key, so does `--page-token` beside signed tokens; and `--token-jwks-url` —
//! a real local HTTP server — that hangs, answers 10 MB, or answers junk leaves the bridge with the
//! keys it had, and says so.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use client_tools_bridge::tokens::{Role, TokenKeys};
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
    Hang,
    Huge,
    Junk,
}

struct JwksServer {
    address: SocketAddr,
    answer: Arc<std::sync::Mutex<Answer>>,
    requests: Arc<AtomicUsize>,
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
        address,
        answer,
        requests,
    }
}

fn token(kid: &str) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(kid.into());
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let claims = json!({"sub": "alice", "role": "page", "aud": "client-tools", "exp": exp});
    encode(&header, &claims, &EncodingKey::from_secret(SECRET).unwrap()).unwrap()
}

#[tokio::test]
async fn a_jwks_url_that_hangs_floods_or_answers_junk_leaves_the_keys_the_bridge_had() {
    let server = jwks_server().await;
    let url = format!("http://{}/jwks", server.address);
    let keys = TokenKeys::none("client-tools".into(), None)
        .with_jwks_url(&url)
        .await
        .expect("the first fetch brings the keys");
    assert_eq!(server.requests.load(Ordering::SeqCst), 1);
    assert!(keys.verify(&token("k1"), Role::Page).await.is_ok());
    for bad in [Answer::Hang, Answer::Huge, Answer::Junk] {
        *server.answer.lock().unwrap() = bad;
        // A fetch again (as for a token naming an unknown key) fails...
        let before = server.requests.load(Ordering::SeqCst);
        let started = Instant::now();
        keys.refetch_now().await;
        assert_eq!(server.requests.load(Ordering::SeqCst), before + 1);
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the fetch is bounded in time"
        );
        // ...and the keys the bridge had still verify.
        assert!(keys.verify(&token("k1"), Role::Page).await.is_ok());
    }
    // At most one fetch a minute for unknown kids, whatever the tokens name.
    *server.answer.lock().unwrap() = Answer::Keys;
    let before = server.requests.load(Ordering::SeqCst);
    for _ in 0..5 {
        let refused = keys
            .verify(&token("unknown"), Role::Page)
            .await
            .unwrap_err();
        assert!(refused.to_string().contains("kid"), "{refused}");
    }
    assert!(server.requests.load(Ordering::SeqCst) <= before + 1);
}

#[tokio::test]
async fn a_jwks_url_unusable_at_start_is_an_error() {
    let server = jwks_server().await;
    *server.answer.lock().unwrap() = Answer::Junk;
    let url = format!("http://{}/jwks", server.address);
    let error = TokenKeys::none("client-tools".into(), None)
        .with_jwks_url(&url)
        .await
        .unwrap_err();
    assert!(error.contains("--token-jwks-url"), "{error}");
    *server.answer.lock().unwrap() = Answer::Huge;
    let error = TokenKeys::none("client-tools".into(), None)
        .with_jwks_url(&url)
        .await
        .unwrap_err();
    assert!(error.contains("over 262144 bytes"), "{error}");
}
