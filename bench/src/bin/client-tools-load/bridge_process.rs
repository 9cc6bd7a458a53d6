//! The bridge under test, as a child process: started on a free loopback port and watched for an
//! early death. A process of its own, not a library inside the load tool, so that its memory and
//! CPU time (`process_metrics`) are the bridge's alone.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long the bridge has to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Stderr lines kept to explain a death.
const STDERR_TAIL: usize = 20;

pub struct BridgeProcess {
    child: Child,
    pid: u32,
    address: SocketAddr,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl BridgeProcess {
    /// Starts `bin` on a free loopback port and waits until it answers `GET /api/sessions`. With
    /// `token`, the bridge requires it from agents (`--agent-token`: `http` must send it as
    /// `Authorization: Bearer`) and from pages (`--page-token`, in their connect frame).
    pub async fn start(
        bin: &Path,
        token: Option<&str>,
        extra_args: &[String],
        http: &reqwest::Client,
    ) -> Result<Self, String> {
        // Bind port 0 to let the kernel pick a free port, then hand it to the bridge. Another
        // process could take it in between; the bridge would then fail to start, loudly.
        let address = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("finding a free port: {e}"))?;
        let mut command = Command::new(bin);
        command
            .arg("--listen")
            .arg(address.to_string())
            .args(extra_args);
        // Measured as it runs by default, whatever this shell has set: its default log level (one
        // line per call), tokens only from `token`, a policy only from `extra_args`.
        for variable in [
            "RUST_LOG",
            "CLIENT_TOOLS_AGENT_TOKEN",
            "CLIENT_TOOLS_PAGE_TOKEN",
            "CLIENT_TOOLS_POLICY",
        ] {
            command.env_remove(variable);
        }
        if let Some(token) = token {
            command
                .arg("--agent-token")
                .arg(token)
                .arg("--page-token")
                .arg(token);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", bin.display()))?;
        let pid = child.id().ok_or("the bridge exited at once")?;
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stderr) = child.stderr.take() {
            let tail = stderr_tail.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                    if tail.len() == STDERR_TAIL {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            });
        }
        let mut bridge = Self {
            child,
            pid,
            address,
            stderr_tail,
        };
        bridge.wait_listening(http).await?;
        Ok(bridge)
    }

    async fn wait_listening(&mut self, http: &reqwest::Client) -> Result<(), String> {
        let started = Instant::now();
        let url = format!("{}/api/sessions", self.base_url());
        loop {
            if let Some(death) = self.exited() {
                return Err(death);
            }
            if let Ok(response) = http.get(&url).send().await {
                let status = response.status();
                if status.is_success() {
                    return Ok(());
                }
                if status == reqwest::StatusCode::UNAUTHORIZED {
                    return Err(format!(
                        "the bridge refused GET /api/sessions ({status}): its agent token is not \
                         the one this tool sends"
                    ));
                }
            }
            if started.elapsed() > START_TIMEOUT {
                return Err(format!(
                    "the bridge did not answer on {} within {} s",
                    self.address,
                    START_TIMEOUT.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Resolves when the bridge exits (while measured, it should not): how and why.
    pub async fn died(&mut self) -> String {
        let status = self.child.wait().await;
        self.describe_death(status.map_err(|e| e.to_string()))
    }

    /// If the bridge has exited: how and why.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(None) => None,
            Ok(Some(status)) => Some(self.describe_death(Ok(status))),
            Err(error) => Some(self.describe_death(Err(error.to_string()))),
        }
    }

    fn describe_death(&self, status: Result<std::process::ExitStatus, String>) -> String {
        let status = match status {
            Ok(status) => status.to_string(),
            Err(error) => format!("unknown status ({error})"),
        };
        let tail = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        let stderr: Vec<&str> = tail.iter().map(String::as_str).collect();
        if stderr.is_empty() {
            return format!(
                "the bridge (pid {}) died: {status}, with no output",
                self.pid
            );
        }
        format!(
            "the bridge (pid {}) died: {status}; its last stderr lines:\n  {}",
            self.pid,
            stderr.join("\n  ")
        )
    }

    /// Kills the bridge and reaps it.
    pub async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}
