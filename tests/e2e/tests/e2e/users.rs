//! Whose page it is (SPEC §13): signed page and agent tokens, users and their tabs. Pages are raw
//! WebSocket clients here (every frame and close code visible: `raw_page`); agents are the official
//! MCP Python SDK (`python_steps`) and plain HTTP. The tokens are minted as a site's backend
//! would, with a JOSE library (`jsonwebtoken`), from a key set written to a file the bridge loads
//! with `--token-keys` (`BridgeConfig::token_keys`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use client_tools_bridge::tokens::TokenKeys;
use client_tools_bridge::BridgeConfig;
use client_tools_core::connect::ConnectParams;
use client_tools_e2e::raw_page::{ConnectOutcome, RawPage};
use client_tools_e2e::{eventually, python_steps, BridgeOnly};
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::sync::mpsc;

const OPERATOR: &str = "operator-token";
const KID: &str = "site-hs256";
/// The site backend's signing secret (a test's: 32 bytes).
const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

/// The key set the bridge accepts: the site's one HS256 key (written once per test process).
fn key_file() -> &'static PathBuf {
    static FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        use base64::Engine;
        let k = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(SECRET);
        let dir = std::env::temp_dir().join(format!("client-tools-users-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token-keys.json");
        let set = json!({"keys": [{"kty": "oct", "kid": KID, "alg": "HS256", "k": k}]});
        std::fs::write(&path, set.to_string()).unwrap();
        path
    })
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A token as the site's backend mints it: `role`, `sub`, `aud`, `exp` `lifetime_s` from now.
fn mint(role: &str, sub: &str, lifetime_s: i64) -> String {
    let mut header = Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some(KID.into());
    let exp = now_s() as i64 + lifetime_s;
    let claims = json!({"sub": sub, "role": role, "aud": "client-tools", "exp": exp});
    encode(&header, &claims, &EncodingKey::from_secret(SECRET).unwrap()).unwrap()
}

async fn bridge() -> BridgeOnly {
    let keys = TokenKeys::from_file(key_file(), "client-tools".into(), None).unwrap();
    BridgeOnly::start(BridgeConfig {
        agent_token: Some(OPERATOR.into()),
        token_keys: Some(Arc::new(keys)),
        ..BridgeConfig::default()
    })
    .await
}

fn page_params(user: &str) -> ConnectParams {
    ConnectParams {
        token: Some(mint("page", user, 600)),
        resume_secret: None,
    }
}

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}

/// A tab of `user` listing `tools`, answering every call with `"<label>: <tool>"`, reporting
/// itself in front when `in_front`. It runs until the test ends; what is sent on the sender goes to
/// the bridge (the tab's activity reports).
async fn tab(
    ws_url: &str,
    user: &str,
    label: &str,
    tools: Value,
    in_front: bool,
) -> (String, mpsc::Sender<Value>) {
    let mut page = RawPage::connect_with_tools(ws_url, &page_params(user), tools).await;
    let id = page.id().to_owned();
    page.send_json(&activity(in_front)).await;
    let label = label.to_owned();
    let (send, mut to_send) = mpsc::channel::<Value>(8);
    tokio::spawn(async move {
        loop {
            let frame = tokio::select! {
                frame = page.next_json() => frame,
                Some(frame) = to_send.recv() => {
                    page.send_json(&frame).await;
                    continue;
                }
            };
            let Some(frame) = frame else { continue };
            if frame["method"] == "tools/call" {
                let text = format!("{label}: {}", frame["params"]["name"].as_str().unwrap());
                let result = json!({"content": [{"type": "text", "text": text}]});
                page.reply(&frame, result).await;
            } else if frame["method"] == "ping" {
                page.reply(&frame, json!({})).await;
            }
        }
    });
    (id, send)
}

/// The page's report of its visibility and focus (as the SDK sends it).
fn activity(in_front: bool) -> Value {
    json!({"jsonrpc": "2.0", "method": "clienttools/activity",
        "params": {"visible": in_front, "focused": in_front}})
}

struct Tabs {
    board: String,
    cart: String,
    bob: String,
    senders: Vec<mpsc::Sender<Value>>,
}

/// Alice's two tabs (the board in front, the cart behind) and Bob's one; once all three listed
/// their tools and reported their activity.
async fn alice_and_bob(bridge: &BridgeOnly) -> Tabs {
    let board = tool("read_board", "The board");
    let note = tool("note", "Adds a note");
    let (alice_board, s1) = tab(
        &bridge.ws_url,
        "alice",
        "alice-board",
        json!([board, note]),
        true,
    )
    .await;
    let cart = tool("read_cart", "The cart");
    let (alice_cart, s2) = tab(
        &bridge.ws_url,
        "alice",
        "alice-cart",
        json!([cart, note]),
        false,
    )
    .await;
    let secret = tool("bobs_secret", "Bob's own");
    let (bob, s3) = tab(&bridge.ws_url, "bob", "bob", json!([secret]), true).await;
    // Listed, and the tabs in front seen in front (a report of "behind" changes nothing).
    eventually("three tabs listed", || {
        [(&alice_board, true), (&alice_cart, false), (&bob, true)]
            .iter()
            .all(|(id, in_front)| {
                bridge
                    .bridge
                    .session(id)
                    .is_some_and(|s| s.has_listed_tools() && s.activity().in_front() == *in_front)
            })
    })
    .await;
    Tabs {
        board: alice_board,
        cart: alice_cart,
        bob,
        senders: vec![s1, s2, s3],
    }
}

fn listed_names(step: &Value) -> Vec<String> {
    let mut names: Vec<String> = step["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn the_python_sdk_lists_and_calls_two_tabs_of_one_user_and_never_sees_the_other_user() {
    let bridge = bridge().await;
    let Tabs {
        board, cart, bob, ..
    } = alice_and_bob(&bridge).await;
    let steps = json!([
        {"list": true},
        {"call": "read_cart"},
        {"call": "read_board"},
        {"call": "note"},
        {"call": "note", "meta": {"clienttools/session": cart}},
        {"call": "bobs_secret"},
        {"call": "note", "meta": {"clienttools/session": bob}},
    ]);
    let alice_agent = mint("agent", "alice", 600);
    let operator_url = format!("{}/mcp?user=alice", bridge.base_url);
    let scoped_url = format!("{}/mcp", bridge.base_url);
    for revision in ["2025-11-25", "2026-07-28"] {
        for (url, token) in [
            (&operator_url, OPERATOR),
            (&scoped_url, alice_agent.as_str()),
        ] {
            let out = python_steps::run(url, token, revision, None, &steps).await;
            assert_eq!(out.len(), 7, "{revision} {url}: {out:?}");
            assert_eq!(listed_names(&out[0]), ["note", "read_board", "read_cart"]);
            let note = out[0]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "note")
                .unwrap();
            // The tabs offering it, the one in front first.
            assert_eq!(
                note["_meta"]["clienttools/sessions"],
                json!([board, cart]),
                "{note}"
            );
            assert_eq!(out[1]["text"], "alice-cart: read_cart", "{out:?}");
            assert_eq!(out[2]["text"], "alice-board: read_board", "{out:?}");
            // A tool both tabs offer runs on the one in front, or on the one the call names.
            assert_eq!(out[3]["text"], "alice-board: note", "{out:?}");
            assert_eq!(out[4]["text"], "alice-cart: note", "{out:?}");
            // Bob's tool and Bob's tab are not there at all.
            assert_eq!(out[5]["isError"], true, "{out:?}");
            assert!(out[5]["text"].as_str().unwrap().contains("no open tab"));
            assert_eq!(out[6]["isError"], true, "{out:?}");
            assert!(!out[6]["text"].as_str().unwrap().contains("bob"));
        }
    }
}

#[tokio::test]
async fn the_tab_in_front_takes_the_call_and_switching_tabs_moves_it() {
    let bridge = bridge().await;
    let tabs = alice_and_bob(&bridge).await;
    let call = |bridge: &BridgeOnly| {
        let url = format!("{}/api/users/alice/call", bridge.base_url);
        async move {
            let answer: Value = reqwest::Client::new()
                .post(url)
                .bearer_auth(OPERATOR)
                .json(&json!({"name": "note"}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            answer["content"][0]["text"].as_str().unwrap().to_owned()
        }
    };
    assert_eq!(call(&bridge).await, "alice-board: note");
    // The person switches to the cart tab: the board is hidden, the cart comes to front.
    tabs.senders[0].send(activity(false)).await.unwrap();
    tabs.senders[1].send(activity(true)).await.unwrap();
    let cart = bridge.bridge.session(&tabs.cart).unwrap();
    let board = bridge.bridge.session(&tabs.board).unwrap();
    eventually("the cart tab in front, the board behind", || {
        cart.activity().in_front() && !board.activity().in_front()
    })
    .await;
    assert_eq!(call(&bridge).await, "alice-cart: note");
    // Alice's sessions, each naming its user; Bob's are not among them.
    let listed: Value = reqwest::Client::new()
        .get(format!("{}/api/users/alice/sessions", bridge.base_url))
        .bearer_auth(OPERATOR)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let users: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["user"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["alice", "alice"]);
}

/// `GET` or `POST` of `path` with `token`: the status and the JSON body (or `Null`).
async fn http(bridge: &BridgeOnly, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
    let url = format!("{}{path}", bridge.base_url);
    let client = reqwest::Client::new();
    let request = match body {
        Some(body) => client.post(url).json(&body),
        None => client.get(url),
    };
    let response = request.bearer_auth(token).send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test]
async fn a_scoped_agent_meets_another_users_sessions_as_unknown_on_every_route() {
    let bridge = bridge().await;
    let Tabs { bob, .. } = alice_and_bob(&bridge).await;
    let alice = mint("agent", "alice", 600);
    // /api: the list, a call by id, a task of Bob's session.
    let (status, listed) = http(&bridge, "/api/sessions", &alice, None).await;
    assert_eq!(status, 200);
    assert!(listed
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["user"] == "alice"));
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    let (status, answer) = http(
        &bridge,
        &format!("/api/sessions/{bob}/call"),
        &alice,
        Some(json!({"name": "bobs_secret"})),
    )
    .await;
    assert_eq!(status, 200);
    let unknown = format!("no page session '{bob}' on this bridge");
    assert!(
        answer["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(&unknown),
        "{answer}"
    );
    // The same words as for a session that never existed: nothing says Bob's exists.
    let (_, never) = http(
        &bridge,
        &format!("/api/sessions/{}/call", "f".repeat(32)),
        &alice,
        Some(json!({"name": "bobs_secret"})),
    )
    .await;
    let never = never["content"][0]["text"]
        .as_str()
        .unwrap()
        .replace(&"f".repeat(32), &bob);
    assert_eq!(answer["content"][0]["text"], never);
    let (status, task) = http(
        &bridge,
        &format!("/api/sessions/{bob}/tasks/x"),
        &alice,
        None,
    )
    .await;
    assert_eq!(status, 400, "{task}");
    // A user's routes for Bob: an empty list, no tab.
    let (_, bobs) = http(&bridge, "/api/users/bob/sessions", &alice, None).await;
    assert_eq!(bobs, json!([]));
    let (_, call) = http(
        &bridge,
        "/api/users/bob/call",
        &alice,
        Some(json!({"name": "bobs_secret"})),
    )
    .await;
    assert_eq!(call["isError"], true, "{call}");
    // /mcp?session=<Bob's>, through the official SDK: answered as a session that does not exist.
    let url = format!("{}/mcp?session={bob}", bridge.base_url);
    let steps = json!([{"call": "bobs_secret"}]);
    let out = python_steps::run(&url, &alice, "2025-11-25", None, &steps).await;
    assert_eq!(out[0]["isError"], true, "{out:?}");
    assert!(
        out[0]["text"].as_str().unwrap().contains(&unknown),
        "{out:?}"
    );
    // ?user=bob: an empty list, and no tab to call.
    let url = format!("{}/mcp?user=bob", bridge.base_url);
    let steps = json!([{"list": true}, {"call": "bobs_secret"}]);
    let out = python_steps::run(&url, &alice, "2026-07-28", None, &steps).await;
    assert_eq!(out[0]["tools"], json!([]), "{out:?}");
    assert_eq!(out[1]["isError"], true, "{out:?}");
    // The operator reaches Bob.
    let (_, answer) = http(
        &bridge,
        &format!("/api/sessions/{bob}/call"),
        OPERATOR,
        Some(json!({"name": "bobs_secret"})),
    )
    .await;
    assert_eq!(answer["content"][0]["text"], "bob: bobs_secret", "{answer}");
}

#[tokio::test]
async fn tokens_of_one_role_are_refused_in_the_other_and_credentials_never_ride_in_urls() {
    let bridge = bridge().await;
    // A page token as an agent's: 401.
    let (status, body) = http(&bridge, "/api/sessions", &mint("page", "alice", 600), None).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.as_str().unwrap().contains("role"), "{body}");
    // No credential at all, with signed tokens on: 401 even for /api.
    let response = reqwest::get(format!("{}/api/sessions", bridge.base_url))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    // An agent token as a page's: refused with the reason.
    let params = ConnectParams {
        token: Some(mint("agent", "alice", 600)),
        resume_secret: None,
    };
    let ConnectOutcome::Refused(code, message) = RawPage::connect(&bridge.ws_url, &params).await
    else {
        panic!("an agent token connected as a page");
    };
    assert_eq!(code, -32001);
    assert!(message.contains("role"), "{message}");
    // The operator's static token is no page token either.
    let params = ConnectParams {
        token: Some(OPERATOR.into()),
        resume_secret: None,
    };
    assert!(matches!(
        RawPage::connect(&bridge.ws_url, &params).await,
        ConnectOutcome::Refused(-32001, _)
    ));
    // Tokens in a URL: refused, not ignored.
    let token = mint("page", "alice", 600);
    for url in [
        format!("{}/ws?token={token}", bridge.base_url),
        format!("{}/mcp?access_token={token}", bridge.base_url),
        format!("{}/api/sessions?token={token}", bridge.base_url),
    ] {
        let response = reqwest::Client::new()
            .get(&url)
            .bearer_auth(OPERATOR)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 400, "{url}");
        let text = response.text().await.unwrap();
        assert!(text.contains("never travel in a URL"), "{text}");
    }
}

#[tokio::test]
async fn another_users_token_cannot_take_a_session_even_with_its_secret() {
    let bridge = bridge().await;
    let alice = RawPage::connect_with_tools(&bridge.ws_url, &page_params("alice"), json!([])).await;
    let stolen = ConnectParams {
        token: Some(mint("page", "bob", 600)),
        resume_secret: Some(alice.session.resume_secret.clone()),
    };
    let bob = RawPage::connect(&bridge.ws_url, &stolen).await.accepted();
    assert_ne!(bob.id(), alice.id());
    assert!(!bob.session.resumed);
    let owner = bridge.bridge.session(alice.id()).unwrap();
    assert_eq!(owner.user(), Some("alice"));
    assert!(owner.is_connected(), "Alice's page keeps its session");
    // Alice herself resumes it (her secret, her token) once her page is gone.
    let secret = alice.session.resume_secret.clone();
    let id = alice.id().to_owned();
    drop(alice);
    eventually("alice's page gone", || !owner.is_connected()).await;
    let again = ConnectParams {
        token: Some(mint("page", "alice", 600)),
        resume_secret: Some(secret),
    };
    let back = RawPage::connect(&bridge.ws_url, &again).await.accepted();
    assert_eq!(back.id(), id);
    assert!(back.session.resumed);
}

#[tokio::test]
async fn a_token_that_lapses_unrefreshed_closes_the_connection_and_a_refresh_keeps_it() {
    let bridge = bridge().await;
    // Accepted within the 60 s leeway, lapsing 3 s from now.
    let lapsing = ConnectParams {
        token: Some(mint("page", "alice", -57)),
        resume_secret: None,
    };
    let mut page = RawPage::connect_with_tools(&bridge.ws_url, &lapsing, json!([])).await;
    let (code, reason) = page.closed_by_bridge().await.expect("a close");
    assert_eq!(code, 4001, "{reason}");
    assert!(reason.contains("expired"), "{reason}");
    // The same, refreshed in time: the connection stays, the answer names the new expiry.
    let lapsing = ConnectParams {
        token: Some(mint("page", "alice", -57)),
        resume_secret: None,
    };
    let mut page = RawPage::connect_with_tools(&bridge.ws_url, &lapsing, json!([])).await;
    let fresh = mint("page", "alice", 600);
    page.send_json(
        &json!({"jsonrpc": "2.0", "id": "ct-token-1", "method": "clienttools/token",
        "params": {"token": fresh}}),
    )
    .await;
    let answer = loop {
        let frame = page.next_json().await.expect("the refresh's answer");
        if frame["id"] == "ct-token-1" {
            break frame;
        }
    };
    let expires_in = answer["result"]["tokenExpiresInMs"].as_u64();
    let expires_in = expires_in.unwrap_or_else(|| panic!("{answer}"));
    assert!(expires_in > 500_000, "{answer}");
    // Past the old lapse, it still answers.
    let session = bridge.bridge.session(page.id()).unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert!(session.is_connected());
    // A refresh naming another user ends the connection.
    page.send_json(
        &json!({"jsonrpc": "2.0", "id": "ct-token-2", "method": "clienttools/token",
        "params": {"token": mint("page", "bob", 600)}}),
    )
    .await;
    let (code, _) = page.closed_by_bridge().await.expect("a close");
    assert_eq!(code, 4003);
}

#[tokio::test]
async fn a_thousand_bad_signatures_are_refused_while_good_pages_connect() {
    let bridge = bridge().await;
    let forged = {
        let mut header = Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some(KID.into());
        let claims =
            json!({"sub": "alice", "role": "page", "aud": "client-tools", "exp": now_s() + 600});
        encode(
            &header,
            &claims,
            &EncodingKey::from_secret(b"not the site's key, 32 bytes...").unwrap(),
        )
        .unwrap()
    };
    let bad = ConnectParams {
        token: Some(forged),
        resume_secret: None,
    };
    let ws = bridge.ws_url.clone();
    let attack = tokio::spawn(async move {
        let mut refused = 0;
        for _ in 0..1000 {
            if let ConnectOutcome::Refused(-32001, message) = RawPage::connect(&ws, &bad).await {
                assert!(message.contains("signature"), "{message}");
                refused += 1;
            }
        }
        refused
    });
    let mut good = 0;
    while !attack.is_finished() || good == 0 {
        let page = RawPage::connect(&bridge.ws_url, &page_params("alice"))
            .await
            .accepted();
        assert_eq!(
            bridge.bridge.session(page.id()).unwrap().user(),
            Some("alice")
        );
        good += 1;
    }
    assert_eq!(attack.await.unwrap(), 1000);
    assert!(good > 0);
}

/// The site backend's token endpoint, as a test's: `GET /token` mints alice's page token with the
/// lifetime set in `lifetime_s`, counting the requests.
struct TokenEndpoint {
    url: String,
    hits: Arc<std::sync::atomic::AtomicUsize>,
    lifetime_s: Arc<std::sync::atomic::AtomicI64>,
}

async fn token_endpoint() -> TokenEndpoint {
    use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
    let hits = Arc::new(AtomicUsize::new(0));
    let lifetime_s = Arc::new(AtomicI64::new(600));
    let (h, l) = (hits.clone(), lifetime_s.clone());
    let app = axum::Router::new().route(
        "/token",
        axum::routing::get(move || {
            let (h, l) = (h.clone(), l.clone());
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                let token = mint("page", "alice", l.load(Ordering::SeqCst));
                ([("access-control-allow-origin", "*")], token)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/token", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    TokenEndpoint {
        url,
        hits,
        lifetime_s,
    }
}

#[tokio::test]
async fn a_page_asks_its_token_function_at_connect_reconnect_and_before_expiry_and_reports_its_activity(
) {
    use std::sync::atomic::Ordering;
    let tokens = token_endpoint().await;
    let keys = TokenKeys::from_file(key_file(), "client-tools".into(), None).unwrap();
    let config = BridgeConfig {
        agent_token: Some(OPERATOR.into()),
        token_keys: Some(Arc::new(keys)),
        ..BridgeConfig::default()
    };
    let page = format!("users.html?tokens={}", tokens.url);
    let stack = client_tools_e2e::Stack::start(&page, config).await;
    // Connected with the function's token: the session is alice's.
    assert_eq!(stack.page.user(), Some("alice"));
    assert_eq!(tokens.hits.load(Ordering::SeqCst), 1);
    // It reported its visibility (a headless page is visible).
    eventually("the page's activity reported", || {
        stack.page.activity().visible
    })
    .await;
    // A reconnect asks the function again, and resumes alice's session.
    stack.page.drop_connection();
    eventually("a reconnect with a fresh token", || {
        tokens.hits.load(Ordering::SeqCst) == 2 && stack.page.is_connected()
    })
    .await;
    assert_eq!(stack.page.user(), Some("alice"));
    // A token about to expire is refreshed on the open connection, without a reconnect.
    tokens.lifetime_s.store(-55, Ordering::SeqCst);
    stack.page.drop_connection();
    eventually("a reconnect with a token about to expire", || {
        tokens.hits.load(Ordering::SeqCst) == 3 && stack.page.is_connected()
    })
    .await;
    tokens.lifetime_s.store(600, Ordering::SeqCst);
    let generation = stack.page.generation_for_test();
    eventually("the token refreshed", || {
        tokens.hits.load(Ordering::SeqCst) >= 4
    })
    .await;
    let answer = stack
        .page
        .call_tool(("whoami", json!({})), Default::default())
        .await
        .into_result();
    assert!(!answer.is_error, "{answer:?}");
    assert_eq!(stack.page.generation_for_test(), generation, "no reconnect");
}

#[tokio::test]
async fn across_a_cluster_a_users_tabs_on_two_nodes_are_one_mcp_session_and_other_users_unknown() {
    use client_tools_e2e::cluster::{Nats, Node};
    let nats = Nats::start("users-nats-token").await;
    let keys = key_file().to_str().unwrap().to_owned();
    let args = ["--agent-token", OPERATOR, "--token-keys", &keys];
    let (one, two) = (
        Node::start(&nats, &args).await,
        Node::start(&nats, &args).await,
    );
    let ws = |node: &Node| format!("ws://{}/ws", node.address);
    let board = tool("read_board", "The board");
    let cart = tool("read_cart", "The cart");
    let (_alice_one, _s1) = tab(&ws(&one), "alice", "alice-on-1", json!([board]), true).await;
    let (_alice_two, _s2) = tab(&ws(&two), "alice", "alice-on-2", json!([cart]), false).await;
    let (bob, _s3) = tab(
        &ws(&two),
        "bob",
        "bob-on-2",
        json!([tool("bobs_secret", "")]),
        true,
    )
    .await;
    // Node 1 finds alice's tab on node 2 through the directory.
    let url = format!("{}/api/users/alice/sessions", one.base_url);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let listed: Value = reqwest::Client::new()
            .get(&url)
            .bearer_auth(OPERATOR)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let connected = listed
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["connected"] == true)
            .count();
        if connected == 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{listed}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // The official SDK on node 1, as the operator over alice's tabs and with alice's own token.
    let steps = json!([{"list": true}, {"call": "read_board"}, {"call": "read_cart"}, {"call": "bobs_secret"}]);
    let alice = mint("agent", "alice", 600);
    for (url, token) in [
        (format!("{}/mcp?user=alice", one.base_url), OPERATOR),
        (format!("{}/mcp", one.base_url), alice.as_str()),
    ] {
        let out = python_steps::run(&url, token, "2025-11-25", None, &steps).await;
        assert_eq!(
            listed_names(&out[0]),
            ["read_board", "read_cart"],
            "{out:?}"
        );
        assert_eq!(out[1]["text"], "alice-on-1: read_board", "{out:?}");
        assert_eq!(out[2]["text"], "alice-on-2: read_cart", "{out:?}");
        assert_eq!(out[3]["isError"], true, "{out:?}");
    }
    // Bob's session, held by node 2, is unknown to alice's agent on node 1.
    let answer: Value = reqwest::Client::new()
        .post(format!("{}/api/sessions/{bob}/call", one.base_url))
        .bearer_auth(&alice)
        .json(&json!({"name": "bobs_secret"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let text = answer["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("no page session '{bob}'")),
        "{answer}"
    );
}

#[tokio::test]
async fn a_round_of_another_users_tab_cannot_be_answered_with_its_request_state() {
    let bridge = bridge().await;
    let Tabs { board, .. } = alice_and_bob(&bridge).await;
    // Bob's tab asks the agent mid-call (`ctx.elicit`), and waits for the answer.
    let ask = json!([tool("ask", "Asks who")]);
    let mut bobs = RawPage::connect_with_tools(&bridge.ws_url, &page_params("bob"), ask).await;
    let bob = bobs.id().to_owned();
    tokio::spawn(async move {
        let mut call = Value::Null;
        loop {
            let Some(frame) = bobs.next_json().await else {
                continue;
            };
            if frame["id"] == "bob-round-1" && frame.get("result").is_some() {
                // The round answered: the call ends with whom it was told.
                let who = frame["result"]["inputResponses"]["who"]["content"]["name"].clone();
                let result =
                    json!({"content": [{"type": "text", "text": format!("asked: {who}")}]});
                bobs.reply(&call, result).await;
            } else if frame["method"] == "tools/call" {
                call = frame.clone();
                let call_id = frame["id"].as_str().unwrap_or_default().to_owned();
                let round = json!({"jsonrpc": "2.0", "id": "bob-round-1", "method": "clienttools/input",
                    "params": {"inputRequests": {"who": {"method": "elicitation/create",
                        "params": {"message": "Who?", "requestedSchema": {"type": "object",
                            "properties": {"name": {"type": "string"}}}}}},
                        "_meta": {"clienttools/callId": call_id}}});
                bobs.send_json(&round).await;
            } else if frame["method"] == "ping" {
                bobs.reply(&frame, json!({})).await;
            }
        }
    });
    eventually("bob's tab listed", || {
        bridge
            .bridge
            .session(&bob)
            .is_some_and(|s| s.has_listed_tools())
    })
    .await;
    // The operator's call of Bob's tool gets the round and its requestState.
    let body = json!({"name": "ask", "capabilities": {"elicitation": {}}});
    let (status, asked) = http(
        &bridge,
        &format!("/api/sessions/{bob}/call"),
        OPERATOR,
        Some(body),
    )
    .await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"].as_str().unwrap().to_owned();
    let retry = json!({"name": "ask", "capabilities": {"elicitation": {}}, "requestState": state,
        "inputResponses": {"who": {"action": "accept", "content": {"name": "mallory"}}}});
    // Alice's agent presents it: on her own tab, and over her tabs, it is another session's.
    let alice = mint("agent", "alice", 600);
    for path in [
        format!("/api/sessions/{board}/call"),
        "/api/users/alice/call".to_owned(),
    ] {
        let (status, refused) = http(&bridge, &path, &alice, Some(retry.clone())).await;
        assert_eq!(status, 400, "{path}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("another page session"),
            "{path}: {refused}"
        );
    }
    // On Bob's session by id, the session is unknown to her.
    let (_, unknown) = http(
        &bridge,
        &format!("/api/sessions/{bob}/call"),
        &alice,
        Some(retry.clone()),
    )
    .await;
    let text = unknown["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(&format!("no page session '{bob}'")),
        "{unknown}"
    );
    // The state still works for the operator, on Bob's session: nothing above spent it.
    let (status, resumed) = http(
        &bridge,
        &format!("/api/sessions/{bob}/call"),
        OPERATOR,
        Some(retry),
    )
    .await;
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(
        resumed["content"][0]["text"], "asked: \"mallory\"",
        "{resumed}"
    );
}
