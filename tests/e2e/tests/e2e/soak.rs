//! Soak: many calls through the bridge to one real page while its connection is cut at random.
//! Every call must end with exactly one outcome, no call may be lost, no handler may run twice.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use client_tools_bridge::{BridgeConfig, CallOptions};
use client_tools_e2e::Stack;
use futures_util::StreamExt;
use serde_json::json;

const CALLS: u64 = 10_000;
const CONCURRENCY: usize = 64;
const BURST: usize = 1_000;
const TIMEOUT: Duration = Duration::from_secs(30);

/// A tiny deterministic generator, so a failing run can be replayed.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_calls_with_random_disconnects() {
    let stack = Stack::start("faults.html", BridgeConfig::default()).await;
    let page = stack.page.clone();

    // 1 000 calls in flight at once.
    let burst = futures_util::future::join_all((0..BURST).map(|_| {
        let page = page.clone();
        async move {
            page.call_tool(
                ("work", json!({"waitMs": 200, "key": "burst"})),
                CallOptions::new().timeout(TIMEOUT),
            )
            .await
            .into_result()
        }
    }))
    .await;
    let burst_ok = burst.iter().filter(|r| !r.is_error).count();
    assert_eq!(
        burst_ok,
        BURST,
        "{:?}",
        burst.iter().find(|r| r.is_error).map(|r| r.text())
    );

    // 10 000 calls, 64 at a time, while the connection is dropped every 300–700 ms.
    let done = Arc::new(AtomicBool::new(false));
    let drops = Arc::new(AtomicU64::new(0));
    let chaos = {
        let (page, done, drops) = (page.clone(), done.clone(), drops.clone());
        tokio::spawn(async move {
            let mut seed = 0x9e37_79b9_7f4a_7c15u64;
            while !done.load(Ordering::Relaxed) {
                let pause = 300 + next_random(&mut seed) % 400;
                tokio::time::sleep(Duration::from_millis(pause)).await;
                page.drop_connection();
                drops.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let outcomes: Vec<_> = futures_util::stream::iter(0..CALLS)
        .map(|_| {
            let page = page.clone();
            async move {
                page.call_tool(
                    ("work", json!({"key": "soak"})),
                    CallOptions::new().timeout(TIMEOUT),
                )
                .await
                .into_result()
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    done.store(true, Ordering::Relaxed);
    chaos.await.unwrap();

    let errors: Vec<&str> = outcomes
        .iter()
        .filter(|r| r.is_error)
        .map(|r| r.text())
        .collect();
    let run_numbers: HashSet<u64> = outcomes
        .iter()
        .filter_map(|r| r.structured_content.as_ref()?["run"].as_u64())
        .collect();
    // Wait for the page to be back, then read its own count of handler runs.
    let runs = loop {
        let result = page
            .call_tool(("runs", json!({})), CallOptions::new().timeout(TIMEOUT))
            .await
            .into_result();
        if !result.is_error {
            break result.structured_content.unwrap()["soak"]
                .as_u64()
                .unwrap_or(0);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    println!(
        "soak: {CALLS} calls, {} connection drops: {} results, {} errors, {} distinct runs, page counted {runs} runs; burst: {burst_ok}/{BURST}",
        drops.load(Ordering::Relaxed),
        outcomes.len() - errors.len(),
        errors.len(),
        run_numbers.len(),
    );
    assert_eq!(
        outcomes.len() as u64,
        CALLS,
        "every call ended with one outcome"
    );
    assert!(
        errors.is_empty(),
        "lost calls: {} — first: {:?}",
        errors.len(),
        errors.first()
    );
    assert_eq!(
        run_numbers.len() as u64,
        CALLS,
        "every result came from its own run"
    );
    assert_eq!(runs, CALLS, "no handler ran twice, none was skipped");
}
