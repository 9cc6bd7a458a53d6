//! The complete embedding runtime of docs/api.md, *Calling a tool from Rust*: compiled by every
//! `cargo xtask test` (clippy `--all-targets`), so the documented example stays true.
//! Run it with `cargo run -p client-tools-bridge --example embedding_runtime` and open a page.

use std::time::Duration;

use client_tools_bridge::{Bridge, BridgeConfig, CallEnd, CallEvent, CallOptions};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bridge = Bridge::new(BridgeConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:8787").await?;
    tokio::spawn({
        let bridge = bridge.clone();
        async move { bridge.serve(listener).await }
    });
    let page = bridge
        .wait_for_page(Duration::from_secs(60))
        .await
        .ok_or("no page connected within 60 s")?;

    let (progress_tx, mut progress) = mpsc::channel(16);
    let (events_tx, mut events) = mpsc::channel(16);
    let (stop, stopped) = oneshot::channel::<String>();
    tokio::spawn(async move {
        while let Some(report) = progress.recv().await {
            println!("progress: {report:?}");
        }
    });
    let rounds = page.clone();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            match event {
                CallEvent::Log(message) => println!("log: {}", serde_json::Value::Object(message)),
                // This runtime has no person to ask: it declines every request of the round.
                CallEvent::Input(round) => {
                    let declined: serde_json::Map<_, _> = round
                        .requests
                        .keys()
                        .map(|key| (key.clone(), json!({"action": "decline"})))
                        .collect();
                    rounds.answer_round(&round.id, Ok(json!({"inputResponses": declined})));
                }
            }
        }
    });
    let _keep_cancel_button = stop; // `stop.send("the user pressed stop".into())` cancels the call

    let options = CallOptions::new()
        .timeout(Duration::from_secs(30))
        .progress(progress_tx)
        .events(events_tx)
        .cancel(async move {
            stopped
                .await
                .unwrap_or_else(|_| "the runtime stopped".into())
        });
    match page
        .call_tool(("read_board_tasks", json!({"boardId": "launch"})), options)
        .await
    {
        CallEnd::Result(result) if result.is_error => eprintln!("failed: {}", result.text()),
        CallEnd::Result(result) => println!("result: {:?}", result.structured_content),
        CallEnd::PageError(error) => eprintln!("the page needs a capability: {}", error.message),
        CallEnd::Cancelled => eprintln!("cancelled"),
    }
    Ok(())
}
