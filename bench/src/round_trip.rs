//! Round trips through the bridge: the runtime (this process, through the bridge library) calls the
//! trivial `echo` tool of real pages over their WebSockets — latency one call at a time, then the
//! highest sustained rate with many calls in flight.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use client_tools_bridge::{CallOptions, PageSession};
use serde::Serialize;
use serde_json::json;

const CALL_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Serialize)]
pub struct RoundTrip {
    pub pages: usize,
    pub sequential_calls: usize,
    pub seconds_per_level: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
    /// The best rate over the concurrency levels tried, and the level it was reached at.
    pub calls_per_sec: f64,
    pub at_concurrency: usize,
    pub by_concurrency: Vec<Rate>,
    pub errors: u64,
}

#[derive(Serialize)]
pub struct Rate {
    pub concurrency: usize,
    pub calls: u64,
    pub calls_per_sec: f64,
    pub errors: u64,
}

async fn echo(page: &PageSession) -> bool {
    !page
        .call_tool(
            ("echo", json!({ "text": "hello" })),
            CallOptions::new().timeout(CALL_TIMEOUT),
        )
        .await
        .into_result()
        .is_error
}

pub async fn measure(pages: &[Arc<PageSession>], sequential: usize, seconds: f64) -> RoundTrip {
    let mut errors = 0;
    for i in 0..sequential.min(500) {
        errors += u64::from(!echo(&pages[i % pages.len()]).await);
    }
    let mut samples = Vec::with_capacity(sequential);
    for i in 0..sequential {
        let started = Instant::now();
        errors += u64::from(!echo(&pages[i % pages.len()]).await);
        samples.push(started.elapsed().as_secs_f64() * 1e6);
    }
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((q * samples.len() as f64) as usize).min(samples.len() - 1)];
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;

    let mut by_concurrency = Vec::new();
    for concurrency in [8, 32, 128, 512] {
        let rate = sustained(pages, concurrency, seconds).await;
        errors += rate.errors;
        by_concurrency.push(rate);
    }
    let best = by_concurrency
        .iter()
        .max_by(|a, b| a.calls_per_sec.total_cmp(&b.calls_per_sec))
        .expect("at least one level");
    RoundTrip {
        pages: pages.len(),
        sequential_calls: sequential,
        seconds_per_level: seconds,
        p50_us: round1(at(0.5)),
        p99_us: round1(at(0.99)),
        mean_us: round1(mean),
        calls_per_sec: best.calls_per_sec,
        at_concurrency: best.concurrency,
        errors,
        by_concurrency,
    }
}

/// `concurrency` callers, each calling again as soon as its result is back, for `seconds`.
async fn sustained(pages: &[Arc<PageSession>], concurrency: usize, seconds: f64) -> Rate {
    let calls = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|worker| {
            let page = pages[worker % pages.len()].clone();
            let (calls, errors) = (calls.clone(), errors.clone());
            tokio::spawn(async move {
                while Instant::now() < deadline {
                    if !echo(&page).await {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                    calls.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for worker in workers {
        let _ = worker.await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let calls = calls.load(Ordering::Relaxed);
    Rate {
        concurrency,
        calls,
        calls_per_sec: (calls as f64 / elapsed).round(),
        errors: errors.load(Ordering::Relaxed),
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}
