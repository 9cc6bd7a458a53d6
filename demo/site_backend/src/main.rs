//! The demo's site backend — **the site backend's job, shown here for the demo only**: a real site
//! mints its tokens after its own login, for the user who logged in (docs/deploy.md, *A site with
//! many users*). This one signs for two made-up users, `alice` and `bob`, without any login.
//!
//! At start it makes a fresh HS256 key, writes the bridge's key set (a JWK Set with that key) to
//! `--keys-out`, and serves `GET /token?user=alice&role=page|agent` on `--listen`: a JWT (`sub`,
//! `role`, `aud: client-tools`, `exp` ten minutes on), readable by the demo site's origin
//! (`--site-origin`) only. `cargo xtask demo` starts it, then the bridge with `--token-keys`.
//!
//! `cargo run -p client-tools-demo-site -- --listen 127.0.0.1:8788
//!  --site-origin http://127.0.0.1:8787 --keys-out target/demo/token-keys.json`

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use base64::Engine;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::json;

/// The users this demo backend signs for (a real site: the one who logged in).
const USERS: [&str; 2] = ["alice", "bob"];
/// How long a token it mints is valid; the page's SDK refreshes it before then.
const LIFETIME_SECS: u64 = 600;
const KID: &str = "demo-site";

struct Backend {
    key: EncodingKey,
    site_origin: HeaderValue,
}

fn argument(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1).cloned()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listen: SocketAddr = argument("--listen")
        .unwrap_or_else(|| "127.0.0.1:8788".into())
        .parse()?;
    let site_origin = argument("--site-origin").unwrap_or_else(|| "http://127.0.0.1:8787".into());
    let keys_out =
        PathBuf::from(argument("--keys-out").unwrap_or_else(|| "token-keys.json".into()));
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| format!("no random bytes: {e}"))?;
    let k = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret);
    let key_set = json!({"keys": [{"kty": "oct", "kid": KID, "alg": "HS256", "k": k}]});
    if let Some(folder) = keys_out.parent() {
        std::fs::create_dir_all(folder)?;
    }
    write_private(&keys_out, &key_set.to_string())?;
    let backend = Arc::new(Backend {
        key: EncodingKey::from_secret(&secret)?,
        site_origin: HeaderValue::from_str(&site_origin)?,
    });
    let app = Router::new()
        .route("/token", get(token))
        .with_state(backend);
    let listener = tokio::net::TcpListener::bind(listen).await?;
    eprintln!(
        "demo site backend (the site's job, for the demo only) on http://{listen}/token: signs \
         page and agent tokens for {USERS:?}; the bridge's key set is {}",
        keys_out.display()
    );
    axum::serve(listener, app).await?;
    Ok(())
}

/// `GET /token?user=…&role=page|agent`: a token for one of the demo's users.
async fn token(
    State(backend): State<Arc<Backend>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let user = query.get("user").map(String::as_str).unwrap_or("alice");
    let role = query.get("role").map(String::as_str).unwrap_or("page");
    let cors = [(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        backend.site_origin.clone(),
    )];
    if !USERS.contains(&user) || !["page", "agent"].contains(&role) {
        let why = format!("this demo backend signs for {USERS:?}, roles page and agent only");
        return (StatusCode::BAD_REQUEST, cors, why).into_response();
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = json!({"sub": user, "role": role, "aud": "client-tools", "iat": now,
        "exp": now + LIFETIME_SECS});
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(KID.into());
    match encode(&header, &claims, &backend.key) {
        Ok(token) => {
            eprintln!("demo site backend: a {role} token for {user}");
            (cors, token).into_response()
        }
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, cors, error.to_string()).into_response(),
    }
}

/// Writes `text` readable by this user only (it holds the signing key).
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    options.open(path)?.write_all(text.as_bytes())
}
