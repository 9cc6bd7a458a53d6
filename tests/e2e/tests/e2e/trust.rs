//! The bridge under attack (issue "Trust the bridge", docs/security.md): each test is one attack
//! that worked before, made against a real bridge over real sockets, and the defence that now
//! stops it. Bare WebSocket clients ([`RawPage`]) play hostile pages and second tabs; a real
//! page (in Chromium or Firefox, `E2E_BROWSER`) shows what the SDK sends.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use client_tools_bridge::{BridgeConfig, Limits};
use client_tools_core::connect::{code as refusal, ConnectParams};
use client_tools_core::protocol::MAX_FRAME_BYTES;
use client_tools_e2e::raw_page::{ConnectOutcome, RawPage};
use client_tools_e2e::{eventually, BridgeOnly, Stack};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const AGENT_TOKEN: &str = "agent-secret-7f3a";
const PAGE_TOKEN: &str = "page-secret-91c2";

fn with_tokens() -> BridgeConfig {
    BridgeConfig {
        agent_token: Some(AGENT_TOKEN.into()),
        page_token: Some(PAGE_TOKEN.into()),
        ..BridgeConfig::default()
    }
}

fn page_token() -> ConnectParams {
    ConnectParams {
        token: Some(PAGE_TOKEN.into()),
        resume_secret: None,
    }
}

fn echo_tool() -> Value {
    json!([{"name":"echo","inputSchema":{"type":"object"}}])
}

/// Answers every request of `page` (pings, and calls with `label`) until its socket ends.
fn serve_forever(mut page: RawPage, label: &'static str) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(frame) = page.next_json().await {
            let result = match frame["method"].as_str() {
                Some("ping") => json!({}),
                Some("tools/call") => json!({"content":[{"type":"text","text":label}]}),
                Some("tools/list") => json!({"tools": echo_tool()}),
                _ => continue,
            };
            page.reply(&frame, result).await;
        }
    })
}

/// One raw HTTP/1.1 request (so `Host` and `Origin` are exactly what the test says); the status.
async fn raw_http(base_url: &str, request_head: &str) -> u16 {
    let address = base_url.trim_start_matches("http://");
    let mut tcp = TcpStream::connect(address).await.unwrap();
    tcp.write_all(request_head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    answer
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {answer:?}"))
}

async fn api_get(base_url: &str, token: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new().get(format!("{base_url}/api/sessions"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

async fn api_call(base_url: &str, session: &str, token: Option<&str>, body: Value) -> Value {
    let mut request = reqwest::Client::new()
        .post(format!("{base_url}/api/sessions/{session}/call"))
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

fn result_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Attack 1: `/api` answered without a credential, and to any `Host` (DNS rebinding).
/// Attack 5, agent side: the page token is not an agent credential.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_routes_need_the_agent_token_a_known_host_and_no_foreign_origin() {
    let bridge = BridgeOnly::start(with_tokens()).await;
    let page = RawPage::connect_with_tools(&bridge.ws_url, &page_token(), echo_tool()).await;
    let id = page.id().to_owned();
    let _page = serve_forever(page, "page ran");
    let base = &bridge.base_url;

    for token in [None, Some("wrong"), Some(PAGE_TOKEN)] {
        assert_eq!(api_get(base, token).await.status(), 401, "{token:?}");
        let response = reqwest::Client::new()
            .post(format!("{base}/api/sessions/{id}/call"))
            .json(&json!({"name":"echo"}));
        let response = match token {
            Some(token) => response.bearer_auth(token),
            None => response,
        };
        assert_eq!(response.send().await.unwrap().status(), 401, "{token:?}");
    }
    let listed: Value = api_get(base, Some(AGENT_TOKEN)).await.json().await.unwrap();
    assert_eq!(listed[0]["id"], id.as_str(), "{listed}");
    let result = api_call(base, &id, Some(AGENT_TOKEN), json!({"name":"echo"})).await;
    assert_eq!(result_text(&result), "page ran", "{result}");

    // MCP: no token, the page token → 401.
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}});
    for token in [None, Some(PAGE_TOKEN)] {
        let mut request = reqwest::Client::new()
            .post(format!("{base}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        assert_eq!(request.send().await.unwrap().status(), 401, "{token:?}");
    }

    // DNS rebinding: a foreign name in `Host` is refused on every route, even with the token.
    let port = base.rsplit(':').next().unwrap();
    for path in ["/api/sessions", "/mcp", "/ws", "/", "/pkg/client_tools.js"] {
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: rebound.evil.example:{port}\r\nAuthorization: Bearer \
             {AGENT_TOKEN}\r\nConnection: close\r\n\r\n"
        );
        assert_eq!(raw_http(base, &head).await, 403, "{path}");
    }
    let loopback = format!(
        "GET /api/sessions HTTP/1.1\r\nHost: localhost:{port}\r\nAuthorization: Bearer \
         {AGENT_TOKEN}\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(raw_http(base, &loopback).await, 200);

    // Another site in the user's browser: a foreign `Origin` is refused, the bridge's own is not.
    let from = |origin: &str| {
        reqwest::Client::new()
            .get(format!("{base}/api/sessions"))
            .bearer_auth(AGENT_TOKEN)
            .header("origin", origin)
            .send()
    };
    assert_eq!(from("https://evil.example").await.unwrap().status(), 403);
    assert_eq!(from("null").await.unwrap().status(), 403);
    assert_eq!(from(base).await.unwrap().status(), 200);
    let post_from = |path: &str, body: &Value| {
        reqwest::Client::new()
            .post(format!("{base}{path}"))
            .bearer_auth(AGENT_TOKEN)
            .header("origin", "https://evil.example")
            .header("accept", "application/json, text/event-stream")
            .json(body)
            .send()
    };
    let call = json!({"name":"echo"});
    let path = format!("/api/sessions/{id}/call");
    assert_eq!(post_from(&path, &call).await.unwrap().status(), 403);
    assert_eq!(post_from("/mcp", &init).await.unwrap().status(), 403);
}

/// Attack 5, page side: the page credential is its own (not the agent's), checked in the first
/// frame, and a token in the URL counts for nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_need_the_page_token_in_their_first_frame() {
    let bridge = BridgeOnly::start(with_tokens()).await;
    for token in [None, Some(AGENT_TOKEN), Some("wrong")] {
        let params = ConnectParams {
            token: token.map(str::to_owned),
            resume_secret: None,
        };
        match RawPage::connect(&bridge.ws_url, &params).await {
            ConnectOutcome::Refused(code, message) => {
                assert_eq!(code, refusal::UNAUTHORIZED, "{message}");
                assert!(message.contains("page token"), "{message}");
            }
            ConnectOutcome::Accepted(page) => panic!("{token:?} was accepted: {page:?}"),
        }
    }
    // A token in the URL is refused before the upgrade (credentials never travel in a URL).
    let in_url = format!("{}?token={PAGE_TOKEN}", bridge.ws_url);
    let refused = tokio_tungstenite::connect_async(&in_url).await.unwrap_err();
    assert!(refused.to_string().contains("400"), "{refused}");
    // A first frame that is not the connect request is refused and the socket closed.
    let (mut socket, _) = tokio_tungstenite::connect_async(&bridge.ws_url)
        .await
        .unwrap();
    futures_util::SinkExt::send(
        &mut socket,
        tokio_tungstenite::tungstenite::Message::Text(
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.into(),
        ),
    )
    .await
    .unwrap();
    let answer = client_tools_e2e::raw_page::next_json(&mut socket)
        .await
        .unwrap();
    assert_eq!(answer["error"]["code"], refusal::BAD_HANDSHAKE, "{answer}");
    assert!(matches!(
        RawPage::connect(&bridge.ws_url, &page_token()).await,
        ConnectOutcome::Accepted(_)
    ));
}

/// Attack 5, in the browser: the SDK's WebSocket request carries neither the page token nor the
/// session id or secret in its URL (a recording proxy sees the upgrade request as sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sdk_sends_no_credential_in_a_url() {
    let proxy = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_port = proxy.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::<String>::new()));
    let recorded = heads.clone();
    tokio::spawn(async move {
        while let Ok((mut browser, _)) = proxy.accept().await {
            let recorded = recorded.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if browser.read_exact(&mut byte).await.is_err() {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                // The page is served by the bridge: its origin is where to forward to.
                let origin = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Origin: http://"))
                    .unwrap()
                    .to_owned();
                recorded.lock().unwrap().push(head.clone());
                let mut bridge = TcpStream::connect(origin.trim()).await.unwrap();
                bridge.write_all(head.as_bytes()).await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut browser, &mut bridge).await;
            });
        }
    });
    let page = format!("mcp.html?endpoint=ws://127.0.0.1:{proxy_port}/ws#token={PAGE_TOKEN}");
    let stack = Stack::start(&page, with_tokens()).await;
    let secret_free = |head: &String| {
        let request_line = head.lines().next().unwrap_or_default();
        request_line == "GET /ws HTTP/1.1"
            && !head.contains(PAGE_TOKEN)
            && !head.contains(stack.page.id())
    };
    let heads = heads.lock().unwrap().clone();
    assert!(!heads.is_empty());
    assert!(heads.iter().all(secret_free), "{heads:#?}");
}

/// Attack 2: taking over a live page session. Naming its id, guessing, or even holding its
/// secret while its page is alive (a duplicated tab) gets the newcomer a new session; the page
/// keeps its own. Only a silent connection is replaced, explicitly (close 4000).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_session_cannot_be_taken_over() {
    let bridge = BridgeOnly::start(BridgeConfig::default()).await;
    let victim =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), echo_tool()).await;
    let victim_id = victim.id().to_owned();
    let victim_secret = victim.session.resume_secret.clone();
    assert!(victim_id.len() == 32 && victim_id.bytes().all(|b| b.is_ascii_hexdigit()));
    let _victim = serve_forever(victim, "the real page ran");

    let claims = [
        // The old attack: the id in the URL.
        (format!("{}?session={victim_id}", bridge.ws_url), None),
        // The id offered as if it were the secret; a guessed secret.
        (bridge.ws_url.clone(), Some(victim_id.clone())),
        (bridge.ws_url.clone(), Some("ab".repeat(32))),
        // The real secret while the real page answers: a duplicated tab.
        (bridge.ws_url.clone(), Some(victim_secret.clone())),
    ];
    for (url, secret) in claims {
        let params = ConnectParams {
            token: None,
            resume_secret: secret.clone(),
        };
        let mut intruder = RawPage::connect_with_tools(&url, &params, echo_tool()).await;
        assert_ne!(intruder.id(), victim_id, "{secret:?}");
        assert!(!intruder.session.resumed, "{secret:?}");
        // The real page still has its session: calls to it run there, and nothing reached the
        // newcomer.
        let result = api_call(&bridge.base_url, &victim_id, None, json!({"name":"echo"})).await;
        assert_eq!(result_text(&result), "the real page ran", "{result}");
        assert!(intruder.frames_before_pong("check").await.is_empty());
        assert!(bridge.bridge.session(&victim_id).unwrap().is_connected());
    }
    let ids: Vec<String> = bridge
        .bridge
        .sessions()
        .iter()
        .map(|s| s.id().to_owned())
        .collect();
    assert_eq!(ids.len(), 5, "{ids:?}");

    // A page whose connection went silent (half-open) is replaced by its secret's holder, and
    // the old connection is told so.
    let mut stale =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), echo_tool()).await;
    let stale_id = stale.id().to_owned();
    let resumed = RawPage::connect_with_tools(&bridge.ws_url, &stale.resume(), echo_tool()).await;
    assert_eq!(resumed.id(), stale_id);
    assert!(resumed.session.resumed);
    let (code, reason) = stale.closed_by_bridge().await.expect("a close frame");
    assert_eq!(code, 4000, "{reason}");
    let _resumed = serve_forever(resumed, "the reloaded page ran");
    let result = api_call(&bridge.base_url, &stale_id, None, json!({"name":"echo"})).await;
    assert_eq!(result_text(&result), "the reloaded page ran", "{result}");
}

/// Attack 3: error ping-pong. A malformed response is never answered, so two sides that cannot
/// read each other's errors fall silent instead of answering each other forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_never_answers_a_response() {
    let bridge = BridgeOnly::start(BridgeConfig::default()).await;
    let mut page =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), echo_tool()).await;
    for frame in [
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#,
        r#"{"jsonrpc":"2.0","id":"nobody-asked","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":7,"error":"not an error object"}"#,
        r#"{"jsonrpc":"1.0","id":null,"result":{}}"#,
    ] {
        page.send_text(frame.to_owned()).await;
        let answered = page.frames_before_pong("after").await;
        assert!(answered.is_empty(), "{frame} was answered: {answered:?}");
    }
    // An answer that would be over the page's frame limit (a method name of almost 1 MiB echoed
    // back in "method not found") is not sent: the bridge never sends what the page would refuse.
    let prefix = r#"{"jsonrpc":"2.0","id":"big","method":""#;
    let method = "m".repeat(MAX_FRAME_BYTES - prefix.len() - 2);
    page.send_text(format!(r#"{prefix}{method}"}}"#)).await;
    let answered = page.frames_before_pong("after").await;
    assert!(answered.is_empty(), "{} frames answered", answered.len());
    // A malformed request still gets its error.
    page.send_text("{".into()).await;
    let answered = page.frames_before_pong("after").await;
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert_eq!(answered[0]["error"]["code"], -32700);
}

/// Attack 4: one oversized or too deeply nested input bricked the session (the page refused the
/// frame, the call waited its whole timeout, then every later call failed at once). Now the call
/// fails alone, at once, naming the limit, and the real page keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_the_page_would_refuse_fails_alone() {
    let stack = Stack::start("board.html", BridgeConfig::default()).await;
    let id = stack.page.id().to_owned();
    let base = &stack.base_url;
    let pad = "x".repeat(1024 * 1024 + 100);
    let big = json!({"name":"read_board_tasks","arguments":{"boardId":"launch","pad":pad},"timeoutMs":300000});
    let result = api_call(base, &id, None, big).await;
    assert_eq!(result["isError"], true, "{result}");
    assert!(result_text(&result).contains("1048576 bytes"), "{result}");

    // 125 arrays: the request body is 127 levels deep (the most serde_json reads), the frame to
    // the page 128 (one more than it reads).
    let mut deep = json!("bottom");
    for _ in 0..125 {
        deep = json!([deep]);
    }
    let nested = json!({"name":"read_board_tasks","arguments":{"boardId":"launch","deep":deep}});
    let result = api_call(base, &id, None, nested).await;
    assert_eq!(result["isError"], true, "{result}");
    assert!(result_text(&result).contains("levels deep"), "{result}");

    let fine = json!({"name":"read_board_tasks","arguments":{"boardId":"launch"}});
    let result = api_call(base, &id, None, fine).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(stack.page.pending_calls(), 0);
}

/// Bounds: connections, sessions, and calls waiting per page, each with its clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_sessions_and_waiting_calls_are_bounded() {
    let bridge = BridgeOnly::start(BridgeConfig {
        limits: Limits {
            max_connections: 3,
            max_sessions: 2,
            max_pending_per_session: 1,
            ..Limits::default()
        },
        ..BridgeConfig::default()
    })
    .await;
    let mut first =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), echo_tool()).await;
    let second =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), echo_tool()).await;
    // Two live sessions: a third page is refused by the session limit...
    match RawPage::connect(&bridge.ws_url, &ConnectParams::default()).await {
        ConnectOutcome::Refused(code, message) => {
            assert_eq!(code, refusal::OVERLOADED, "{message}");
            assert!(message.contains("limit"), "{message}");
        }
        ConnectOutcome::Accepted(page) => panic!("accepted {page:?}"),
    }
    // ...and with three sockets open, a fourth by the connection limit (503 before the upgrade).
    eventually("the refused page's connection ends", || {
        bridge.bridge.connections() == 2
    })
    .await;
    let (_third_socket, _) = tokio_tungstenite::connect_async(&bridge.ws_url)
        .await
        .unwrap();
    eventually("three connections", || bridge.bridge.connections() == 3).await;
    let refused = tokio_tungstenite::connect_async(&bridge.ws_url).await;
    assert!(refused.unwrap_err().to_string().contains("503"));

    // One call waits on the first page (it does not answer); a second one fails at once.
    let id = first.id().to_owned();
    let base = bridge.base_url.clone();
    let waiting = tokio::spawn(async move {
        api_call(&base, &id, None, json!({"name":"echo","timeoutMs":1000})).await
    });
    first
        .next_method("tools/call")
        .await
        .expect("the first call");
    let session = bridge.bridge.session(first.id()).unwrap();
    assert_eq!(session.pending_calls(), 1);
    let result = api_call(&bridge.base_url, first.id(), None, json!({"name":"echo"})).await;
    assert!(result_text(&result).contains("limit 1"), "{result}");
    let timed_out = waiting.await.unwrap();
    assert_eq!(timed_out["isError"], true);
    drop(second);
}

/// Bounds: a page that never sends its connect frame, or goes silent, is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_pages_are_closed() {
    let bridge = BridgeOnly::start(BridgeConfig {
        limits: Limits {
            connect_timeout: Duration::from_millis(300),
            ping_interval: Duration::from_millis(100),
            idle_timeout: Duration::from_millis(600),
            ..Limits::default()
        },
        ..BridgeConfig::default()
    })
    .await;
    let (mut mute, _) = tokio_tungstenite::connect_async(&bridge.ws_url)
        .await
        .unwrap();
    let refused = client_tools_e2e::raw_page::next_json(&mut mute)
        .await
        .unwrap();
    assert_eq!(
        refused["error"]["code"],
        refusal::BAD_HANDSHAKE,
        "{refused}"
    );

    let mut page =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), echo_tool()).await;
    let session = bridge.bridge.session(page.id()).unwrap();
    assert!(session.is_connected());
    // It stops reading (so it answers no ping): the bridge closes it.
    eventually("the silent page is disconnected", || {
        !session.is_connected()
    })
    .await;
    eventually("its connection is closed", || {
        bridge.bridge.connections() == 0
    })
    .await;
    assert!(
        page.closed_by_bridge().await.is_some(),
        "the socket stays open"
    );
}

/// Bounds: a page that sends but never reads fills its outgoing queue, not the bridge's memory:
/// answers past the queue's bound are dropped, and a writer that cannot hand the page a frame for
/// the idle timeout ends the connection (socket, queue and slot together).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_never_reads_is_disconnected() {
    let bridge = BridgeOnly::start(BridgeConfig {
        limits: Limits {
            outgoing_queue_bytes: 256 * 1024,
            idle_timeout: Duration::from_secs(2),
            ping_interval: Duration::from_millis(500),
            ..Limits::default()
        },
        ..BridgeConfig::default()
    })
    .await;
    let mut page =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), echo_tool()).await;
    let session = bridge.bridge.session(page.id()).unwrap();
    // 200 pings with 200 KB ids ask for 40 MB of answers, more than the sockets buffer.
    let pad = "p".repeat(200 * 1024);
    for n in 0..200 {
        let ping = json!({"jsonrpc":"2.0","id":format!("{n}-{pad}"),"method":"ping"});
        if !send_unchecked(&mut page, &ping).await {
            break; // the bridge has let go of the connection already
        }
    }
    // It keeps talking (so it is never idle on the way in) and still never reads: only the way
    // out shows that it is gone.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut n = 0;
    while session.is_connected() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "still connected after 30 s"
        );
        let ping = json!({"jsonrpc":"2.0","id":format!("small-{n}"),"method":"ping"});
        send_unchecked(&mut page, &ping).await;
        n += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    eventually("its connection is closed", || {
        bridge.bridge.connections() == 0
    })
    .await;
}

/// Sends a frame without waiting more than a second or failing on a closed socket: whether it went.
async fn send_unchecked(page: &mut RawPage, frame: &Value) -> bool {
    let text = tokio_tungstenite::tungstenite::Message::Text(frame.to_string().into());
    let sending = futures_util::SinkExt::send(&mut page.socket, text);
    matches!(
        tokio::time::timeout(Duration::from_secs(1), sending).await,
        Ok(Ok(()))
    )
}

/// Sessions: `newest` is the most recently connected live page; a disconnected session expires
/// after the TTL, and its secret then starts a fresh session with the same id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn newest_is_the_latest_live_page_and_gone_sessions_expire() {
    let bridge = BridgeOnly::start(BridgeConfig {
        limits: Limits {
            session_ttl: Duration::from_millis(500),
            ..Limits::default()
        },
        ..BridgeConfig::default()
    })
    .await;
    let older =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), echo_tool()).await;
    let older_id = older.id().to_owned();
    let _older = serve_forever(older, "the older page ran");
    let newer =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), echo_tool()).await;
    let newer_id = newer.id().to_owned();
    let resume_newer = newer.resume();
    let newer = serve_forever(newer, "the newer page ran");
    let call_newest = || api_call(&bridge.base_url, "newest", None, json!({"name":"echo"}));
    assert_eq!(result_text(&call_newest().await), "the newer page ran");
    assert_eq!(bridge.bridge.sessions()[0].id(), newer_id);

    newer.abort(); // the newer tab closes
    eventually("the newer page is disconnected", || {
        bridge
            .bridge
            .session(&newer_id)
            .is_some_and(|s| !s.is_connected())
    })
    .await;
    assert_eq!(result_text(&call_newest().await), "the older page ran");

    eventually("the gone session expires", || {
        bridge.bridge.session(&newer_id).is_none()
    })
    .await;
    let result = api_call(&bridge.base_url, &newer_id, None, json!({"name":"echo"})).await;
    assert!(result_text(&result).contains("no page session"), "{result}");
    assert!(
        bridge.bridge.session(&older_id).is_some(),
        "a live session never expires"
    );
    let back = RawPage::connect(&bridge.ws_url, &resume_newer)
        .await
        .accepted();
    assert_eq!(back.id(), newer_id);
    assert!(!back.session.resumed);
}

/// Bounds: a flood of `list_changed` costs a couple of `tools/list` requests, not one each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_list_refreshes_are_coalesced() {
    let bridge = BridgeOnly::start(BridgeConfig::default()).await;
    let mut page =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), echo_tool()).await;
    for _ in 0..200 {
        page.send_json(&json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}))
            .await;
    }
    let first = page.next_method("tools/list").await.expect("a refresh");
    page.reply(&first, json!({"tools": echo_tool()})).await;
    let mut lists = 1;
    let mut quiet_rounds = 0;
    // Answer refreshes until two ping round trips in a row bring none.
    while quiet_rounds < 2 {
        let frames = page.frames_before_pong("quiet?").await;
        let requests: Vec<&Value> = frames
            .iter()
            .filter(|f| f["method"] == "tools/list")
            .collect();
        if requests.is_empty() {
            quiet_rounds += 1;
            continue;
        }
        quiet_rounds = 0;
        for request in requests {
            lists += 1;
            page.reply(request, json!({"tools": echo_tool()})).await;
        }
    }
    assert!(
        lists <= 2,
        "{lists} tools/list requests for 200 list_changed"
    );
}

/// Bounds: an MCP session that ends leaves no task of the bridge behind (its tool-list announcer
/// stops with it), however long its page stays connected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_mcp_sessions_leave_no_task_behind() {
    let bridge = BridgeOnly::start(BridgeConfig::default()).await;
    let page =
        RawPage::connect_with_tools(&bridge.ws_url, &ConnectParams::default(), echo_tool()).await;
    let _page = serve_forever(page, "page ran");
    let tasks = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let mcp_url = format!("{}/mcp", bridge.base_url);
    // Each request on its own connection (`connection: close`), so no idle HTTP connection task
    // of the client or the server is counted.
    let post = |session: Option<String>, body: Value| {
        let mut request = reqwest::Client::new()
            .post(&mcp_url)
            .header("connection", "close")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let settle = || async {
        let mut last = tasks();
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let now = tasks();
            if now == last {
                return now;
            }
            last = now;
        }
    };
    let baseline = settle().await;
    let mut sessions = Vec::new();
    for n in 0..3 {
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":format!("a{n}"),"version":"1"}}});
        let response = post(None, init).await.unwrap();
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let _ = response.text().await;
        let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        let _ = post(Some(session.clone()), initialized)
            .await
            .unwrap()
            .text()
            .await;
        let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
        let listed = post(Some(session.clone()), list)
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(listed.contains("echo"), "{listed}");
        sessions.push(session);
    }
    assert!(tasks() > baseline, "three live MCP sessions run tasks");
    for session in sessions {
        let ended = reqwest::Client::new()
            .delete(&mcp_url)
            .header("connection", "close")
            .header("mcp-session-id", session)
            .send()
            .await
            .unwrap();
        assert!(ended.status().is_success(), "{}", ended.status());
    }
    // The announcer checks every 500 ms; 5 s tells "stopped with its session" from "stopped when
    // something else happened to wake it".
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tasks() > baseline {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} tasks still alive, {baseline} before the MCP sessions",
            tasks()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
