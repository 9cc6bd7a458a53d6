//! `--nodes 3 --nats-server BIN`: the bridge as a cluster (SPEC §9 *Cluster*). For each N: a fresh
//! NATS server and fresh bridge nodes joined to it, N simulated pages spread evenly over the
//! nodes, then
//! - the hop: one call at a time to the pages of node 1, through node 1 itself (local) and through
//!   node 2 (across NATS): p50/p99 each, and their difference;
//! - the load: calls to every node's pages through the next node, `--concurrency` in flight in
//!   all → calls/s across nodes;
//! - memory: the nodes' resident memory, idle, per page session.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;
use tokio::process::{Child, Command};

use crate::bridge_process::BridgeProcess;
use crate::call_load::{self, CallLoad};
use crate::fleet::Fleet;
use crate::process_metrics::{cpu_time, rss_kb};
use crate::stats::Latency;
use crate::{fail, report, round, verify_sessions, Cli, HANDSHAKE_TIMEOUT, OPEN_TIMEOUT, SETTLE};

/// One N's results on the cluster (the JSON `runs` entries with `--nodes`).
#[derive(Debug, Serialize)]
struct ClusterRun {
    sessions: usize,
    nodes: usize,
    /// All nodes together.
    rss_base_kb: u64,
    rss_idle_kb: u64,
    bytes_per_idle_session: i64,
    connect_seconds: f64,
    /// One call in flight, to node 1's pages: through node 1, and through node 2.
    local_p50_us: u64,
    local_p99_us: u64,
    cross_p50_us: u64,
    cross_p99_us: u64,
    /// Under load, every call across nodes.
    calls: u64,
    calls_per_sec: f64,
    p50_us: u64,
    p99_us: u64,
    errors: u64,
    /// CPU time per call under load: all bridge nodes together, and the NATS server.
    bridge_cpu_us_per_call: f64,
    nats_cpu_us_per_call: f64,
}

pub async fn main(
    cli: &Cli,
    call_time: Duration,
    http: &reqwest::Client,
    fd_limit: Option<u64>,
) -> ExitCode {
    let Some(nats_server) = &cli.nats_server else {
        return fail("--nodes above 1 needs --nats-server (the nats-server binary)");
    };
    let mut runs = Vec::new();
    let mut failure = None;
    for &sessions in &cli.sessions {
        eprintln!(
            "{sessions} sessions on {} nodes: a fresh NATS server and fresh bridges",
            cli.nodes
        );
        match measure(cli, nats_server, sessions, call_time, http).await {
            Ok(run) => runs.push(run),
            Err(error) => {
                failure = Some(format!("{sessions} sessions: {error}"));
                break;
            }
        }
    }
    for run in &runs {
        println!(
            "{} sessions / {} nodes: idle {} B/session; one call in flight: local p50 {} µs p99 {} µs, \
             across nodes p50 {} µs p99 {} µs; under load {:.0} calls/s p50 {} µs p99 {} µs, \
             {} errors; CPU/call bridges {:.1} µs, NATS {:.1} µs",
            run.sessions,
            run.nodes,
            run.bytes_per_idle_session,
            run.local_p50_us,
            run.local_p99_us,
            run.cross_p50_us,
            run.cross_p99_us,
            run.calls_per_sec,
            run.p50_us,
            run.p99_us,
            run.errors,
            run.bridge_cpu_us_per_call,
            run.nats_cpu_us_per_call
        );
    }
    let errors = runs.iter().map(|run| run.errors).sum();
    report(cli, fd_limit, json!(runs), errors, failure)
}

async fn measure(
    cli: &Cli,
    nats_server: &Path,
    sessions: usize,
    call_time: Duration,
    http: &reqwest::Client,
) -> Result<ClusterRun, String> {
    let (mut nats, nats_url) = start_nats(nats_server).await?;
    let nats_pid = nats.id().ok_or("nats-server exited at once")?;
    let mut nodes = Vec::new();
    let mut outcome = Ok(());
    for _ in 0..cli.nodes {
        let mut args = vec!["--nats".to_owned(), nats_url.clone()];
        args.extend(cli.bridge_args());
        match BridgeProcess::start(&cli.bridge_bin, cli.token.as_deref(), &args, http).await {
            Ok(node) => nodes.push(node),
            Err(error) => {
                outcome = Err(error);
                break;
            }
        }
    }
    let run = match outcome {
        Ok(()) => measure_on(cli, &nodes, nats_pid, sessions, call_time, http).await,
        Err(error) => Err(error),
    };
    let run = run.map_err(|error| {
        let dead: Vec<String> = nodes.iter_mut().filter_map(|node| node.exited()).collect();
        if dead.is_empty() {
            error
        } else {
            format!("{error}; {}", dead.join("; "))
        }
    });
    for node in nodes {
        node.stop().await;
    }
    let _ = nats.kill().await;
    run
}

async fn measure_on(
    cli: &Cli,
    nodes: &[BridgeProcess],
    nats_pid: u32,
    sessions: usize,
    call_time: Duration,
    http: &reqwest::Client,
) -> Result<ClusterRun, String> {
    tokio::time::sleep(SETTLE).await;
    let rss = || -> Result<u64, String> { nodes.iter().map(|node| rss_kb(node.pid())).sum() };
    let rss_base_kb = rss()?;
    let opening = Instant::now();
    let mut fleets = Vec::new();
    for (index, node) in nodes.iter().enumerate() {
        let count = sessions / nodes.len() + usize::from(index < sessions % nodes.len());
        let ws_url = format!("{}/ws", node.base_url().replacen("http://", "ws://", 1));
        let parallel = (cli.connect_parallel / nodes.len()).max(1);
        fleets.push(Fleet::open(
            &ws_url,
            cli.token.as_deref(),
            count,
            parallel,
            HANDSHAKE_TIMEOUT,
        ));
    }
    for fleet in &mut fleets {
        tokio::time::timeout(OPEN_TIMEOUT, fleet.all_ready())
            .await
            .map_err(|_| {
                format!(
                    "the pages were not all ready within {} s",
                    OPEN_TIMEOUT.as_secs()
                )
            })??;
    }
    let connect_seconds = opening.elapsed().as_secs_f64();
    eprintln!("  {sessions} pages ready in {connect_seconds:.2} s");
    tokio::time::sleep(SETTLE).await;
    let rss_idle_kb = rss()?;
    let ids: Vec<Arc<[String]>> = fleets.iter().map(|f| f.sessions().into()).collect();
    // Every node lists every page of the cluster (the directory), connected, with its tool.
    let all: Vec<String> = ids.iter().flat_map(|ids| ids.iter().cloned()).collect();
    for node in nodes {
        verify_sessions(http, &node.base_url(), &all).await?;
    }

    let hop_time = (call_time / 2).max(Duration::from_millis(500));
    eprintln!("  one call at a time to node 1's pages: through node 1, then through node 2");
    let local = call_load::drive(
        http,
        &nodes[0].base_url(),
        ids[0].clone(),
        1,
        hop_time,
        cli.payload_bytes,
    )
    .await;
    let cross = call_load::drive(
        http,
        &nodes[1].base_url(),
        ids[0].clone(),
        1,
        hop_time,
        cli.payload_bytes,
    )
    .await;

    eprintln!(
        "  driving {} concurrent calls across nodes for {:.1} s",
        cli.concurrency,
        call_time.as_secs_f64()
    );
    let cpu = || -> Result<(Duration, Duration), String> {
        let bridges = nodes
            .iter()
            .map(|node| cpu_time(node.pid()))
            .sum::<Result<Duration, _>>()?;
        Ok((bridges, cpu_time(nats_pid)?))
    };
    let before = cpu()?;
    let mut loads = tokio::task::JoinSet::new();
    for (index, ids) in ids.iter().enumerate() {
        let through = nodes[(index + 1) % nodes.len()].base_url();
        let (http, ids) = (http.clone(), ids.clone());
        let concurrency = (cli.concurrency / nodes.len()).max(1);
        let payload = cli.payload_bytes;
        loads.spawn(async move {
            call_load::drive(&http, &through, ids, concurrency, call_time, payload).await
        });
    }
    let mut load = CallLoad::default();
    while let Some(joined) = loads.join_next().await {
        let part = joined.map_err(|error| format!("a call driver failed: {error}"))?;
        load.calls += part.calls;
        load.errors += part.errors;
        load.elapsed = load.elapsed.max(part.elapsed);
        load.latencies_us.extend(part.latencies_us);
        load.error_samples.extend(part.error_samples);
    }
    let after = cpu()?;
    for sample in local
        .error_samples
        .iter()
        .chain(&cross.error_samples)
        .chain(&load.error_samples)
    {
        eprintln!("  call error: {sample}");
    }
    let per_call = |before: Duration, after: Duration| {
        round(
            after.saturating_sub(before).as_micros() as f64 / load.calls.max(1) as f64,
            1,
        )
    };
    let (local_latency, cross_latency) = (
        Latency::of(local.latencies_us),
        Latency::of(cross.latencies_us),
    );
    let latency = Latency::of(load.latencies_us);
    Ok(ClusterRun {
        sessions,
        nodes: nodes.len(),
        rss_base_kb,
        rss_idle_kb,
        bytes_per_idle_session: (rss_idle_kb as i64 - rss_base_kb as i64) * 1024
            / sessions.max(1) as i64,
        connect_seconds: round(connect_seconds, 3),
        local_p50_us: local_latency.p50_us,
        local_p99_us: local_latency.p99_us,
        cross_p50_us: cross_latency.p50_us,
        cross_p99_us: cross_latency.p99_us,
        calls: load.calls,
        calls_per_sec: round(load.calls as f64 / load.elapsed.as_secs_f64().max(1e-9), 1),
        p50_us: latency.p50_us,
        p99_us: latency.p99_us,
        errors: load.errors + local.errors + cross.errors,
        bridge_cpu_us_per_call: per_call(before.0, after.0),
        nats_cpu_us_per_call: per_call(before.1, after.1),
    })
}

/// A NATS server on a free loopback port; returns once it accepts connections.
async fn start_nats(binary: &Path) -> Result<(Child, String), String> {
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map_err(|e| format!("finding a free port: {e}"))?
        .port();
    let mut child = Command::new(binary)
        .args(["-a", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", binary.display()))?;
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let started = Instant::now();
    while std::net::TcpStream::connect(address).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("nats-server exited: {status}"));
        }
        if started.elapsed() > Duration::from_secs(10) {
            return Err("nats-server did not listen within 10 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok((child, format!("nats://{address}")))
}
