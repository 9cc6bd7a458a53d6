//! `cargo xtask demo`: the package built, then the bridge serving the demo site with a fresh agent
//! token for its console.

use std::process::Command;

use crate::run::{run, spawn};
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
    step("Building the bridge (in the background, while the package builds)");
    let bridge = spawn(Command::new(env!("CARGO")).current_dir(root()).args([
        "build",
        "--quiet",
        "-p",
        "client-tools-bridge",
        "--bin",
        "client-tools-bridge",
    ]))?;
    let package = build::build();
    step("Waiting for the bridge's build");
    let bridge = bridge.wait();
    package?;
    bridge?;
    steps::print_summary();
    // The demo console acts as an agent: it gets a fresh agent token through the URL fragment,
    // which the browser never sends to a server (docs/security.md). The bridge reads it from the
    // environment, so it shows up neither in `ps` nor in the command line echoed below.
    let token = random_token()?;
    step(&format!(
        "Starting the bridge with the demo: open http://{listen}/#agent-token={token} \
         (Ctrl-C to stop)\n    MCP agents and scripts: Authorization: Bearer {token}"
    ));
    run(
        Command::new(root().join("target/debug/client-tools-bridge"))
            .env("CLIENT_TOOLS_AGENT_TOKEN", &token)
            .current_dir(root())
            .args(["--listen", &listen, "--www", "www", "--pkg", "pkg"])
            // The demo's guardrails, commented (docs/guardrails.md): the console shows when one acts.
            .args(["--policy", "demo/policy.toml"]),
    )
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
