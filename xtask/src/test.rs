//! `cargo xtask test`: every check CI runs, in order of cost.
//!
//! fmt → clippy on the host → clippy on wasm32 → core + bridge tests → browser tests
//! (wasm-bindgen-test in headless Chromium, then Firefox) → package build → npm pack and
//! `npm publish --dry-run` → the same package built by wasm-pack → `tsc --strict` on a page using
//! every API → end-to-end tests (bridge + headless Chromium and Firefox + the built package and its
//! npm tarball) → the demo's own unoptimized package in the demo console's end-to-end test → the
//! docs' pictures → a short benchmark run.

use std::process::Command;

use crate::install::{
    ensure_browsers, ensure_conformance_suite, ensure_nats_server, ensure_python_mcp_client,
    ensure_ts_mcp_client, ensure_wasm_bindgen_alongside, install_tarball_projects,
};
use crate::run::{run, run_keeping_stdout};
use crate::wasm::{self, WasmCargo};
use crate::{bench, build, package_check, pictures, root, step, wasm_pack, Result};

/// The end-to-end suites built on `client_tools_e2e::Stack` or `Tab` (the harness opens the page itself, in
/// the browser `E2E_BROWSER` names): run a second time in Firefox. The WebDriver suites (`hitl`,
/// `injection`, `webmcp`, `embed`, `bundlers`, `runtimes`, `react`) run in both browsers in one
/// pass. A suite's tests that open no page in a browser (raw WebSocket pages, agents alone) sit in
/// its `without_browser` module and run in the first pass only.
const STACK_SUITES: &[&str] = &[
    "agent_tools",
    "api_rounds",
    "bad_input",
    "board",
    "cluster",
    "conformance",
    "elicitation",
    "faults",
    "guardrails",
    "mcp_access",
    "mcp_interop",
    "soak",
    "trust",
    "users",
];

/// End-to-end tests run at once. Each test has its own bridge on a free port, its own browser with
/// a fresh profile and its own helper processes, and waits for events against deadlines (no fixed
/// sleeps), so tests do not share state; most of a test's time is waiting on a browser or a child
/// process, so two at a time on a 2-core machine halve the tests' time (the Chromium pass's tests
/// 8 min 09 s → 4 min 13 s, the Firefox step 5 min 15 s → 3 min 24 s: bench/notes.md, *Issue 25,
/// its last stop*).
const E2E_TEST_THREADS: &str = "2";

fn host_cargo() -> Command {
    let mut command = Command::new(env!("CARGO"));
    command.current_dir(root());
    command
}

pub fn test() -> Result {
    // On a fresh machine the wasm-bindgen CLI is compiled from source (minutes): it compiles while
    // the lints and the native tests run, in its own target directory.
    let wasm_bindgen = std::thread::spawn(ensure_wasm_bindgen_alongside);

    step("Formatting (cargo fmt --check)");
    run(host_cargo().args(["fmt", "--all", "--", "--check"]))?;

    step("Lints on the host (clippy -D warnings)");
    run(host_cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;

    let wasm = WasmCargo::detect()?;
    step("Lints on wasm32 (clippy -D warnings)");
    run(wasm.command().args([
        "clippy",
        "-p",
        "client-tools",
        "--target",
        wasm::TARGET,
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;

    let nats_server = ensure_nats_server()?;
    step("Core and bridge tests (cargo test; the bridge's cluster tests on NATS_SERVER)");
    run(host_cargo()
        .args([
            "test",
            "-p",
            "client-tools-core",
            "-p",
            "client-tools-bridge",
        ])
        .env("NATS_SERVER", &nats_server))?;

    let runner = wasm_bindgen
        .join()
        .map_err(|_| "installing the wasm-bindgen CLI panicked".to_owned())??
        .with_file_name("wasm-bindgen-test-runner");
    let browsers = ensure_browsers()?;
    for (browser, driver_var, driver) in [
        ("Chromium", "CHROMEDRIVER", &browsers.chromedriver),
        ("Firefox", "GECKODRIVER", &browsers.geckodriver),
    ] {
        step(&format!(
            "Browser tests in headless {browser} (wasm-bindgen-test)"
        ));
        let mut command = wasm.command();
        command
            .args(["test", "-p", "client-tools", "--target", wasm::TARGET])
            .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", &runner)
            .env_remove("CHROMEDRIVER")
            .env_remove("GECKODRIVER")
            .env_remove("SAFARIDRIVER")
            .env(driver_var, driver)
            .env("WASM_BINDGEN_TEST_TIMEOUT", "120")
            // No debug info: the test modules shrink from ~110 MB to a fraction, which the runner
            // serves and the browser compiles much faster (panic messages do not need it).
            .env("CARGO_PROFILE_DEV_DEBUG", "false");
        run_browser_tests(&mut command)?;
    }

    let pkg = build::build_with(&wasm)?;
    step("Size budget (BENCHMARKS.md)");
    build::check_size_budget(&pkg)?;
    // The tarball (target/npm/client-tools.tgz) is what the bundler apps and the type check install.
    package_check::pack_and_check(&pkg)?;
    let built_by_wasm_pack = root().join("target").join("wasm-pack").join("pkg");
    wasm_pack::build(&wasm, &built_by_wasm_pack)?;
    step("wasm-pack's package is cargo xtask build's");
    wasm_pack::check_same_package(&pkg, &built_by_wasm_pack)?;
    install_tarball_projects()?;
    let types = root().join("tests").join("types");
    step("Type-checking a page that uses every API, installed from the tarball (tsc --strict)");
    run(Command::new(types.join("node_modules/.bin/tsc"))
        .arg("-p")
        .arg(&types))?;
    let python = ensure_python_mcp_client()?;
    let ts_dir = ensure_ts_mcp_client()?;
    let conformance = ensure_conformance_suite()?;
    step("Building the bridge binary (MCP clients launch it with --stdio)");
    run(host_cargo().args(["build", "-p", "client-tools-bridge"]))?;
    // `suites`: the modules to run (each a filter, `board::`); none: every test of the crate.
    let e2e = |browser: &str, suites: &[&str]| {
        let mut command = host_cargo();
        command.args(["test", "-p", "client-tools-e2e"]);
        if !suites.is_empty() {
            command.args(["--test", "e2e"]);
        }
        command.args(["--", "--test-threads", E2E_TEST_THREADS]);
        for suite in suites {
            command.arg(format!("{suite}::"));
        }
        command
            .env("E2E_BROWSER", browser)
            .env("CLIENT_TOOLS_PKG", &pkg)
            .env("CHROMIUM", &browsers.chromium)
            .env("CHROMEDRIVER", &browsers.chromedriver)
            .env("FIREFOX", browsers.firefox())
            .env("GECKODRIVER", &browsers.geckodriver)
            .env("INTEROP_PYTHON", &python)
            .env("INTEROP_TS_DIR", &ts_dir)
            .env("CONFORMANCE_DIR", &conformance)
            .env("NATS_SERVER", &nats_server)
            .env(
                "CLIENT_TOOLS_BRIDGE_BIN",
                root().join("target/debug/client-tools-bridge"),
            );
        command
    };
    step(
        "End-to-end tests (bridge + the built package + official MCP clients; the WebDriver suites \
         in Chromium and Firefox, the others in Chromium)",
    );
    check_stack_suites_listed()?;
    // The demo's module compiles meanwhile (the tests mostly wait): its step below finds it built.
    let demo_compile = build::compile_demo_alongside(&wasm)?;
    run(&mut e2e("chromium", &[]))?;
    step("End-to-end tests that open their page without WebDriver, again in Firefox");
    // Tests that open no browser (`without_browser` modules: the harness refuses a browser there)
    // ran in the pass above; the same run again would test nothing new.
    run(e2e("firefox", STACK_SUITES).args(["--skip", "::without_browser::"]))?;

    step(
        "The demo's own package (profile wasm-demo: unoptimized, as a first `cargo xtask demo` \
         builds it) in the demo console's end-to-end test, Chromium and Firefox",
    );
    // Its failure is not reported here: the build just below compiles it again and shows why.
    let _ = demo_compile.wait();
    let demo_pkg = build::build_demo_in(&wasm, wasm::DEMO_PROFILE)?;
    run(e2e("chromium", &["demo_console"]).env("CLIENT_TOOLS_PKG", &demo_pkg))?;

    step("The docs' pictures of the dialog still render (into target/pictures)");
    pictures::render(&browsers, &pkg, &root().join("target/pictures"))?;

    // The benchmarks are not tests (no timing is asserted), but they must keep running: a short
    // run, written under target/ so the committed BENCHMARKS.md stays the full run's.
    bench::run_benchmarks(&browsers, &pkg, true, &root().join("target/bench/smoke"))?;

    step("All checks passed");
    Ok(())
}

/// The end-to-end suites: modules of one test binary (`tests/e2e/tests/e2e/main.rs`).
const E2E_SUITES_DIR: &str = "tests/e2e/tests/e2e";

/// Every e2e suite that uses `Stack` is in [`STACK_SUITES`], so none misses its Firefox pass.
fn check_stack_suites_listed() -> Result {
    let dir = root().join(E2E_SUITES_DIR);
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(name) = path.file_stem().and_then(|n| n.to_str()) else {
            continue;
        };
        if name == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        // `Tab::open`: a page the harness opens for a cluster of bridge processes.
        let uses_stack = text.contains("Stack::start") || text.contains("Tab::open");
        if uses_stack != STACK_SUITES.contains(&name) {
            return Err(format!(
                "{E2E_SUITES_DIR}/{name}.rs {} Stack::start or Tab::open but is {}in STACK_SUITES \
                 (xtask/src/test.rs): list exactly the suites the harness opens pages for",
                if uses_stack { "uses" } else { "does not use" },
                if uses_stack { "not " } else { "" },
            ));
        }
    }
    Ok(())
}

/// Runs the browser tests; again (twice at most) when a test page never started its tests. The test
/// runner's small HTTP server sometimes stalls handing the page its scripts (seen on fresh CI
/// machines: one 400-byte snippet took 100 s, another never came); the page then waits out the page
/// load timeout (`webdriver.json`: 90 s) without running anything. A failure of any test that ran
/// is never retried.
fn run_browser_tests(command: &mut std::process::Command) -> Result {
    let mut attempt = 1;
    loop {
        match run_keeping_stdout(command) {
            Ok(_) => return Ok(()),
            Err((why, stdout)) if attempt < 3 && !page_started_its_tests(&stdout) => {
                attempt += 1;
                step(&format!(
                    "A test page never started its tests ({why}): the runner stalled serving it; \
                     running the browser tests again (attempt {attempt} of 3)"
                ));
            }
            Err((why, _)) => return Err(why),
        }
    }
}

/// Whether the last test page the runner opened got as far as running its tests.
fn page_started_its_tests(stdout: &str) -> bool {
    let last_page = stdout
        .rsplit("Running headless tests in")
        .next()
        .unwrap_or(stdout);
    last_page.contains("\nrunning ")
}
