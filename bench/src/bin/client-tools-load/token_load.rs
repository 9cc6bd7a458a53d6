//! `--token-bench N`: what signed tokens (SPEC §13) cost the bridge, against the static page token,
//! in one run on one machine:
//! - connects: N pages connect and finish their handshake (at most `--connect-parallel` at once),
//!   each with its own token — the static one, an EdDSA JWT, an RS256 JWT: connects/s and the
//!   bridge's CPU per connect;
//! - a flood: N connects with a bad signature (refused) while good pages keep connecting: the good
//!   pages' connects/s during the flood, and the bridge's CPU per refused connect;
//! - calls: N/2 users with two tabs each (EdDSA); `echo` calls for `--seconds` by session
//!   (`/api/sessions/{id}/call`) and by user (`/api/users/{sub}/call`, the tab chosen as on
//!   `/mcp?user=`), then the same over MCP (stateless 2026-07-28 `tools/call`s): by session
//!   (`/mcp?session={id}`, the operator's token), by user with a signed agent token (`/mcp`) and by
//!   user with the operator's (`/mcp?user={sub}`): the bridge's CPU per call of each.
//!
//! The tokens are minted here as a site's backend would, with the bridge's test keys
//! (crates/bridge/tests/fixtures: test keys only, worth nothing).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use client_tools_core::connect::{encode_connect, ConnectParams};
use futures_util::{SinkExt, StreamExt};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;

use crate::bridge_process::BridgeProcess;
use crate::call_load::Target;
use crate::process_metrics::cpu_time;
use crate::simulated_page::SimulatedPage;
use crate::{call_load, Cli, HANDSHAKE_TIMEOUT};

/// The operator's agent token the HTTP client sends (`--token` of the tool, or this).
pub const OPERATOR: &str = "token-bench-operator";

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/bridge/tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A signing key and its public JWK (kid = the algorithm's name).
struct Signer {
    algorithm: Algorithm,
    key: EncodingKey,
}

impl Signer {
    fn new(algorithm: Algorithm) -> Self {
        let key = match algorithm {
            Algorithm::EdDSA => EncodingKey::from_ed_pem(&fixture("ed25519-test-key.pem")),
            _ => EncodingKey::from_rsa_pem(&fixture("rsa-test-key.pem")),
        };
        Self {
            algorithm,
            key: key.expect("a fixture key"),
        }
    }

    fn kid(&self) -> String {
        format!("{:?}", self.algorithm)
    }

    fn jwk(&self) -> Jwk {
        let mut jwk = Jwk::from_encoding_key(&self.key, self.algorithm).expect("a public JWK");
        jwk.common.key_id = Some(self.kid());
        jwk
    }

    /// A page's token for `sub`.
    fn mint(&self, sub: &str) -> String {
        self.mint_for(sub, "page")
    }

    /// A token for `sub` with `role` (`page`, or `agent`: an agent acting for that user).
    fn mint_for(&self, sub: &str, role: &str) -> String {
        let exp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 3600;
        let mut header = Header::new(self.algorithm);
        header.kid = Some(self.kid());
        let claims = json!({"sub": sub, "role": role, "aud": "client-tools", "exp": exp});
        encode(&header, &claims, &self.key).expect("a token")
    }
}

/// The key set of both signers, written for `--token-keys`.
fn key_file(signers: &[&Signer]) -> PathBuf {
    let keys = signers.iter().map(|s| s.jwk()).collect();
    let path = std::env::temp_dir().join(format!(
        "client-tools-token-bench-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, serde_json::to_string(&JwkSet { keys }).unwrap()).unwrap();
    path
}

/// `count` pages connect (and finish their handshake) with `token(i)`, `parallel` at a time; each
/// is closed once ready. Returns the seconds it took.
async fn connect_pages(
    ws_url: &str,
    count: usize,
    parallel: usize,
    token: impl Fn(usize) -> Option<String>,
) -> Result<f64, String> {
    let pacing = Arc::new(Semaphore::new(parallel.max(1)));
    let started = Instant::now();
    let mut pages = JoinSet::new();
    for index in 0..count {
        let (url, token, pacing) = (ws_url.to_owned(), token(index), pacing.clone());
        pages.spawn(async move {
            let _permit = pacing.acquire_owned().await.map_err(|e| e.to_string())?;
            tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
                let mut page = SimulatedPage::connect(&url, token.as_deref()).await?;
                page.handshake().await
            })
            .await
            .map_err(|_| "a page's handshake timed out".to_owned())?
        });
    }
    while let Some(done) = pages.join_next().await {
        done.map_err(|e| e.to_string())??;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// One connect with a bad signature: `true` when the bridge refused it (`-32001`).
async fn bad_connect(ws_url: &str, token: &str) -> bool {
    let Ok((mut socket, _)) = tokio_tungstenite::connect_async(ws_url).await else {
        return false;
    };
    let params = ConnectParams {
        token: Some(token.to_owned()),
        resume_secret: None,
    };
    if socket
        .send(Message::text(encode_connect(&params)))
        .await
        .is_err()
    {
        return false;
    }
    while let Some(Ok(message)) = socket.next().await {
        if let Message::Text(text) = message {
            let answer: Value = serde_json::from_str(text.as_str()).unwrap_or_default();
            return answer["error"]["code"] == -32001;
        }
    }
    false
}

/// `count` bad-signature connects, `parallel` at a time: how many were refused.
async fn flood(ws_url: &str, token: &str, count: usize, parallel: usize) -> usize {
    let pacing = Arc::new(Semaphore::new(parallel.max(1)));
    let refused = Arc::new(AtomicUsize::new(0));
    let mut connects = JoinSet::new();
    for _ in 0..count {
        let (url, token, pacing, refused) = (
            ws_url.to_owned(),
            token.to_owned(),
            pacing.clone(),
            refused.clone(),
        );
        connects.spawn(async move {
            let _permit = pacing.acquire_owned().await;
            if bad_connect(&url, &token).await {
                refused.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    while connects.join_next().await.is_some() {}
    refused.load(Ordering::Relaxed)
}

/// A bad signature: alice's claims under the signature of another token's claims.
fn forged(signer: &Signer) -> String {
    let good = signer.mint("alice");
    let other = signer.mint("mallory");
    let (head_and_claims, _) = good.rsplit_once('.').unwrap();
    let (_, other_signature) = other.rsplit_once('.').unwrap();
    format!("{head_and_claims}.{other_signature}")
}

async fn start(
    cli: &Cli,
    http: &reqwest::Client,
    keys: Option<&Path>,
) -> Result<BridgeProcess, String> {
    let mut args = cli.bridge_args();
    match keys {
        Some(keys) => {
            args.extend(["--token-keys".into(), keys.display().to_string()]);
            args.extend(["--agent-token".into(), OPERATOR.into()]);
            BridgeProcess::start(&cli.bridge_bin, None, &args, http).await
        }
        None => BridgeProcess::start(&cli.bridge_bin, Some(OPERATOR), &args, http).await,
    }
}

fn ws(bridge: &BridgeProcess) -> String {
    format!("{}/ws", bridge.base_url().replacen("http://", "ws://", 1))
}

/// The whole token benchmark: its results as JSON.
pub async fn run(
    cli: &Cli,
    count: usize,
    call_time: Duration,
    http: &reqwest::Client,
) -> Result<Value, String> {
    let eddsa = Signer::new(Algorithm::EdDSA);
    let rs256 = Signer::new(Algorithm::RS256);
    let keys = key_file(&[&eddsa, &rs256]);
    let parallel = cli.connect_parallel;
    let mut connects = Vec::new();
    for (name, signer) in [
        ("static page token", None),
        ("EdDSA", Some(&eddsa)),
        ("RS256", Some(&rs256)),
    ] {
        let bridge = start(cli, http, signer.map(|_| keys.as_path())).await?;
        let before = cpu_time(bridge.pid())?;
        let tokens: Vec<Option<String>> = (0..count)
            .map(|i| match signer {
                Some(signer) => Some(signer.mint(&format!("user-{i}"))),
                None => Some(OPERATOR.to_owned()),
            })
            .collect();
        let seconds = connect_pages(&ws(&bridge), count, parallel, |i| tokens[i].clone()).await?;
        let cpu = cpu_time(bridge.pid())?.saturating_sub(before);
        let row = json!({
            "auth": name, "connects": count, "seconds": seconds,
            "connects_per_sec": count as f64 / seconds,
            "bridge_cpu_us_per_connect": cpu.as_secs_f64() * 1e6 / count as f64,
        });
        eprintln!("  connects, {name}: {row}");
        connects.push(row);
        bridge.stop().await;
    }

    // The flood: bad signatures while good pages connect.
    let bridge = start(cli, http, Some(&keys)).await?;
    let ws_url = ws(&bridge);
    let bad = forged(&eddsa);
    let before = cpu_time(bridge.pid())?;
    let refused_alone = flood(&ws_url, &bad, count, parallel).await;
    let cpu_bad = cpu_time(bridge.pid())?.saturating_sub(before);
    let flooding = {
        let (url, bad) = (ws_url.clone(), bad.clone());
        tokio::spawn(async move { flood(&url, &bad, count, parallel).await })
    };
    let (mut good, started) = (0usize, Instant::now());
    while !flooding.is_finished() {
        let token = eddsa.mint(&format!("good-{good}"));
        connect_pages(&ws_url, 1, 1, |_| Some(token.clone())).await?;
        good += 1;
    }
    let during = started.elapsed().as_secs_f64();
    let refused_during = flooding.await.map_err(|e| e.to_string())?;
    bridge.stop().await;
    let flood_row = json!({
        "bad_connects": count, "refused_alone": refused_alone, "refused_during": refused_during,
        "bridge_cpu_us_per_refused_connect": cpu_bad.as_secs_f64() * 1e6 / count as f64,
        "good_connects_during_flood": good,
        "good_connects_per_sec_during_flood": good as f64 / during,
    });
    eprintln!("  flood: {flood_row}");

    // Calls by session and by user: N/2 users, two tabs each.
    let bridge = start(cli, http, Some(&keys)).await?;
    let ws_url = ws(&bridge);
    let users = (count / 2).max(1);
    let mut fleet = crate::fleet::Fleet::open_with_tokens(
        &ws_url,
        (0..users * 2)
            .map(|i| eddsa.mint(&format!("user-{}", i % users)))
            .collect(),
        parallel,
        HANDSHAKE_TIMEOUT,
    );
    fleet.all_ready().await?;
    let by_session: Arc<[Target]> = fleet
        .sessions()
        .iter()
        .map(|id| Target::Api(format!("sessions/{id}")))
        .collect();
    let by_user: Arc<[Target]> = (0..users)
        .map(|u| Target::Api(format!("users/user-{u}")))
        .collect();
    // The same calls over MCP. Stateless (2026-07-28): each call is one request that rmcp serves
    // with a fresh agent, bound by that request alone, as a `/api` call is; what differs from `/api`
    // is rmcp (JSON-RPC, its header checks, which look the tool up) on top of the same routing.
    let mcp = |query: String, bearer: Option<String>| Target::Mcp { query, bearer };
    let mcp_by_session: Arc<[Target]> = fleet
        .sessions()
        .iter()
        .map(|id| mcp(format!("?session={id}"), None))
        .collect();
    // One agent token per user, minted once (as an agent keeps its token). The bridge checks its
    // signature on every request (`verify_cached` caches the keys, not the verdict), unlike a
    // page's, checked once per connect: that check is part of this row's cost.
    let mcp_by_signed_user: Arc<[Target]> = (0..users)
        .map(|u| {
            mcp(
                String::new(),
                Some(eddsa.mint_for(&format!("user-{u}"), "agent")),
            )
        })
        .collect();
    let mcp_by_user: Arc<[Target]> = (0..users)
        .map(|u| mcp(format!("?user=user-{u}"), None))
        .collect();
    let mut calls = Vec::new();
    for (name, targets) in [
        ("by session", by_session),
        ("by user (two tabs)", by_user),
        ("MCP by session (?session=, operator token)", mcp_by_session),
        ("MCP by user (signed agent token)", mcp_by_signed_user),
        ("MCP by user (?user=, operator token)", mcp_by_user),
    ] {
        let before = cpu_time(bridge.pid())?;
        let load = call_load::drive_targets(
            http,
            &bridge.base_url(),
            targets,
            cli.concurrency,
            call_time,
            cli.payload_bytes,
        )
        .await;
        let cpu = cpu_time(bridge.pid())?.saturating_sub(before);
        if load.errors > 0 {
            return Err(format!(
                "calls {name}: {} errors: {:?}",
                load.errors, load.error_samples
            ));
        }
        let row = json!({
            "route": name, "calls": load.calls,
            "calls_per_sec": load.calls as f64 / load.elapsed.as_secs_f64(),
            "bridge_cpu_us_per_call": cpu.as_secs_f64() * 1e6 / load.calls.max(1) as f64,
        });
        eprintln!("  calls, {name}: {row}");
        calls.push(row);
    }
    drop(fleet);
    bridge.stop().await;
    let _ = std::fs::remove_file(&keys);
    Ok(json!({"connects": connects, "flood": flood_row, "calls": calls}))
}
