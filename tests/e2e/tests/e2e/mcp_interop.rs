//! Interop with MCP clients nobody here wrote: the official Python SDK (PyPI `mcp` 2.x) over
//! Streamable HTTP on each revision and over stdio, and the official TypeScript SDK over Streamable
//! HTTP — each against a real page in a headless browser (Chromium, or Firefox with
//! `E2E_BROWSER=firefox`). The scenarios live in `tests/interop/`: initialize, list, call valid and
//! invalid input, `list_changed` after the page defines a tool, cancel a long call, an error result
//! once the tab is closed; the Python client also reads the page's resources and prompts, hostile
//! requests included; and its close, which it logs no warning about.
//!
//! `cargo xtask test` installs the clients and sets `INTEROP_PYTHON` (a venv's python),
//! `INTEROP_TS_DIR` (where `npm ci` ran) and `CLIENT_TOOLS_BRIDGE_BIN` (for `--stdio`).

use std::path::PathBuf;
use std::process::Stdio;

use client_tools_bridge::BridgeConfig;
use client_tools_e2e::{pkg_dir, Opened, Stack};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const TOKEN: &str = "interop-token";
const PAGE_TOKEN: &str = "interop-page-token";
const SCENARIOS: [&str; 7] = [
    "initialize",
    "list",
    "call-valid",
    "call-invalid",
    "list-changed",
    "cancel",
    "tab-closed",
];

/// What the Python client passes: [`SCENARIOS`] with, before the tab closes, the page's resources
/// (list, read, a template, completion; a `..` segment, an unknown scheme, 10 MB and a read that
/// throws refused; on 2025-11-25 a subscription that hears the page's change, and the 65th
/// subscription refused) and prompts (get, completion; a missing, an extra argument and an unknown
/// prompt refused); then `close`: it logged no warning while it closed its session (over HTTP the
/// SDK's `Session termination failed` when `DELETE /mcp` is not answered 200, 204 or 405).
fn python_scenarios() -> Vec<&'static str> {
    let (before, closing) = SCENARIOS.split_at(SCENARIOS.len() - 1);
    [before, &["resources", "prompts"], closing, &["close"]].concat()
}

fn env_path(name: &str) -> PathBuf {
    std::env::var_os(name)
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{name} is not set: run these through `cargo xtask test`"))
}

fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../interop")
}

/// Something whose browser tab the harness can close when the client asks (`CLOSE_TAB`).
trait Tab {
    async fn close_tab(&mut self);
}

impl Tab for Stack {
    async fn close_tab(&mut self) {
        self.close_browser().await;
    }
}

impl Tab for Opened {
    async fn close_tab(&mut self) {
        self.close_browser().await;
    }
}

/// Runs a client to its end; closes the tab when it prints `CLOSE_TAB`. Returns its PASS lines.
async fn run_client(mut command: Command, tab: &mut impl Tab) -> Vec<String> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start the MCP client");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut passed = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        if line == "CLOSE_TAB" {
            tab.close_tab().await;
            stdin.write_all(b"closed\n").await.unwrap();
            stdin.flush().await.unwrap();
        } else if let Some(name) = line.strip_prefix("PASS ") {
            passed.push(name.to_owned());
        }
    }
    let status = child.wait().await.unwrap();
    assert!(
        status.success(),
        "the client failed ({status}) after passing {passed:?}"
    );
    passed
}

async fn http_stack() -> Stack {
    let config = BridgeConfig {
        agent_token: Some(TOKEN.into()),
        page_token: Some(PAGE_TOKEN.into()),
        ..BridgeConfig::default()
    };
    Stack::start(&format!("mcp.html#token={PAGE_TOKEN}"), config).await
}

fn python() -> Command {
    let mut command = Command::new(env_path("INTEROP_PYTHON"));
    command.arg(interop_dir().join("python/client.py"));
    command
}

async fn python_over_http(revision: &str) {
    let mut stack = http_stack().await;
    let url = format!("{}/mcp?session={}", stack.base_url, stack.page.id());
    let mut command = python();
    command.args([
        "--transport",
        "http",
        "--url",
        &url,
        "--token",
        TOKEN,
        "--protocol-version",
        revision,
    ]);
    assert_eq!(run_client(command, &mut stack).await, python_scenarios());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_streamable_http_2025_11_25() {
    python_over_http("2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_streamable_http_2026_07_28() {
    python_over_http("2026-07-28").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_stdio() {
    // The client launches the bridge itself (`--stdio`); the page connects to that bridge's /ws.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut page =
        Stack::start_page_only(&format!("mcp.html?endpoint=ws://127.0.0.1:{port}/ws")).await;
    let bridge = env_path("CLIENT_TOOLS_BRIDGE_BIN");
    let www = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("www");
    let mut command = python();
    command
        .args(["--transport", "stdio", "--command"])
        .arg(&bridge);
    for arg in ["--stdio", "--listen", &format!("127.0.0.1:{port}")] {
        command.arg(format!("--arg={arg}"));
    }
    command.arg(format!("--arg=--www={}", www.display()));
    command.arg(format!("--arg=--pkg={}", pkg_dir().display()));
    assert_eq!(run_client(command, &mut page).await, python_scenarios());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_streamable_http() {
    let mut stack = http_stack().await;
    let url = format!("{}/mcp?session={}", stack.base_url, stack.page.id());
    let ts_dir = env_path("INTEROP_TS_DIR");
    let mut command = Command::new("node");
    command
        .current_dir(&ts_dir)
        .arg(ts_dir.join("client.mjs"))
        .args(["--url", &url, "--token", TOKEN]);
    assert_eq!(run_client(command, &mut stack).await, SCENARIOS);
}
