//! `cargo xtask bench` runs this after building the package and the JavaScript references: the SDK
//! in headless Chromium and Firefox against the JavaScript it replaces, the bridge's round trips
//! with 1 and 100 real pages, the bridge's scale with simulated pages (`client-tools-load`, this
//! crate's other binary: src/bin/client-tools-load), and the package size. It writes
//! `BENCHMARKS.md` and `bench/results.json`. A benchmark, not a test: no number here fails anything
//! (the size budget is enforced by `cargo xtask test`).

mod browser;
mod in_page;
mod machine;
mod report;
mod round_trip;
mod server;

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use serde_json::{json, Value};

use browser::Browser;
use server::BenchServer;

#[derive(Parser)]
#[command(about = "Benchmarks of client-tools (run through `cargo xtask bench`)")]
struct Args {
    /// The built package (`cargo xtask build`).
    #[arg(long)]
    pkg: PathBuf,
    /// The benchmark site (bench/www, with vendor/ bundled).
    #[arg(long)]
    www: PathBuf,
    #[arg(long, default_value = "/usr/bin/chromium")]
    chromium: PathBuf,
    /// Firefox; the in-page benchmarks run in it too when given.
    #[arg(long)]
    firefox: Option<PathBuf>,
    /// `client-tools-load` and the bridge binary it starts, for the scale benchmark.
    #[arg(long, requires = "bridge_bin")]
    load_bin: Option<PathBuf>,
    #[arg(long)]
    bridge_bin: Option<PathBuf>,
    /// `nats-server`, for the cluster benchmark (`client-tools-load --nodes 3`).
    #[arg(long, requires = "load_bin")]
    nats_server: Option<PathBuf>,
    /// Sizes measured by xtask (JSON).
    #[arg(long)]
    sizes: Option<PathBuf>,
    /// Hand-written notes (analysis, size history), appended to BENCHMARKS.md.
    #[arg(long)]
    notes: Option<PathBuf>,
    /// Where BENCHMARKS.md and bench/results.json go (the repository root).
    #[arg(long)]
    out: PathBuf,
    /// The command line to print in BENCHMARKS.md.
    #[arg(long, default_value = "cargo xtask bench")]
    command: String,
    /// Fewer iterations (a smoke run).
    #[arg(long)]
    quick: bool,
    /// Measure nothing: write BENCHMARKS.md again from `bench/results.json` under `--out` and the
    /// notes (notes written after a run, a renamed heading), with the budget `cargo xtask test`
    /// enforces now (`--budget-gzip`).
    #[arg(long, requires = "budget_gzip")]
    render_only: bool,
    /// The size budget in bytes (gzip), for `--render-only`.
    #[arg(long)]
    budget_gzip: Option<u64>,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    if let Err(error) = run(&args).await {
        eprintln!("bench: {error}");
        std::process::exit(1);
    }
}

async fn run(args: &Args) -> Result<(), String> {
    if args.render_only {
        return render_again(args);
    }
    let mut browsers = vec![("Chromium", Browser::version(&args.chromium))];
    if let Some(firefox) = &args.firefox {
        browsers.push(("Firefox", Browser::version(firefox)));
    }
    let mut results = json!({
        "command": args.command,
        "machine": machine::describe(&browsers),
    });

    eprintln!("==> Chromium: in-page benchmarks");
    let server = BenchServer::start(args.www.clone(), args.pkg.clone())
        .await
        .map_err(|e| e.to_string())?;
    let page_url = format!("{}/index.html", server.base_url);
    let chromium = Browser::chromium(&args.chromium, &page_url)?;
    let pages = server.wait_for_pages(1, Duration::from_secs(60)).await?;
    results["chromium"] = in_page::run_all(&pages[0], args.quick).await?;

    let (sequential, seconds) = if args.quick { (300, 1.0) } else { (3000, 3.0) };
    eprintln!("==> Round trip through the bridge: 1 page");
    let one = round_trip::measure(&pages[..1], sequential, seconds).await;
    let many = if args.quick { 10 } else { 100 };
    eprintln!("==> Round trip through the bridge: {many} pages (opening more tabs)");
    for _ in 1..many {
        chromium.open_tab(&page_url).await?;
    }
    let pages = server
        .wait_for_pages(many, Duration::from_secs(180))
        .await?;
    let hundred = round_trip::measure(&pages[..many], sequential, seconds).await;
    results["roundTrip"] = json!([one, hundred]);
    drop(chromium);
    drop(server);

    if let Some(firefox) = &args.firefox {
        eprintln!("==> Firefox: in-page benchmarks");
        let server = BenchServer::start(args.www.clone(), args.pkg.clone())
            .await
            .map_err(|e| e.to_string())?;
        let browser = Browser::firefox(firefox, &format!("{}/index.html", server.base_url))?;
        let pages = server.wait_for_pages(1, Duration::from_secs(90)).await?;
        results["firefox"] = in_page::run_all(&pages[0], args.quick).await?;
        drop(browser);
    }

    if let (Some(load), Some(bridge)) = (&args.load_bin, &args.bridge_bin) {
        eprintln!("==> Bridge scale: simulated pages (client-tools-load)");
        results["scale"] = run_load_tool(load, bridge, args.quick, None, None)?;
        eprintln!("==> Guardrails: the same load, the bridge with one evaluated rule (--policy)");
        results["policy"] = run_with_policy(load, bridge, args.quick)?;
        if let Some(nats_server) = &args.nats_server {
            eprintln!("==> Bridge cluster: 3 nodes on NATS, simulated pages (client-tools-load)");
            results["cluster"] = run_load_tool(load, bridge, args.quick, Some(nats_server), None)?;
        }
    }
    if let Some(sizes) = &args.sizes {
        let text =
            std::fs::read_to_string(sizes).map_err(|e| format!("{}: {e}", sizes.display()))?;
        results["size"] = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    }
    let json_path = args.out.join("bench").join("results.json");
    let pretty = serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?;
    std::fs::write(&json_path, pretty + "\n")
        .map_err(|e| format!("{}: {e}", json_path.display()))?;
    write_markdown(args, &results)?;
    eprintln!("==> Wrote {}", json_path.display());
    Ok(())
}

/// `--render-only`: BENCHMARKS.md from the results of the last run, the notes and the budget now.
fn render_again(args: &Args) -> Result<(), String> {
    let json_path = args.out.join("bench").join("results.json");
    let text =
        std::fs::read_to_string(&json_path).map_err(|e| format!("{}: {e}", json_path.display()))?;
    let mut results: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    if let (Some(budget), Some(size)) = (args.budget_gzip, results.get_mut("size")) {
        size["budgetGzip"] = Value::from(budget);
    }
    write_markdown(args, &results)
}

/// BENCHMARKS.md under `--out`: the results and the notes.
fn write_markdown(args: &Args, results: &Value) -> Result<(), String> {
    let history = match &args.notes {
        Some(path) => {
            std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => String::new(),
    };
    let markdown = report::render(results, &history);
    let md_path = args.out.join("BENCHMARKS.md");
    std::fs::write(&md_path, &markdown).map_err(|e| format!("{}: {e}", md_path.display()))?;
    println!("{}", report::summary(results));
    eprintln!("==> Wrote {}", md_path.display());
    Ok(())
}

/// The policy of the guardrails benchmark: one rule on the load's `echo` tool whose condition is
/// evaluated on every call and never holds, so every call still returns its echo.
const POLICY: &str = r#"[[rule]]
id = "no-passwords-in-echo"
tools = ["echo"]
when = 'input.text.contains("password=")'
action = "block"
"#;

/// The scale benchmark's first size again, the bridge started with [`POLICY`]: what an evaluated
/// rule costs per call (report.rs sets it against the run without a policy).
fn run_with_policy(load: &PathBuf, bridge: &PathBuf, quick: bool) -> Result<Value, String> {
    let file =
        std::env::temp_dir().join(format!("client-tools-policy-{}.toml", std::process::id()));
    std::fs::write(&file, POLICY).map_err(|e| format!("{}: {e}", file.display()))?;
    let results = run_load_tool(load, bridge, quick, None, Some(&file));
    let _ = std::fs::remove_file(&file);
    let mut results = results?;
    results["rule"] = Value::from(POLICY);
    Ok(results)
}

/// The scale benchmark on one bridge, or with `nats_server` on a cluster of three nodes; with
/// `policy`, on one bridge with that policy, at the first size only.
fn run_load_tool(
    load: &PathBuf,
    bridge: &PathBuf,
    quick: bool,
    nats_server: Option<&PathBuf>,
    policy: Option<&std::path::Path>,
) -> Result<Value, String> {
    let out = std::env::temp_dir().join(format!("client-tools-load-{}.json", std::process::id()));
    let sessions = match (quick, nats_server.is_some(), policy.is_some()) {
        (true, _, true) => "100",
        (false, _, true) => "1000",
        (true, false, false) => "100,1000",
        (false, false, false) => "1000,10000",
        (true, true, false) => "300",
        (false, true, false) => "3000,9000",
    };
    let mut command = std::process::Command::new(load);
    if let Some(policy) = policy {
        command.arg("--policy").arg(policy);
    }
    if let Some(nats_server) = nats_server {
        command
            .args(["--nodes", "3", "--nats-server"])
            .arg(nats_server);
    }
    let status = command
        .arg("--bridge-bin")
        .arg(bridge)
        .args([
            "--sessions",
            sessions,
            "--seconds",
            if quick { "1" } else { "5" },
            "--json",
        ])
        .arg(&out)
        .status()
        .map_err(|e| format!("could not start {}: {e}", load.display()))?;
    // The tool writes what it measured before failing on errors: keep it (errors are a column).
    let text = std::fs::read_to_string(&out).map_err(|e| {
        format!(
            "{} ({status}) wrote no results to {}: {e}",
            load.display(),
            out.display()
        )
    })?;
    let _ = std::fs::remove_file(&out);
    let mut results: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    results["exitStatus"] = Value::from(status.to_string());
    Ok(results)
}
