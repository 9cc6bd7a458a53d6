//! `cargo xtask bench`: builds what the benchmarks need, then runs the `client-tools-bench` driver
//! (bench/src), which writes BENCHMARKS.md and bench/results.json.
//!
//! Needs: the package (release build), the JavaScript references bundled for the browser
//! (bench/js → bench/www/vendor), the bridge binary and the bench crate's two binaries (the driver
//! and `client-tools-load`, bench/src/bin/client-tools-load: release builds for a full run, debug
//! builds for `--quick`), the browsers.

use std::path::Path;
use std::process::Command;

use crate::build::{self, Size, SIZE_BUDGET_GZIP};
use crate::install::{ensure_browsers, ensure_nats_server, ensure_npm_project, Browsers};
use crate::run::run;
use crate::size;
use crate::wasm::WasmCargo;
use crate::{root, step, Result};

pub fn bench(args: &[String]) -> Result {
    let quick = match args {
        [] => false,
        [flag] if flag == "--quick" => true,
        [flag] if flag == "--render" => return render(),
        _ => {
            return Err(format!(
                "unknown arguments {args:?}; usage: cargo xtask bench [--quick | --render]"
            ))
        }
    };
    let browsers = ensure_browsers()?;
    let pkg = build::build_with(&WasmCargo::detect()?)?;
    run_benchmarks(&browsers, &pkg, quick, &root())
}

/// `cargo xtask bench --render`: BENCHMARKS.md written again from `bench/results.json` and
/// `bench/notes.md` (notes written after the run), with the size budget enforced now; nothing is
/// measured.
fn render() -> Result {
    // Rendering measures nothing: the debug build does.
    step("Building the benchmark driver");
    run(Command::new(env!("CARGO")).current_dir(root()).args([
        "build",
        "-p",
        "client-tools-bench",
        "--bin",
        "client-tools-bench",
    ]))?;
    step("Writing BENCHMARKS.md from bench/results.json and bench/notes.md");
    run(Command::new(root().join("target/debug/client-tools-bench"))
        .current_dir(root())
        .arg("--render-only")
        .args(["--budget-gzip", &SIZE_BUDGET_GZIP.to_string()])
        .arg("--pkg")
        .arg(root().join("pkg"))
        .arg("--www")
        .arg(root().join("bench/www"))
        .arg("--notes")
        .arg(root().join("bench/notes.md"))
        .arg("--out")
        .arg(root()))
}

/// Bundles the references, builds the native binaries and runs the driver, which writes
/// `BENCHMARKS.md` and `bench/results.json` under `out`.
pub fn run_benchmarks(browsers: &Browsers, pkg: &Path, quick: bool, out: &Path) -> Result {
    let js = root().join("bench").join("js");
    ensure_npm_project(
        &js,
        "@modelcontextprotocol/sdk",
        "the JavaScript references",
    )?;
    step("Bundling the JavaScript references for the browser (esbuild)");
    run(Command::new("npm")
        .current_dir(&js)
        .args(["run", "--silent", "bundle"]))?;

    // A full run measures optimized binaries. A smoke run (`--quick`, what `cargo xtask test` runs)
    // only shows that every benchmark still runs: it uses the debug builds, the bridge's being the
    // one the end-to-end tests built already, so CI compiles no native release binary.
    let (profile, flags): (&str, &[&str]) = if quick {
        ("debug", &[])
    } else {
        ("release", &["--release"])
    };
    step(&format!(
        "Building the benchmark driver, the load tool and the bridge ({profile})"
    ));
    // `client-tools-bench --bins`: the driver and `client-tools-load`; the bridge is the binary
    // the load tool starts and measures.
    run(Command::new(env!("CARGO"))
        .current_dir(root())
        .arg("build")
        .args(flags)
        .args([
            "-p",
            "client-tools-bench",
            "-p",
            "client-tools-bridge",
            "--bins",
        ]))?;

    let scratch = root().join("target").join("bench");
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(out.join("bench")).map_err(|e| e.to_string())?;
    let sizes = scratch.join("sizes.json");
    let reference = root().join("bench/www/vendor/reference.js");
    std::fs::write(&sizes, sizes_json(pkg, &reference)?).map_err(|e| e.to_string())?;

    step(if quick {
        "Running the benchmarks (--quick: a smoke run, about 2 minutes)"
    } else {
        "Running the benchmarks (about 10 minutes)"
    });
    let binaries = root().join("target").join(profile);
    let mut command = Command::new(binaries.join("client-tools-bench"));
    command
        .current_dir(root())
        .arg("--pkg")
        .arg(pkg)
        .arg("--www")
        .arg(root().join("bench").join("www"))
        .arg("--chromium")
        .arg(&browsers.chromium)
        .arg("--firefox")
        .arg(browsers.firefox())
        .arg("--load-bin")
        .arg(binaries.join("client-tools-load"))
        .arg("--bridge-bin")
        .arg(binaries.join("client-tools-bridge"))
        .arg("--nats-server")
        .arg(ensure_nats_server()?)
        .arg("--sizes")
        .arg(&sizes)
        .arg("--notes")
        .arg(root().join("bench").join("notes.md"))
        .arg("--out")
        .arg(out);
    if quick {
        command.args(["--quick", "--command", "cargo xtask bench --quick"]);
    }
    run(&mut command)
}

/// The package's sizes, its budget, the reference bundle's size and, as `breakdown`, the module's
/// bytes by crate and function in Markdown (`cargo xtask size`; `null` if it cannot be read), as
/// JSON for the driver.
fn sizes_json(pkg: &Path, reference: &Path) -> Result<String> {
    let entry = |name: &str, size: &Size| {
        format!(
            r#"{{"name":"{name}","raw":{},"gzip":{},"brotli":{}}}"#,
            size.raw, size.gzip, size.brotli
        )
    };
    let mut rows = build::sizes_with_total(pkg)?;
    let (_, total) = rows.pop().expect("a total row");
    let files: Vec<String> = rows.iter().map(|(name, size)| entry(name, size)).collect();
    let reference = build::measure(reference)?;
    let breakdown = match size::markdown_report(&size::module_path()) {
        Ok(markdown) => serde_json::Value::String(markdown),
        Err(error) => {
            eprintln!("    no size breakdown: {error}");
            serde_json::Value::Null
        }
    };
    Ok(format!(
        r#"{{"files":[{}],"total":{},"budgetGzip":{SIZE_BUDGET_GZIP},"reference":{},"breakdown":{breakdown}}}"#,
        files.join(","),
        entry("total (SDK package)", &total),
        entry(
            "reference: MCP TypeScript SDK Server + ajv + ajv-formats (esbuild, minified)",
            &reference
        )
    ))
}
