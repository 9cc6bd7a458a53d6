//! Tool-call steps through the official MCP Python SDK client (`tests/interop/python/steps.py`):
//! each step's outcome comes back as one JSON value, for the test to judge.

use std::path::PathBuf;
use std::process::Stdio;

use serde_json::Value;
use tokio::process::Command;

/// How the client answers the bridge's questions; `None`: it declares no elicitation.
pub type Answer = Option<&'static str>;

/// Runs `steps` (see steps.py) against `url` on `revision`; returns every line the client printed
/// (the steps' outcomes and `{"elicited": message}` for each question), in order.
pub async fn run(
    url: &str,
    token: &str,
    revision: &str,
    answer: Answer,
    steps: &Value,
) -> Vec<Value> {
    run_gated(url, token, revision, answer, steps, None).await
}

/// [`run`], the client answering each question only once `gate/answer` exists (it creates
/// `gate/asked` when asked): the test acts while the person "decides".
pub async fn run_gated(
    url: &str,
    token: &str,
    revision: &str,
    answer: Answer,
    steps: &Value,
    gate: Option<&std::path::Path>,
) -> Vec<Value> {
    let server = Server::Http { url, token };
    run_with(server, revision, answer, steps, gate, false).await
}

/// Where the client finds the MCP server.
pub enum Server<'a> {
    /// Streamable HTTP at `url`, with the agent token.
    Http { url: &'a str, token: &'a str },
    /// A command the client launches, speaking MCP on its stdin and stdout.
    Stdio {
        command: &'a std::path::Path,
        args: &'a [String],
    },
}

/// [`run`] against `server`, the client observing everything the agent reads (steps.py
/// `--observe`): every log message its logging callback gets is a line `{"logged": params}`, and
/// every question (with `answer`) a line `{"asked": params}` after its `{"elicited": message}`.
pub async fn run_observing(
    server: Server<'_>,
    revision: &str,
    answer: Answer,
    steps: &Value,
) -> Vec<Value> {
    run_with(server, revision, answer, steps, None, true).await
}

async fn run_with(
    server: Server<'_>,
    revision: &str,
    answer: Answer,
    steps: &Value,
    gate: Option<&std::path::Path>,
    observe: bool,
) -> Vec<Value> {
    let python = std::env::var_os("INTEROP_PYTHON")
        .map(PathBuf::from)
        .expect("INTEROP_PYTHON is not set: run these through `cargo xtask test`");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../interop/python/steps.py");
    let mut command = Command::new(python);
    command.arg(script);
    match server {
        Server::Http { url, token } => {
            command.args(["--url", url, "--token", token]);
        }
        Server::Stdio {
            command: program,
            args,
        } => {
            command.arg("--command").arg(program);
            for arg in args {
                command.arg(format!("--arg={arg}"));
            }
        }
    }
    command
        .args(["--protocol-version", revision])
        .args(["--steps", &steps.to_string()]);
    if let Some(answer) = answer {
        command.args(["--answer", answer]);
    }
    if let Some(gate) = gate {
        command.arg("--gate").arg(gate);
    }
    if observe {
        command.arg("--observe");
    }
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .output()
        .await
        .expect("start the MCP Python client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the client failed ({}); it printed:\n{stdout}",
        output.status
    );
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}
