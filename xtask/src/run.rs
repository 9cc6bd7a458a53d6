//! Running commands, with the command line echoed and failures named.

use std::process::Command;

use crate::{build, root, step, Result};

/// Runs `command`, failing with its command line when it fails.
pub fn run(command: &mut Command) -> Result {
    eprintln!("    $ {}", describe(command));
    let status = command
        .status()
        .map_err(|e| format!("could not start `{}`: {e}", describe(command)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", describe(command)))
    }
}

/// Runs `command` like [`run`], also keeping what it printed on stdout: `Err` carries it too.
pub fn run_keeping_stdout(command: &mut Command) -> std::result::Result<String, (String, String)> {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    eprintln!("    $ {}", describe(command));
    let failed = |why: String| (why, String::new());
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("could not start `{}`: {e}", describe(command))))?;
    let mut kept = String::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            println!("{line}");
            let _ = std::io::stdout().flush();
            kept.push_str(&line);
            kept.push('\n');
        }
    }
    let status = child
        .wait()
        .map_err(|e| failed(format!("`{}` did not finish: {e}", describe(command))))?;
    if status.success() {
        Ok(kept)
    } else {
        Err((format!("`{}` failed ({status})", describe(command)), kept))
    }
}

/// Runs `command` quietly and returns its stdout, or `None` when it cannot run or fails.
pub fn output(command: &mut Command) -> Option<String> {
    let out = command.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn describe(command: &Command) -> String {
    let mut text = command.get_program().to_string_lossy().into_owned();
    for arg in command.get_args() {
        text.push(' ');
        text.push_str(&arg.to_string_lossy());
    }
    text
}

/// `cargo xtask demo [--listen ADDR]`: build the package, then serve the demo with the bridge.
pub fn demo(args: &[String]) -> Result {
    build::build()?;
    let listen = match args {
        [flag, value, ..] if flag == "--listen" => value.clone(),
        _ => "127.0.0.1:8787".to_owned(),
    };
    // The demo console acts as an agent: it gets a fresh agent token through the URL fragment,
    // which the browser never sends to a server (docs/security.md). The bridge reads it from the
    // environment, so it shows up neither in `ps` nor in the command line echoed below.
    let token = random_token()?;
    step(&format!(
        "Starting the bridge with the demo: open http://{listen}/#agent-token={token} \
         (Ctrl-C to stop)\n    MCP agents and scripts: Authorization: Bearer {token}"
    ));
    run(Command::new(env!("CARGO"))
        .env("CLIENT_TOOLS_AGENT_TOKEN", &token)
        .current_dir(root())
        .args([
            "run",
            "--release",
            "--quiet",
            "-p",
            "client-tools-bridge",
            "--bin",
            "client-tools-bridge",
            "--",
        ])
        .args(["--listen", &listen, "--www", "www", "--pkg", "pkg"])
        // The demo's guardrails, commented (docs/guardrails.md): the console shows when one acts.
        .args(["--policy", "demo/policy.toml"]))
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
