//! Whose page it is (SPEC §13): signed page and agent tokens, users and their tabs. Pages are raw
//! WebSocket clients here (every frame and close code visible: `raw_page`); agents are the official
//! MCP Python SDK (`python_steps`), plain HTTP (MCP by hand where the test must see each message:
//! tasks, the streams `list_changed` travels on) and the real bridge binary's `--stdio` session.
//! The tokens are minted as a site's backend would, with a JOSE library (`jsonwebtoken`), from a
//! key set written to a file the bridge loads with `--token-keys` (`BridgeConfig::token_keys`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use client_tools_bridge::tokens::TokenKeys;
use client_tools_bridge::{BridgeConfig, Limits};
use client_tools_core::connect::ConnectParams;
use client_tools_e2e::raw_page::{ConnectOutcome, RawPage};
use client_tools_e2e::{eventually, python_steps, BridgeOnly};
use futures_util::StreamExt;
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

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
    bridge_with(Limits::default()).await
}

/// [`bridge`] with other limits: a test that asks for sessions no page will open waits
/// `first_page_wait` for each (10 s by default) and sets it shorter.
async fn bridge_with(limits: Limits) -> BridgeOnly {
    let keys = TokenKeys::from_file(key_file(), "client-tools".into(), None).unwrap();
    BridgeOnly::start(BridgeConfig {
        agent_token: Some(OPERATOR.into()),
        token_keys: Some(Arc::new(keys)),
        limits,
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
    let tabs = open_alice_and_bob(&bridge.ws_url).await;
    // Listed, and the tabs in front seen in front (a report of "behind" changes nothing).
    eventually("three tabs listed", || {
        [(&tabs.board, true), (&tabs.cart, false), (&tabs.bob, true)]
            .iter()
            .all(|(id, in_front)| {
                bridge
                    .bridge
                    .session(id)
                    .is_some_and(|s| s.has_listed_tools() && s.activity().in_front() == *in_front)
            })
    })
    .await;
    tabs
}

/// [`alice_and_bob`]'s tabs on the bridge at `ws_url`, not waiting for the bridge to have taken
/// them in (a bridge in another process is asked by its own routes).
async fn open_alice_and_bob(ws_url: &str) -> Tabs {
    let board = tool("read_board", "The board");
    let note = tool("note", "Adds a note");
    let (alice_board, s1) = tab(ws_url, "alice", "alice-board", json!([board, note]), true).await;
    let cart = tool("read_cart", "The cart");
    let (alice_cart, s2) = tab(ws_url, "alice", "alice-cart", json!([cart, note]), false).await;
    let secret = tool("bobs_secret", "Bob's own");
    let (bob, s3) = tab(ws_url, "bob", "bob", json!([secret]), true).await;
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

/// `GET` or `POST` of `path` with `token`: the status and the JSON body (or `Null`).
async fn http(bridge: &BridgeOnly, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
    http_at(&bridge.base_url, path, token, body).await
}

/// [`http`] to the bridge at `base_url`.
async fn http_at(base_url: &str, path: &str, token: &str, body: Option<Value>) -> (u16, Value) {
    let url = format!("{base_url}{path}");
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

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// One stateless MCP request (revision 2026-07-28) to `/mcp{query}` with `token`, the agent
/// declaring the tasks extension: the JSON-RPC answer.
async fn mcp_2026(base_url: &str, query: &str, token: &str, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
    });
    let name = params.get("name").or_else(|| params.get("taskId"));
    let name = name.and_then(Value::as_str).map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = reqwest::Client::new()
        .post(format!("{base_url}/mcp{query}"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .bearer_auth(token)
        .json(&body);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let text = request.send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .unwrap_or_else(|| panic!("no answer to {method} in {text}"))
}

/// Bob's real task — his tab holds the call, so it stays `working` — is unknown to Alice's agent
/// by its id, in exactly the words of an id that never existed (nothing says it exists), over
/// `/api` and over MCP `tasks/get` (naming Bob's session, and over her own tabs); the operator
/// still reads it afterwards, by the same routes.
#[tokio::test]
async fn a_scoped_agent_meets_another_users_task_as_one_that_never_existed() {
    let bridge = bridge().await;
    let _tabs = alice_and_bob(&bridge).await;
    let long_job = json!({"name": "long_job", "description": "Takes a while",
        "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}});
    let bobs = LiveTab::open(
        &bridge.ws_url,
        "bob",
        "bob-jobs",
        json!([long_job]),
        &["long_job"],
    )
    .await;
    let bob = bobs.id.clone();
    eventually("bob's jobs tab listed", || {
        (bridge.bridge.session(&bob)).is_some_and(|s| s.has_listed_tools())
    })
    .await;
    let call = json!({"name": "long_job", "capabilities": {"extensions": {TASKS: {}}}});
    let (status, created) = http(
        &bridge,
        &format!("/api/sessions/{bob}/call"),
        OPERATOR,
        Some(call),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["resultType"], "task", "{created}");
    let task = created["taskId"].as_str().unwrap().to_owned();
    eventually("the task's call reached bob's tab", || {
        bobs.calls().len() == 1
    })
    .await;
    // An id of the same shape that no task ever had.
    let never: String = task.chars().rev().collect();
    assert_ne!(never, task);
    let alice = mint("agent", "alice", 600);

    // /api: the same status and body, but for the id each names.
    let api = |id: &str| format!("/api/sessions/{bob}/tasks/{id}");
    let (status, refused) = http(&bridge, &api(&task), &alice, None).await;
    let (never_status, never_refused) = http(&bridge, &api(&never), &alice, None).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(status, never_status);
    let as_if_never = refused.to_string().replace(&task, &never);
    assert_eq!(as_if_never, never_refused.to_string());
    assert!(!refused.to_string().contains("working"), "{refused}");

    // MCP tasks/get, naming Bob's session and over her own tabs: the same error.
    for query in [format!("?session={bob}"), String::new()] {
        let get = |id: &str| json!({"taskId": id});
        let refused = mcp_2026(&bridge.base_url, &query, &alice, "tasks/get", get(&task)).await;
        let never_refused =
            mcp_2026(&bridge.base_url, &query, &alice, "tasks/get", get(&never)).await;
        assert!(refused.get("result").is_none(), "/mcp{query}: {refused}");
        assert_eq!(refused["error"]["code"], -32602, "/mcp{query}: {refused}");
        let as_if_never = refused["error"].to_string().replace(&task, &never);
        assert_eq!(
            as_if_never,
            never_refused["error"].to_string(),
            "/mcp{query}"
        );
    }

    // The operator still reads it, working, by both routes: nothing above touched it.
    let (status, working) = http(&bridge, &api(&task), OPERATOR, None).await;
    assert_eq!(status, 200, "{working}");
    assert_eq!(working["status"], "working", "{working}");
    let query = format!("?session={bob}");
    let got = json!({"taskId": task});
    let working = mcp_2026(&bridge.base_url, &query, OPERATOR, "tasks/get", got).await;
    assert_eq!(working["result"]["status"], "working", "{working}");
    assert_eq!(bobs.calls().len(), 1, "the call ran once");
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

/// What a test makes a [`LiveTab`] do.
enum TabAction {
    /// Send this frame to the bridge.
    Send(Value),
    /// Offer these tools from now on: the tab says its list changed and answers the bridge's
    /// `tools/list` with them.
    ChangeTools(Value),
    /// Close the socket, as a closing tab does, leaving its held calls unanswered.
    Close,
}

/// A tab of a user that keeps every frame the bridge sent it (so a test counts what reached it,
/// not only what it asked for), answers each call with `"<label>: <tool>"` — except calls of the
/// tools it holds, never answered (a long job; a call the tab closes on) — and does what the test
/// tells it ([`TabAction`]).
struct LiveTab {
    id: String,
    received: Arc<Mutex<Vec<Value>>>,
    actions: mpsc::Sender<TabAction>,
}

impl LiveTab {
    async fn open(ws_url: &str, user: &str, label: &str, tools: Value, holds: &[&str]) -> LiveTab {
        let mut page = RawPage::connect_with_tools(ws_url, &page_params(user), tools.clone()).await;
        let id = page.id().to_owned();
        let received = Arc::new(Mutex::new(Vec::new()));
        let (actions, mut to_do) = mpsc::channel::<TabAction>(8);
        let (label, holds) = (label.to_owned(), holds.iter().map(|h| h.to_string()));
        let holds: Vec<String> = holds.collect();
        let kept = received.clone();
        tokio::spawn(async move {
            let mut tools = tools;
            loop {
                let message = tokio::select! {
                    message = page.socket.next() => message,
                    Some(action) = to_do.recv() => {
                        match action {
                            TabAction::Send(frame) => page.send_json(&frame).await,
                            TabAction::ChangeTools(now) => {
                                tools = now;
                                let changed = json!({"jsonrpc": "2.0",
                                    "method": "notifications/tools/list_changed"});
                                page.send_json(&changed).await;
                            }
                            TabAction::Close => {
                                let _ = page.socket.close(None).await;
                                return;
                            }
                        }
                        continue;
                    }
                };
                let frame: Value = match message {
                    Some(Ok(Message::Text(text))) => match serde_json::from_str(text.as_str()) {
                        Ok(frame) => frame,
                        Err(_) => continue,
                    },
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => return,
                };
                kept.lock().unwrap().push(frame.clone());
                match frame["method"].as_str() {
                    Some("tools/list") => page.reply(&frame, json!({"tools": tools})).await,
                    Some("ping") => page.reply(&frame, json!({})).await,
                    Some("tools/call") => {
                        let name = frame["params"]["name"].as_str().unwrap_or_default();
                        if !holds.iter().any(|held| held == name) {
                            let text = format!("{label}: {name}");
                            let result = json!({"content": [{"type": "text", "text": text}]});
                            page.reply(&frame, result).await;
                        }
                    }
                    _ => {}
                }
            }
        });
        LiveTab {
            id,
            received,
            actions,
        }
    }

    /// Every `tools/call` that reached this tab, whoever made it.
    fn calls(&self) -> Vec<Value> {
        let received = self.received.lock().unwrap();
        let calls = received.iter().filter(|f| f["method"] == "tools/call");
        calls.cloned().collect()
    }

    async fn act(&self, action: TabAction) {
        self.actions.send(action).await.expect("the tab is open");
    }
}

/// Every JSON-RPC message of an SSE response, kept as it arrives until the stream ends (what an
/// MCP agent hears unasked).
struct Heard(Arc<Mutex<Vec<Value>>>);

impl Heard {
    fn keep(mut response: reqwest::Response) -> Heard {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let into = heard.clone();
        tokio::spawn(async move {
            let mut pending: Vec<u8> = Vec::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                pending.extend_from_slice(&chunk);
                // An SSE event ends with a blank line; its `data:` lines are the message.
                while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                    let event: Vec<u8> = pending.drain(..end + 2).collect();
                    let event = String::from_utf8_lossy(&event);
                    for data in event.lines().filter_map(|l| l.strip_prefix("data:")) {
                        if let Ok(message) = serde_json::from_str(data.trim()) {
                            into.lock().unwrap().push(message);
                        }
                    }
                }
            }
        });
        Heard(heard)
    }

    fn count(&self, method: &str) -> usize {
        let heard = self.0.lock().unwrap();
        heard.iter().filter(|m| m["method"] == method).count()
    }

    fn list_changes(&self) -> usize {
        self.count("notifications/tools/list_changed")
    }
}

/// An MCP session (revision 2025-11-25) at `url` with `token`, initialized, and its GET stream,
/// open when this returns: what the bridge announces from then on.
async fn listen_2025(url: &str, token: &str) -> Heard {
    let client = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "users-e2e", "version": "1"}}});
    let response = (client.post(url))
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(token)
        .json(&initialize)
        .send()
        .await
        .unwrap();
    let session = response.headers()["mcp-session-id"].to_str().unwrap();
    let session = session.to_owned();
    let answer = response.text().await.unwrap();
    assert!(answer.contains("\"result\""), "{answer}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = (client.post(url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .bearer_auth(token)
        .json(&initialized)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 202);
    let stream = (client.get(url))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    Heard::keep(stream)
}

/// A `subscriptions/listen` stream (revision 2026-07-28) at `url` with `token`, asking for
/// `tools/list_changed`; acknowledged when this returns.
async fn listen_2026(url: &str, token: &str) -> Heard {
    let listen = json!({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let stream = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .bearer_auth(token)
        .json(&listen)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let heard = Heard::keep(stream);
    eventually("the subscription acknowledged", || {
        heard.count("notifications/subscriptions/acknowledged") == 1
    })
    .await;
    heard
}

/// An agent over Alice's tabs (`/mcp?user=alice`, the operator) hears `list_changed` once for each
/// change of her tabs' union — a tab opens, changes its tools, closes — on both revisions' streams,
/// and never for Bob's tab doing the same in between. Each of Bob's changes is in the bridge before
/// Alice's next one starts, and each stream carries the bridge's announcements in order, so one of
/// Bob's would arrive before the one the test waits for and make the count one too many.
#[tokio::test]
async fn an_agent_over_a_users_tabs_hears_list_changed_for_her_tabs_and_not_for_another_users() {
    let bridge = bridge().await;
    let _tabs = alice_and_bob(&bridge).await;
    let url = format!("{}/mcp?user=alice", bridge.base_url);
    let streams = [
        ("2025-11-25", listen_2025(&url, OPERATOR).await),
        ("2026-07-28", listen_2026(&url, OPERATOR).await),
    ];
    let heard_exactly = |n: usize, what: &'static str| {
        let streams = &streams;
        async move {
            eventually(what, || streams.iter().all(|(_, h)| h.list_changes() >= n)).await;
            for (revision, heard) in streams {
                assert_eq!(heard.list_changes(), n, "{revision}, {what}");
            }
        }
    };
    let in_bridge = |id: &str, tools: usize| {
        let session = bridge.bridge.session(id);
        session.is_some_and(|s| s.has_listed_tools() && s.tools().len() == tools)
    };
    // Bob opens a tab.
    let bobs = LiveTab::open(
        &bridge.ws_url,
        "bob",
        "bob-2",
        json!([tool("bobs_plan", "")]),
        &[],
    )
    .await;
    eventually("bob's tab listed", || in_bridge(&bobs.id, 1)).await;
    // Alice opens a tab.
    let calendar = tool("read_calendar", "The calendar");
    let alices = LiveTab::open(&bridge.ws_url, "alice", "alice-3", json!([calendar]), &[]).await;
    heard_exactly(1, "alice's tab opened").await;
    // Bob's tab, then Alice's, changes its tools.
    let plans = json!([tool("bobs_plan", ""), tool("bobs_plan_b", "")]);
    bobs.act(TabAction::ChangeTools(plans)).await;
    eventually("bob's tab's tools changed", || in_bridge(&bobs.id, 2)).await;
    let events = json!([calendar, tool("add_event", "Adds an event")]);
    alices.act(TabAction::ChangeTools(events)).await;
    heard_exactly(2, "alice's tab changed its tools").await;
    // Bob's tab, then Alice's, closes.
    bobs.act(TabAction::Close).await;
    let bob_session = bridge.bridge.session(&bobs.id).unwrap();
    eventually("bob's tab closed", || !bob_session.is_connected()).await;
    alices.act(TabAction::Close).await;
    heard_exactly(3, "alice's tab closed").await;
    // What the last one announced: her two first tabs again.
    let listed = mcp_2026(
        &bridge.base_url,
        "?user=alice",
        OPERATOR,
        "tools/list",
        json!({}),
    )
    .await;
    assert_eq!(
        listed_names(&listed["result"]),
        ["note", "read_board", "read_cart"]
    );
}

/// The call runs on Alice's tab in front, which closes its socket without answering: the call
/// fails ("disconnected"), over `/api` and over MCP, and her other tab offering the same tool never
/// receives it. That tab is open and takes the tool's calls: the next call, with no tab in front,
/// is the first `tools/call` it ever receives.
#[tokio::test]
async fn a_tab_that_closes_mid_call_fails_the_call_and_it_never_runs_on_another_tab() {
    let bridge = bridge().await;
    let note = json!([tool("note", "Adds a note")]);
    let behind = LiveTab::open(&bridge.ws_url, "alice", "alice-behind", note.clone(), &[]).await;
    eventually("the tab behind listed", || {
        (bridge.bridge.session(&behind.id)).is_some_and(|s| s.has_listed_tools())
    })
    .await;
    for route in ["/api/users/alice/call", "/mcp?user=alice"] {
        let front = LiveTab::open(
            &bridge.ws_url,
            "alice",
            "alice-front",
            note.clone(),
            &["note"],
        )
        .await;
        front.act(TabAction::Send(activity(true))).await;
        let session = bridge.bridge.session(&front.id).unwrap();
        eventually("the tab in front listed and in front", || {
            session.has_listed_tools() && session.activity().in_front()
        })
        .await;
        let base_url = bridge.base_url.clone();
        let call = tokio::spawn(async move {
            if route.starts_with("/api") {
                let body = Some(json!({"name": "note"}));
                http_at(&base_url, route, OPERATOR, body).await.1
            } else {
                let params = json!({"name": "note", "arguments": {}});
                let answer =
                    mcp_2026(&base_url, "?user=alice", OPERATOR, "tools/call", params).await;
                answer["result"].clone()
            }
        });
        eventually("the call reached the tab in front", || {
            front.calls().len() == 1
        })
        .await;
        front.act(TabAction::Close).await;
        let result = call.await.unwrap();
        assert_eq!(result["isError"], true, "{route}: {result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("disconnected"), "{route}: {result}");
        assert_eq!(behind.calls(), Vec::<Value>::new(), "{route}");
    }
    let (_, answer) = http(
        &bridge,
        "/api/users/alice/call",
        OPERATOR,
        Some(json!({"name": "note"})),
    )
    .await;
    assert_eq!(
        answer["content"][0]["text"], "alice-behind: note",
        "{answer}"
    );
    assert_eq!(behind.calls().len(), 1);
}

/// A `client-tools-bridge --stdio` process (`CLIENT_TOOLS_BRIDGE_BIN`) with the site's key set:
/// its one MCP session on stdin and stdout, pages on its `/ws` (a free port it names on stderr).
struct StdioBridge {
    _child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    ws_url: String,
    base_url: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl StdioBridge {
    async fn start(args: &[&str]) -> StdioBridge {
        use tokio::io::AsyncBufReadExt;
        let binary = std::env::var_os("CLIENT_TOOLS_BRIDGE_BIN")
            .map(PathBuf::from)
            .expect("CLIENT_TOOLS_BRIDGE_BIN is not set: run these through `cargo xtask test`");
        let mut child = tokio::process::Command::new(binary)
            .args(["--stdio", "--listen", "127.0.0.1:0", "--token-keys"])
            .arg(key_file())
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start client-tools-bridge");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (address, mut told) = mpsc::channel::<String>(1);
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let into = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(ws) = line.split_whitespace().find(|w| w.starts_with("ws://")) {
                    let _ = address.send(ws.to_owned()).await;
                }
                into.lock().unwrap().push(line);
            }
        });
        let ws_url = tokio::time::timeout(std::time::Duration::from_secs(30), told.recv())
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("no page address on stderr: {:?}", log.lock().unwrap()));
        let base_url = ws_url.replace("ws://", "http://").replace("/ws", "");
        StdioBridge {
            stdin: child.stdin.take().unwrap(),
            stdout: tokio::io::BufReader::new(child.stdout.take().unwrap()).lines(),
            _child: child,
            ws_url,
            base_url,
            log,
        }
    }

    async fn send(&mut self, message: Value) {
        use tokio::io::AsyncWriteExt;
        let line = format!("{message}\n");
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Sends `message` and waits (60 s at most) for the answer with its id.
    async fn request(&mut self, message: Value) -> Value {
        let id = message["id"].clone();
        self.send(message).await;
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let line = tokio::time::timeout_at(deadline, self.stdout.next_line()).await;
            let line = line.ok().and_then(Result::ok).flatten();
            let line = line.unwrap_or_else(|| {
                panic!(
                    "no answer on stdout; stderr: {:?}",
                    self.log.lock().unwrap()
                )
            });
            let answer: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if answer["id"] == id {
                return answer;
            }
        }
    }
}

/// A stateless (2026-07-28) `tools/call` of `name` with `arguments`, as `token`, with the standard
/// headers and no `Mcp-Param-*` header: the HTTP status and the body.
async fn stateless_call(
    bridge: &BridgeOnly,
    token: &str,
    name: &str,
    arguments: Value,
) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let response = reqwest::Client::new()
        .post(format!("{}/mcp", bridge.base_url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// The tests that open no browser (raw WebSocket pages, HTTP and MCP clients only): `cargo xtask
/// test` runs them once, not again in the Firefox pass (`--skip ::without_browser::`); the
/// harness refuses to open a browser in them.
mod without_browser {
    use super::*;

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

    #[tokio::test]
    async fn a_scoped_agent_meets_another_users_sessions_as_unknown_on_every_route() {
        // Bob's session and tabs are unknown to Alice's agent: each /mcp request for them waits for a
        // page that never comes, as for a session that never existed (1 s here, not 10).
        let bridge = bridge_with(Limits {
            first_page_wait: Duration::from_secs(1),
            ..Limits::default()
        })
        .await;
        let Tabs { bob, .. } = alice_and_bob(&bridge).await;
        let alice = mint("agent", "alice", 600);
        // /api: the list, a call by id (a task of Bob's: the test after this one).
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
        let (status, body) =
            http(&bridge, "/api/sessions", &mint("page", "alice", 600), None).await;
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
        let ConnectOutcome::Refused(code, message) =
            RawPage::connect(&bridge.ws_url, &params).await
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
        let alice =
            RawPage::connect_with_tools(&bridge.ws_url, &page_params("alice"), json!([])).await;
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
            let claims = json!({"sub": "alice", "role": "page", "aud": "client-tools", "exp": now_s() + 600});
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
                if let ConnectOutcome::Refused(-32001, message) = RawPage::connect(&ws, &bad).await
                {
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

    #[tokio::test]
    async fn across_a_cluster_a_users_tabs_on_two_nodes_are_one_mcp_session_and_other_users_unknown(
    ) {
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

    /// `--stdio --user alice`: the one MCP session lists the union of Alice's two tabs, never Bob's
    /// tool (which Bob's tab offers and the bridge has, as the operator's call over `/api` shows),
    /// runs her tools on her tabs, and fails a call of Bob's tool and a call naming Bob's tab.
    #[tokio::test]
    async fn a_stdio_bridge_for_one_user_lists_and_calls_her_tabs_only() {
        let mut bridge = StdioBridge::start(&["--user", "alice", "--agent-token", OPERATOR]).await;
        let tabs = open_alice_and_bob(&bridge.ws_url).await;
        let bob = tabs.bob.clone();
        let (_, answer) = http_at(
            &bridge.base_url,
            &format!("/api/sessions/{bob}/call"),
            OPERATOR,
            Some(json!({"name": "bobs_secret"})),
        )
        .await;
        assert_eq!(answer["content"][0]["text"], "bob: bobs_secret", "{answer}");
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "users-e2e", "version": "1"}}});
        let answer = bridge.request(initialize).await;
        assert!(answer.get("result").is_some(), "{answer}");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        bridge.send(initialized).await;
        // Both of Alice's tabs listed (they may still be in their handshake at first).
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut id = 1;
        let names = loop {
            id += 1;
            let list = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
            let listed = bridge.request(list).await;
            let names = listed_names(&listed["result"]);
            if ["read_board", "read_cart"]
                .iter()
                .all(|n| names.iter().any(|m| m == n))
            {
                break names;
            }
            assert!(tokio::time::Instant::now() < deadline, "{listed}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        };
        assert_eq!(names, ["note", "read_board", "read_cart"]);
        let calls = [
            (json!({"name": "read_board"}), "alice-board: read_board"),
            (json!({"name": "read_cart"}), "alice-cart: read_cart"),
        ];
        for (params, text) in calls {
            id += 1;
            let call =
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
            let answer = bridge.request(call).await;
            assert_eq!(answer["result"]["content"][0]["text"], text, "{answer}");
        }
        let refused = [
            json!({"name": "bobs_secret"}),
            json!({"name": "note", "_meta": {"clienttools/session": bob}}),
        ];
        for params in refused {
            id += 1;
            let call =
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
            let answer = bridge.request(call).await;
            assert_eq!(answer["result"]["isError"], true, "{answer}");
            let text = answer["result"]["content"][0]["text"].as_str().unwrap();
            assert!(!text.starts_with("bob:"), "{answer}");
        }
    }

    /// rmcp checks a call's `Mcp-Param-*` headers against the called tool's schema (SEP-2243) before
    /// the agent has the request. That lookup sees only the pages the agent's credential reaches: a
    /// tool of another user's newest tab is, for Alice's agent, a tool that does not exist — no
    /// "missing Mcp-Param-Region header" names Bob's parameter — while her own tab's tool keeps the
    /// check.
    #[tokio::test]
    async fn the_standard_headers_check_sees_only_the_agents_own_pages() {
        let bridge = bridge().await;
        let with_header = |name: &str, header: &str| {
            json!({"name": name, "description": "Takes a region, also sent as a header",
                "inputSchema": {"type": "object", "required": ["region"],
                    "properties": {"region": {"type": "string", "x-mcp-header": header}}}})
        };
        let (alice, _a) = tab(
            &bridge.ws_url,
            "alice",
            "alice",
            json!([with_header("locate", "Zone")]),
            true,
        )
        .await;
        // Bob's tab connects last: the newest page of the bridge.
        let (bob, _b) = tab(
            &bridge.ws_url,
            "bob",
            "bob",
            json!([with_header("lookup", "Region")]),
            true,
        )
        .await;
        eventually("both tabs listed", || {
            [&alice, &bob].iter().all(|id| {
                bridge
                    .bridge
                    .session(id)
                    .is_some_and(|s| s.has_listed_tools())
            })
        })
        .await;
        let alice_agent = mint("agent", "alice", 600);
        let region = json!({"region": "eu"});
        // Bob's tool, as Alice's agent: the same answer as for a tool no tab offers, names swapped.
        let (status, bobs) = stateless_call(&bridge, &alice_agent, "lookup", region.clone()).await;
        assert_eq!(status, 200, "{bobs}");
        assert!(
            !bobs.contains("Mcp-Param") && !bobs.contains("region`"),
            "{bobs}"
        );
        let (_, never) = stateless_call(&bridge, &alice_agent, "lookup2", region.clone()).await;
        assert_eq!(bobs, never.replace("lookup2", "lookup"));
        // Her own tab's tool: the header is required as the schema says.
        let (status, own) = stateless_call(&bridge, &alice_agent, "locate", region.clone()).await;
        assert_eq!(status, 400, "{own}");
        assert!(own.contains("Mcp-Param-Zone"), "{own}");
        // The operator bound to Bob's session meets Bob's check.
        let (status, operator) = stateless_call(&bridge, OPERATOR, "lookup", region).await;
        assert_eq!(status, 400, "{operator}");
        assert!(operator.contains("Mcp-Param-Region"), "{operator}");
    }
}
