//! A page's WebSocket for the bridge's tests of the page as a whole MCP server (`served_*.rs`):
//! connected to `/ws` as the SDK connects (the first frame says who it is), and accepted.

use std::net::SocketAddr;

use client_tools_core::connect::{self, ConnectParams};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub type PageSocket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// The page's socket once the bridge accepted it, and the session id the bridge gave it.
pub async fn connect_page(address: SocketAddr) -> (PageSocket, String) {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{address}/ws"))
        .await
        .unwrap();
    let hello = connect::encode_connect(&ConnectParams {
        token: None,
        resume_secret: None,
    });
    ws.send(Message::Text(hello.into())).await.unwrap();
    let welcome = loop {
        if let Some(Ok(Message::Text(text))) = ws.next().await {
            break serde_json::from_str::<Value>(text.as_str()).unwrap();
        }
    };
    let session = welcome["result"]["sessionId"].as_str().unwrap().to_owned();
    (ws, session)
}
