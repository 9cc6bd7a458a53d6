//! The in-page benchmarks: tools of the benchmark page (bench/www/bench.js), called through the
//! bridge; each returns its measurements as structured content.

use std::sync::Arc;
use std::time::Duration;

use client_tools_bridge::{CallOptions, PageSession};
use serde_json::{json, Value};

/// The longest a page tool may run (SPEC §3 maximum).
const TOOL_TIMEOUT: Duration = Duration::from_secs(300);

/// Calls the page tool `name` and returns its structured result, or the error it reported.
pub async fn run(page: &Arc<PageSession>, name: &str, arguments: Value) -> Result<Value, String> {
    let result = page
        .call_tool((name, arguments), CallOptions::new().timeout(TOOL_TIMEOUT))
        .await
        .into_result();
    if result.is_error {
        return Err(format!("{name} failed in the page: {}", result.text()));
    }
    result
        .structured_content
        .clone()
        .ok_or_else(|| format!("{name} returned no structured result: {}", result.text()))
}

/// Every in-page measurement in one browser.
pub async fn run_all(page: &Arc<PageSession>, quick: bool) -> Result<Value, String> {
    let (iterations, min_ms, runs) = if quick { (200, 50, 3) } else { (2000, 300, 10) };
    eprintln!("    per-call overhead (SDK vs MCP TypeScript SDK Server + ajv)");
    let calls = run(page, "bench_calls", json!({ "iterations": iterations })).await?;
    eprintln!("    validation and compile (SDK vs ajv vs @cfworker/json-schema)");
    let validation = run(page, "bench_validation", json!({ "minMs": min_ms })).await?;
    eprintln!("    start-up, cold and cached");
    let startup = run(page, "bench_startup", json!({ "runs": runs })).await?;
    Ok(json!({ "calls": calls, "validation": validation, "startup": startup }))
}
