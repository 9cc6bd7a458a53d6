//! Headless browsers showing the benchmark page: Chromium (more tabs opened over its DevTools HTTP
//! endpoint) and Firefox. Each gets a fresh profile, so the first load of anything is cold.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

pub struct Browser {
    child: Child,
    profile: PathBuf,
}

impl Browser {
    pub fn chromium(binary: &Path, url: &str) -> Result<Browser, String> {
        let profile = fresh_profile("chromium")?;
        let mut command = Command::new(binary);
        command
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-background-timer-throttling",
                "--disable-renderer-backgrounding",
                "--disable-backgrounding-occluded-windows",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(url);
        spawn(command, binary, profile)
    }

    pub fn firefox(binary: &Path, url: &str) -> Result<Browser, String> {
        let profile = fresh_profile("firefox")?;
        // Background tabs and timers must not be throttled while a benchmark runs.
        std::fs::write(
            profile.join("user.js"),
            "user_pref(\"dom.min_background_timeout_value\", 0);\n\
             user_pref(\"browser.shell.checkDefaultBrowser\", false);\n\
             user_pref(\"datareporting.policy.dataSubmissionEnabled\", false);\n",
        )
        .map_err(|e| e.to_string())?;
        let mut command = Command::new(binary);
        command
            .args(["--headless", "--no-remote", "--profile"])
            .arg(&profile)
            .arg(url);
        spawn(command, binary, profile)
    }

    /// Opens another tab (Chromium only), through `PUT /json/new` of its DevTools endpoint.
    pub async fn open_tab(&self, url: &str) -> Result<(), String> {
        let port_file = self.profile.join("DevToolsActivePort");
        let mut port = None;
        for _ in 0..200 {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                port = text
                    .lines()
                    .next()
                    .and_then(|l| l.trim().parse::<u16>().ok());
                if port.is_some() {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let port = port.ok_or("Chromium wrote no DevToolsActivePort")?;
        let endpoint = format!("http://127.0.0.1:{port}/json/new?{url}");
        let response = reqwest::Client::new()
            .put(&endpoint)
            .send()
            .await
            .map_err(|e| format!("opening a tab: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("opening a tab: HTTP {}", response.status()));
        }
        Ok(())
    }

    /// The browser's version line (`--version`).
    pub fn version(binary: &Path) -> String {
        std::process::Command::new(binary)
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Starts a browser quietly; it dies with this process.
fn spawn(mut command: Command, binary: &Path, profile: PathBuf) -> Result<Browser, String> {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not start {}: {e}", binary.display()))?;
    Ok(Browser { child, profile })
}

fn fresh_profile(label: &str) -> Result<PathBuf, String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let dir = std::env::temp_dir().join(format!(
        "client-tools-bench-{label}-{}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}
