//! `cargo xtask demo`: the package built (profile wasm-demo: compiled fast, not for size), then the demo's site backend (it mints the users' tokens)
//! and the bridge serving the demo site with a fresh agent token for its console.

use std::process::Command;

use crate::run::{run, spawn};
use crate::wasm::WasmCargo;
use crate::{build, root, step, steps, Result};

/// `cargo xtask demo [--listen ADDR]`: build the package, then serve the demo with the bridge.
pub fn demo(args: &[String]) -> Result {
    let listen = match args {
        [flag, value, ..] if flag == "--listen" => value.clone(),
        _ => "127.0.0.1:8787".to_owned(),
    };
    // The bridge compiles while the package builds (each ends on one core: LTO, linking). It is the
    // debug build `cargo xtask test` makes and runs too (one build serves both): a demo serving one
    // person needs no optimized bridge, and a first run is minutes shorter without one
    // (docs/building.md, "A first run").
    step("Building the bridge and the demo's site backend (in the background, while the package builds)");
    let bridge = spawn(Command::new(env!("CARGO")).current_dir(root()).args([
        "build",
        "--quiet",
        "-p",
        "client-tools-bridge",
        "-p",
        "client-tools-demo-site",
        "--bin",
        "client-tools-bridge",
        "--bin",
        "demo_site_backend",
    ]))?;
    // The package in the demo's profile (wasm-demo: compiled fast, not for size; or the
    // wasm-release build `cargo xtask build`/`test` left, when newer), into target/demo/pkg:
    // `pkg/` keeps only the size-optimized package.
    let package = WasmCargo::detect().and_then(|cargo| build::build_demo(&cargo));
    step("Waiting for the bridge's build");
    let bridge = bridge.wait();
    let pkg = package?;
    bridge?;
    steps::print_summary();
    // Whose page it is (SPEC §13): the demo's site backend — the site's job, shown for the demo —
    // mints page and agent tokens for two made-up users, alice and bob, with a fresh key whose key
    // set the bridge loads (`--token-keys`). Its port is the bridge's plus one: the pages find it
    // there (www/demo_user.js).
    let backend_listen = next_port(&listen)?;
    let keys = root().join("target/demo/token-keys.json");
    step(&format!(
        "Starting the demo's site backend on http://{backend_listen}/token (it signs tokens for \
         alice and bob: a real site does this after its own login)"
    ));
    let _ = std::fs::remove_file(&keys);
    let mut backend = std::process::Command::new(root().join("target/debug/demo_site_backend"))
        .args([
            "--listen",
            &backend_listen,
            "--site-origin",
            &format!("http://{listen}"),
        ])
        .arg("--keys-out")
        .arg(&keys)
        .spawn()
        .map_err(|e| format!("could not start the demo's site backend: {e}"))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !keys.is_file() {
        if std::time::Instant::now() > deadline || backend.try_wait().ok().flatten().is_some() {
            let _ = backend.kill();
            return Err("the demo's site backend did not start (no key set written)".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The demo console acts as an agent: as the operator it gets a fresh agent token through the
    // URL fragment, which the browser never sends to a server (docs/security.md); a console opened
    // as a user (`?user=`) asks the site backend for that user's agent token instead. The bridge
    // reads the operator's token from the environment, so it shows up neither in `ps` nor in the
    // command line echoed below.
    let token = random_token()?;
    step(&format!(
        "Starting the bridge with the demo (Ctrl-C to stop). Open:\n    \
         alice, two tabs:  http://{listen}/?user=alice  and  http://{listen}/cars.html?user=alice\n    \
         bob, one tab:     http://{listen}/?user=bob\n    \
         each page's console acts for its user and sees only that user's tabs\n    \
         MCP agents and scripts: Authorization: Bearer {token} (the operator: every user), \
         /mcp?user=alice for alice's tabs"
    ));
    let served = run(
        Command::new(root().join("target/debug/client-tools-bridge"))
            .env("CLIENT_TOOLS_AGENT_TOKEN", &token)
            .current_dir(root())
            .args(["--listen", &listen, "--www", "www", "--pkg"])
            .arg(&pkg)
            .arg("--token-keys")
            .arg(&keys)
            // The demo's guardrails, commented (docs/guardrails.md): the console shows when one acts.
            .args(["--policy", "demo/policy.toml"]),
    );
    let _ = backend.kill();
    served
}

/// The address after `listen` (its port plus one): where the demo's site backend listens.
fn next_port(listen: &str) -> Result<String> {
    let address: std::net::SocketAddr = listen
        .parse()
        .map_err(|e| format!("--listen {listen}: {e}"))?;
    let port = address
        .port()
        .checked_add(1)
        .ok_or_else(|| format!("--listen {listen}: no port after it for the site backend"))?;
    Ok(std::net::SocketAddr::new(address.ip(), port).to_string())
}

/// 128 random bits, hex, from the operating system.
fn random_token() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .map_err(|e| format!("could not read /dev/urandom for the demo's agent token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
