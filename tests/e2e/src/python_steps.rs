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
    let python = std::env::var_os("INTEROP_PYTHON")
        .map(PathBuf::from)
        .expect("INTEROP_PYTHON is not set: run these through `cargo xtask test`");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../interop/python/steps.py");
    let mut command = Command::new(python);
    command
        .arg(script)
        .args([
            "--url",
            url,
            "--token",
            token,
            "--protocol-version",
            revision,
        ])
        .args(["--steps", &steps.to_string()]);
    if let Some(answer) = answer {
        command.args(["--answer", answer]);
    }
    if let Some(gate) = gate {
        command.arg("--gate").arg(gate);
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
