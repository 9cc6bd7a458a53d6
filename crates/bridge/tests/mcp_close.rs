//! Closing an MCP session on `/mcp` (raw Streamable HTTP, revision 2025-11-25): `DELETE` with the
//! session's id ends it and is answered `200 OK`, as the transport says for a terminated session
//! and as the official MCP Python SDK expects (it accepts 200, 204 or 405, and logs
//! `Session termination failed` for anything else); the ended session is gone after it.

use client_tools_bridge::{Bridge, BridgeConfig};
use reqwest::{Method, StatusCode};
use serde_json::json;
use tokio::net::TcpListener;

#[tokio::test]
async fn a_deleted_session_is_answered_200_and_ends() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let bridge = Bridge::new(BridgeConfig {
        listen: address,
        ..Default::default()
    });
    tokio::spawn(async move { bridge.serve(listener).await });
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let url = format!("http://{address}/mcp");
    let request = |method: Method, session: Option<&str>| {
        let request = http
            .request(method, &url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        match session {
            Some(session) => request.header("mcp-session-id", session),
            None => request,
        }
    };

    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"close","version":"1"}}});
    let response = request(Method::POST, None)
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let response = request(Method::POST, Some(&session))
        .json(&initialized)
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::ACCEPTED,
        "a notification is still accepted with 202"
    );

    let closed = request(Method::DELETE, Some(&session))
        .send()
        .await
        .unwrap();
    assert_eq!(
        closed.status(),
        StatusCode::OK,
        "DELETE ends the session: 200"
    );

    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
    let after = request(Method::POST, Some(&session))
        .json(&list)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), StatusCode::NOT_FOUND, "the session is gone");
}
