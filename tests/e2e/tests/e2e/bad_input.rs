//! Bad input never breaks a side (issue: call lifecycle). A bare WebSocket server plays a hostile
//! runtime towards a real page; a bare WebSocket client plays a misbehaving page towards the bridge.
//! Each malformed frame gets its JSON-RPC error, and the connection stays up.

use std::time::Duration;

use client_tools_bridge::{Bridge, BridgeConfig};
use client_tools_core::connect::{self, ConnectParams};
use client_tools_core::protocol::{code, MAX_FRAME_BYTES};
use client_tools_e2e::raw_page::RawPage;
use client_tools_e2e::{eventually, Stack};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// The next JSON frame; `None` if nothing arrives within 10 s.
async fn next_json<S>(socket: &mut S) -> Option<Value>
where
    S: StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .ok()??;
        if let Ok(Message::Text(text)) = message {
            let frame: Option<Value> = serde_json::from_str(text.as_str()).ok();
            // The page's report of its visibility (SPEC §13) comes unasked, after the connect.
            if frame
                .as_ref()
                .is_some_and(|f| f["method"] == "clienttools/activity")
            {
                continue;
            }
            return frame;
        }
    }
}

/// Sends `frame` and returns the error code of the answer.
async fn error_code_for(socket: &mut Socket, frame: String) -> i64 {
    socket.send(Message::Text(frame.into())).await.unwrap();
    let answer = next_json(socket).await.expect("an answer");
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_runtime_cannot_break_the_page() {
    let runtime = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("ws://{}/", runtime.local_addr().unwrap());
    // The stack's bridge only serves the page and the package here; the page talks to `runtime`.
    let page_url = format!("raw.html?endpoint={endpoint}");
    let stack = tokio::spawn(async move { Stack::start_page_only(&page_url).await });
    let (tcp, _) = tokio::time::timeout(Duration::from_secs(60), runtime.accept())
        .await
        .expect("the page connected")
        .unwrap();
    let mut socket = tokio_tungstenite::accept_async(tcp).await.unwrap();
    // The page opens with `clienttools/connect`; this runtime accepts it.
    let hello = next_json(&mut socket).await.expect("the connect frame");
    assert_eq!(hello["method"], connect::CONNECT, "{hello}");
    assert_eq!(
        hello["params"],
        json!({}),
        "no token, no secret yet: {hello}"
    );
    let welcome = json!({"jsonrpc":"2.0","id":hello["id"],"result":{
        "sessionId":"0123456789abcdef0123456789abcdef","resumeSecret":"ab".repeat(32),"resumed":false}});
    socket
        .send(Message::Text(welcome.to_string().into()))
        .await
        .unwrap();

    // Malformed responses (what a confused runtime answers to an error) are never answered: the
    // next frame the page sends is the answer to the ping that follows them.
    for response in [
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}"#,
        r#"{"jsonrpc":"2.0","id":"never-sent","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":4,"error":"not an error object"}"#,
    ] {
        socket.send(Message::Text(response.into())).await.unwrap();
        socket
            .send(Message::Text(
                r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#.into(),
            ))
            .await
            .unwrap();
        let next = next_json(&mut socket).await.expect("the ping's answer");
        assert_eq!(next["id"], "after", "{response} was answered: {next}");
    }

    assert_eq!(
        error_code_for(&mut socket, "{".into()).await,
        code::PARSE_ERROR
    );
    assert_eq!(
        error_code_for(&mut socket, "[1,2]".into()).await,
        code::INVALID_REQUEST
    );
    assert_eq!(
        error_code_for(
            &mut socket,
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#.into()
        )
        .await,
        code::INVALID_REQUEST
    );
    assert_eq!(
        error_code_for(
            &mut socket,
            r#"{"jsonrpc":"2.0","id":2,"method":"no/such"}"#.into()
        )
        .await,
        code::METHOD_NOT_FOUND
    );
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(error_code_for(&mut socket, deep).await, code::PARSE_ERROR);
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(MAX_FRAME_BYTES)
    );
    assert_eq!(
        error_code_for(&mut socket, huge).await,
        code::INVALID_REQUEST
    );

    // `__proto__` in agent input stays plain data inside the page.
    let call = json!({"jsonrpc":"2.0","id":"p1","method":"tools/call","params":{
        "name":"inspect","arguments":{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}}});
    socket
        .send(Message::Text(call.to_string().into()))
        .await
        .unwrap();
    let answer = next_json(&mut socket).await.expect("an answer");
    let seen = &answer["result"]["structuredContent"];
    assert_eq!(seen["polluted"], false, "{answer}");
    assert_eq!(seen["prototypeIntact"], true, "{answer}");

    // Still connected: a valid request is answered.
    socket
        .send(Message::Text(
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#.into(),
        ))
        .await
        .unwrap();
    let list = next_json(&mut socket).await.expect("an answer");
    assert_eq!(list["result"]["tools"][0]["name"], "inspect");
    drop(stack);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misbehaving_page_cannot_break_the_bridge() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let bridge = Bridge::new(BridgeConfig {
        listen: address,
        ..BridgeConfig::default()
    });
    let serving = bridge.clone();
    tokio::spawn(async move { serving.serve(listener).await });

    let ws_url = format!("ws://{address}/ws");
    let RawPage {
        socket: mut page,
        session,
    } = RawPage::connect(&ws_url, &ConnectParams::default())
        .await
        .accepted();
    // The bridge opens with `initialize`; the fake page answers garbage first.
    let initialize = next_json(&mut page).await.expect("initialize");
    assert_eq!(initialize["method"], "initialize");
    for (frame, expected) in [
        ("{".to_owned(), code::PARSE_ERROR),
        ("42".to_owned(), code::INVALID_REQUEST),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage"}"#.to_owned(),
            code::METHOD_NOT_FOUND,
        ),
        (
            format!("{}{}", "{\"a\":".repeat(100_000), "}".repeat(100_000)),
            code::PARSE_ERROR,
        ),
        ("x".repeat(MAX_FRAME_BYTES + 10), code::INVALID_REQUEST),
    ] {
        page.send(Message::Text(frame.into())).await.unwrap();
        let answer = next_json(&mut page).await.expect("an answer");
        assert_eq!(answer["error"]["code"], expected, "{answer}");
    }
    // Still connected: it answers `initialize` properly and is listed.
    let id = initialize["id"].clone();
    let reply = json!({"jsonrpc":"2.0","id":id,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"raw","version":"0"}}});
    page.send(Message::Text(reply.to_string().into()))
        .await
        .unwrap();
    let session = bridge.session(&session.session_id).unwrap();
    eventually("the misbehaving page is still connected", || {
        session.is_connected()
    })
    .await;
}
