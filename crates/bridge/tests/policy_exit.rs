//! A policy the bridge cannot load stops the shipped binary before it serves: exit code 2 and a
//! message on stderr naming what is wrong (the rule, or the file).

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A file of the test's own in the temp directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn with(name: &str, text: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("client-tools-bridge-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        Self(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The bridge with `--policy path` on a loopback port the OS picks: it must stop before serving
/// (one still running after the deadline is killed and fails the test).
fn bridge_with_policy(path: &std::path::Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_client-tools-bridge"))
        .arg("--listen")
        .arg("127.0.0.1:0")
        .arg("--policy")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "the bridge kept running: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_rule_whose_condition_does_not_compile_stops_the_bridge_naming_the_rule() {
    let file = TempFile::with(
        "bad-condition.toml",
        r#"
[[rule]]
id = "fine"
tools = ["search"]
action = "log"

[[rule]]
id = "broken-condition"
tools = ["sql"]
when = "input.q.matches("
action = "block"
"#,
    );
    let output = bridge_with_policy(&file.0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("rule 'broken-condition': 'when'"),
        "{stderr}"
    );
}

#[test]
fn a_missing_policy_file_stops_the_bridge_naming_the_file() {
    let missing = std::env::temp_dir().join(format!(
        "client-tools-bridge-{}-no-such-policy.toml",
        std::process::id()
    ));
    let output = bridge_with_policy(&missing);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no-such-policy.toml"), "{stderr}");
}
