//! `client-tools-load`: how the bridge scales with the number of pages (SPEC §10: scale is measured
//! by benchmarks, not timed tests).
//!
//! For each N: a fresh bridge process (no run inherits another's memory); its resident memory with
//! no page; N simulated pages connected and idle → bytes per idle session; then `echo` calls
//! through the JSON API for `--seconds`, to the session ids the bridge gave the pages → calls/s
//! and latency. A page that fails its handshake or
//! loses its connection, or a bridge that dies, fails the run (exit 1): a number measured on a broken
//! setup is worse than none. Call errors are counted and reported, and also make the exit code 1.

mod bridge_process;
mod call_load;
mod cluster;
mod fleet;
mod process_metrics;
mod simulated_page;
mod stats;
mod token_load;

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::bridge_process::BridgeProcess;
use crate::fleet::Fleet;
use crate::process_metrics::{cpu_time, rss_kb};
use crate::simulated_page::TOOL_NAME;
use crate::stats::Latency;

/// A page's time from connect to answering `tools/list` (the bridge itself allows 10 s for the
/// connect frame).
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// All N pages must be ready within this.
pub(crate) const OPEN_TIMEOUT: Duration = Duration::from_secs(300);
/// Pause before reading memory, so that what was just done (start, handshakes) has settled.
pub(crate) const SETTLE: Duration = Duration::from_secs(1);
/// File descriptors a process needs beyond its connections (std streams, epoll, the runtime…).
const SPARE_FDS: u64 = 64;

/// As in the bridge: glibc's allocator cost this tool 15 % of its CPU, taken from the cores it
/// shares with the bridge it measures.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Measures the bridge with N simulated pages: memory per idle session, tool calls per second.
#[derive(Debug, Parser)]
#[command(name = "client-tools-load", version)]
pub(crate) struct Cli {
    /// The `client-tools-bridge` binary to measure (started once per N).
    #[arg(long)]
    bridge_bin: PathBuf,
    /// Numbers of simulated pages, one run each (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    sessions: Vec<usize>,
    /// How long to drive calls in each run, in seconds.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Calls in flight at once (one keep-alive HTTP connection each).
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Pages between connect and handshake done at once. Keep it below the bridge's listen
    /// backlog (128, the std/mio default): beyond it the accept queue overflows and the kernel's
    /// 1 s SYN retry is measured instead of the bridge.
    #[arg(long, default_value_t = 100)]
    connect_parallel: usize,
    /// Size of each call's arguments as JSON, in bytes.
    #[arg(long, default_value_t = 100)]
    payload_bytes: usize,
    /// Also write the results to this file as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Start the bridge with this token as both `--agent-token` (sent by this tool's HTTP calls as
    /// `Authorization: Bearer`) and `--page-token` (sent by the pages in `clienttools/connect`);
    /// without it the bridge requires no token.
    #[arg(long)]
    token: Option<String>,
    /// Bridge nodes: with more than one, a cluster on NATS (`--nats-server`), the N pages spread
    /// over the nodes and every call made through a node other than its page's (cluster.rs).
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// The `nats-server` binary the cluster runs on (with `--nodes` above 1).
    #[arg(long)]
    nats_server: Option<PathBuf>,
    /// Start the bridge (every node) with this policy (`--policy FILE`, docs/guardrails.md), to
    /// measure what its rules cost per call. The calls must still return the echo.
    #[arg(long)]
    policy: Option<PathBuf>,
    /// Instead of the runs above: what signed tokens cost (token_load.rs) — this many connects
    /// with the static page token, with EdDSA and RS256 JWTs, a flood of as many bad signatures
    /// while good pages connect, and calls by session and by user (through `/api` and `/mcp`) over
    /// half as many users.
    #[arg(long)]
    token_bench: Option<usize>,
}

impl Cli {
    /// The bridge's arguments beyond its address, tokens and cluster: the policy, if any.
    pub(crate) fn bridge_args(&self) -> Vec<String> {
        match &self.policy {
            Some(policy) => vec!["--policy".to_owned(), policy.display().to_string()],
            None => Vec::new(),
        }
    }
}

/// One N's results (the JSON `runs` entries).
#[derive(Debug, Serialize)]
struct Run {
    sessions: usize,
    rss_base_kb: u64,
    rss_idle_kb: u64,
    bytes_per_idle_session: i64,
    connect_seconds: f64,
    calls: u64,
    calls_per_sec: f64,
    p50_us: u64,
    p99_us: u64,
    max_us: u64,
    errors: u64,
    /// CPU time per call (user + system, all threads) of the bridge and of this process (the
    /// pages and the HTTP client): unlike calls/s, it does not depend on what else runs.
    bridge_cpu_us_per_call: f64,
    load_cpu_us_per_call: f64,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let call_time = match Duration::try_from_secs_f64(cli.seconds) {
        Ok(time) if !time.is_zero() => time,
        _ => return fail("--seconds must be a positive number"),
    };
    if cli.sessions.contains(&0) || cli.concurrency == 0 {
        return fail("--sessions and --concurrency must be at least 1");
    }
    let fd_limit = raise_fd_limit();
    if let Some(limit) = fd_limit {
        let largest = cli.sessions.iter().copied().max().unwrap_or(0) as u64;
        let needed = largest + cli.concurrency as u64 + SPARE_FDS;
        if needed > limit {
            return fail(&format!(
                "{largest} sessions need about {needed} open files in this process and as many \
                 in the bridge, but the limit is {limit} (the hard limit, `ulimit -Hn`): raise \
                 it or measure fewer sessions"
            ));
        }
    }
    let mut headers = reqwest::header::HeaderMap::new();
    let token = match cli.token_bench {
        Some(_) => Some(token_load::OPERATOR.to_owned()),
        None => cli.token.clone(),
    };
    if let Some(token) = &token {
        let Ok(mut bearer) = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
        else {
            return fail("--token must be printable ASCII");
        };
        bearer.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, bearer);
    }
    let http = match reqwest::Client::builder()
        .default_headers(headers)
        .pool_max_idle_per_host(cli.concurrency)
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(60))
        .build()
    {
        Ok(http) => http,
        Err(error) => return fail(&format!("building the HTTP client: {error}")),
    };

    let started = Instant::now();
    if let Some(count) = cli.token_bench {
        return match token_load::run(&cli, count, call_time, &http).await {
            Ok(results) => {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&results).unwrap_or_default()
                );
                report(&cli, fd_limit, results, 0, None)
            }
            Err(error) => report(&cli, fd_limit, json!([]), 0, Some(error)),
        };
    }
    if cli.nodes > 1 {
        return cluster::main(&cli, call_time, &http, fd_limit).await;
    }
    let mut runs = Vec::new();
    let mut failure = None;
    for &sessions in &cli.sessions {
        eprintln!("{sessions} sessions: starting a fresh bridge");
        match measure(&cli, sessions, call_time, &http).await {
            Ok(run) => runs.push(run),
            Err(error) => {
                failure = Some(format!("{sessions} sessions: {error}"));
                break;
            }
        }
    }
    print_table(&runs);
    eprintln!("wall time {:.1} s", started.elapsed().as_secs_f64());
    let errors = runs.iter().map(|run| run.errors).sum();
    report(&cli, fd_limit, json!(runs), errors, failure)
}

/// Writes the results (`--json`) and turns the outcome into the exit status: a failed run, or any
/// call that did not return the echo, is a failure.
pub(crate) fn report(
    cli: &Cli,
    fd_limit: Option<u64>,
    runs: Value,
    errors: u64,
    failure: Option<String>,
) -> ExitCode {
    if let Some(path) = &cli.json {
        let report = json!({
            "machine": machine(fd_limit),
            "settings": {
                // Its file name only: the report is committed, the machine's paths are not.
                "bridge_bin": cli.bridge_bin.file_name().map(|name| name.to_string_lossy()),
                "nodes": cli.nodes,
                "seconds": cli.seconds,
                "concurrency": cli.concurrency,
                "connect_parallel": cli.connect_parallel,
                "payload_bytes": cli.payload_bytes,
                "tokens": cli.token.is_some(),
                // Its file name only, as for the binary.
                "policy": cli.policy.as_ref().and_then(|p| p.file_name()).map(|n| n.to_string_lossy()),
            },
            "runs": runs,
        });
        let text = serde_json::to_string_pretty(&report).unwrap_or_default() + "\n";
        if let Err(error) = std::fs::write(path, text) {
            return fail(&format!("writing {}: {error}", path.display()));
        }
    }
    if let Some(failure) = failure {
        return fail(&failure);
    }
    if errors > 0 {
        return fail(&format!(
            "{errors} calls did not return the echo (see above)"
        ));
    }
    ExitCode::SUCCESS
}

/// One N on a fresh bridge, which is killed afterwards whatever happened.
async fn measure(
    cli: &Cli,
    sessions: usize,
    call_time: Duration,
    http: &reqwest::Client,
) -> Result<Run, String> {
    let mut bridge = BridgeProcess::start(
        &cli.bridge_bin,
        cli.token.as_deref(),
        &cli.bridge_args(),
        http,
    )
    .await?;
    let (pid, base_url) = (bridge.pid(), bridge.base_url());
    let outcome = tokio::select! {
        biased;
        death = bridge.died() => Err(death),
        run = measure_on(cli, sessions, call_time, http, pid, &base_url) => run,
    };
    // Pages losing their connections most often means the bridge died: say so if it did.
    let outcome = match outcome {
        Err(error) => {
            tokio::time::sleep(Duration::from_millis(200)).await;
            Err(bridge.exited().unwrap_or(error))
        }
        ok => ok,
    };
    bridge.stop().await;
    outcome
}

async fn measure_on(
    cli: &Cli,
    sessions: usize,
    call_time: Duration,
    http: &reqwest::Client,
    pid: u32,
    base_url: &str,
) -> Result<Run, String> {
    tokio::time::sleep(SETTLE).await;
    let rss_base_kb = rss_kb(pid)?;

    let opening = Instant::now();
    let ws_url = format!("{}/ws", base_url.replacen("http://", "ws://", 1));
    let mut fleet = Fleet::open(
        &ws_url,
        cli.token.as_deref(),
        sessions,
        cli.connect_parallel,
        HANDSHAKE_TIMEOUT,
    );
    tokio::time::timeout(OPEN_TIMEOUT, fleet.all_ready())
        .await
        .map_err(|_| {
            format!(
                "the pages were not all ready within {} s",
                OPEN_TIMEOUT.as_secs()
            )
        })??;
    let connect_seconds = opening.elapsed().as_secs_f64();
    eprintln!("  {sessions} pages ready in {connect_seconds:.2} s");
    let ids: Arc<[String]> = fleet.sessions().into();
    let distinct = ids.iter().collect::<HashSet<_>>().len();
    if distinct != sessions {
        return Err(format!(
            "the bridge gave {sessions} pages only {distinct} distinct session ids"
        ));
    }

    tokio::select! {
        reason = fleet.failure() => return Err(reason),
        _ = tokio::time::sleep(SETTLE) => {}
    }
    let rss_idle_kb = rss_kb(pid)?;
    // Only now: the listing of N sessions is a large response whose buffers the allocator may
    // keep, and they would be counted as session memory.
    tokio::select! {
        reason = fleet.failure() => return Err(reason),
        listed = verify_sessions(http, base_url, &ids) => listed?,
    }

    eprintln!(
        "  driving {} concurrent calls for {:.1} s",
        cli.concurrency,
        call_time.as_secs_f64()
    );
    let cpu_before = (cpu_time(pid)?, cpu_time(std::process::id())?);
    let load = tokio::select! {
        reason = fleet.failure() => return Err(reason),
        load = call_load::drive(http, base_url, ids.clone(), cli.concurrency, call_time, cli.payload_bytes) => load,
    };
    let cpu_after = (cpu_time(pid)?, cpu_time(std::process::id())?);
    drop(fleet);
    let per_call = |before: Duration, after: Duration| {
        round(
            after.saturating_sub(before).as_micros() as f64 / load.calls.max(1) as f64,
            1,
        )
    };
    for sample in &load.error_samples {
        eprintln!("  call error: {sample}");
    }

    let latency = Latency::of(load.latencies_us);
    let grown_bytes = (rss_idle_kb as i64 - rss_base_kb as i64) * 1024;
    Ok(Run {
        sessions,
        rss_base_kb,
        rss_idle_kb,
        bytes_per_idle_session: grown_bytes / sessions.max(1) as i64,
        connect_seconds: round(connect_seconds, 3),
        calls: load.calls,
        calls_per_sec: round(load.calls as f64 / load.elapsed.as_secs_f64(), 1),
        p50_us: latency.p50_us,
        p99_us: latency.p99_us,
        max_us: latency.max_us,
        errors: load.errors,
        bridge_cpu_us_per_call: per_call(cpu_before.0, cpu_after.0),
        load_cpu_us_per_call: per_call(cpu_before.1, cpu_after.1),
    })
}

/// The bridge's own view, `GET /api/sessions`: exactly the pages' N sessions, all connected and
/// listing `echo` (the pages answered `tools/list`; this checks the bridge took the answer in).
pub(crate) async fn verify_sessions(
    http: &reqwest::Client,
    base_url: &str,
    ids: &[String],
) -> Result<(), String> {
    #[derive(Deserialize)]
    struct Listed {
        id: String,
        connected: bool,
        tools: Vec<ListedTool>,
    }
    #[derive(Deserialize)]
    struct ListedTool {
        name: String,
    }
    let sessions = ids.len();
    let ours: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listed: Vec<Listed> = http
            .get(format!("{base_url}/api/sessions"))
            .send()
            .await
            .and_then(|response| response.error_for_status())
            .map_err(|e| format!("GET /api/sessions: {e}"))?
            .json()
            .await
            .map_err(|e| format!("GET /api/sessions: {e}"))?;
        let usable = listed
            .iter()
            .filter(|s| {
                ours.contains(s.id.as_str())
                    && s.connected
                    && s.tools.iter().any(|t| t.name == TOOL_NAME)
            })
            .count();
        if usable == sessions && listed.len() == sessions {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the bridge lists {} sessions, {usable} of them the pages' own, connected with the \
                 `{TOOL_NAME}` tool; expected {sessions}",
                listed.len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Raises this process's open-file soft limit to the hard limit (the bridge inherits it) and
/// returns the limit now in force (`None`: unlimited or unknown).
#[cfg(unix)]
fn raise_fd_limit() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        if let Err(error) = setrlimit(Resource::Nofile, raised) {
            eprintln!("could not raise the open-file limit: {error}");
        }
    }
    getrlimit(Resource::Nofile).current
}

#[cfg(not(unix))]
fn raise_fd_limit() -> Option<u64> {
    None
}

fn print_table(runs: &[Run]) {
    if runs.is_empty() {
        return;
    }
    println!(
        "{:>9} {:>10} {:>13} {:>13} {:>15} {:>9} {:>10} {:>8} {:>8} {:>9} {:>7} {:>18} {:>16}",
        "sessions",
        "connect s",
        "rss base KiB",
        "rss idle KiB",
        "B/idle session",
        "calls",
        "calls/s",
        "p50 µs",
        "p99 µs",
        "max µs",
        "errors",
        "bridge CPU µs/call",
        "load CPU µs/call"
    );
    for run in runs {
        println!(
            "{:>9} {:>10.2} {:>13} {:>13} {:>15} {:>9} {:>10.0} {:>8} {:>8} {:>9} {:>7} {:>18.1} {:>16.1}",
            run.sessions,
            run.connect_seconds,
            run.rss_base_kb,
            run.rss_idle_kb,
            run.bytes_per_idle_session,
            run.calls,
            run.calls_per_sec,
            run.p50_us,
            run.p99_us,
            run.max_us,
            run.errors,
            run.bridge_cpu_us_per_call,
            run.load_cpu_us_per_call
        );
    }
}

/// What the numbers were measured on (Linux `/proc`; fields missing elsewhere).
pub(crate) fn machine(fd_limit: Option<u64>) -> Value {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let field = |text: &str, name: &str| {
        text.lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.split_once(':'))
            .map(|(_, value)| value.trim().to_owned())
    };
    let cpuinfo = read("/proc/cpuinfo");
    let meminfo = read("/proc/meminfo");
    json!({
        "os": std::env::consts::OS,
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "cpu": field(&cpuinfo, "model name"),
        "cpus": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "memory": field(&meminfo, "MemTotal"),
        "open_file_limit": fd_limit,
    })
}

pub(crate) fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

pub(crate) fn fail(message: &str) -> ExitCode {
    eprintln!("client-tools-load: {message}");
    ExitCode::FAILURE
}
