//! Apps that install the package from its npm tarball (`tests/bundlers/*`, `tests/react`): the check
//! that an app's `node_modules` hold the tarball as it is now, and Vite's dev server on one.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::{Child, Command};

/// Checks that the app in `dir` is installed from the package's tarball as it is now: its lock file
/// names no integrity for it, its `node_modules` hold `bin` (its bundler) and `files` of the package
/// are the tarball's. Panics saying what to run when not.
pub fn check_installed(dir: &Path, bin: &str, files: &[&str]) {
    let shown = dir.display();
    let install =
        format!("run `cargo xtask pack`, then `npm ci` in {shown} (`cargo xtask test` does both)");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("package.json"))
            .unwrap_or_else(|e| panic!("no app in {shown}: {e}")),
    )
    .expect("the app's package.json is JSON");
    let dependency = manifest["dependencies"]["client-tools"]
        .as_str()
        .or(manifest["devDependencies"]["client-tools"].as_str())
        .expect("the app depends on client-tools");
    let tarball = dir.join(
        dependency
            .strip_prefix("file:")
            .expect("the app depends on client-tools through its tarball (file:…)"),
    );
    let lock: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("package-lock.json"))
            .unwrap_or_else(|e| panic!("no package-lock.json in {shown}: {e}")),
    )
    .expect("the app's package-lock.json is JSON");
    assert!(
        lock["packages"]["node_modules/client-tools"]["integrity"].is_null(),
        "{shown}/package-lock.json names an integrity for client-tools: with the next tarball \
         npm ci would fail, or install the older one from its cache. Remove it \
         (tests/bundlers/README.md, \"The lock files\")"
    );
    assert!(
        tarball.is_file(),
        "no package tarball at {}: {install}",
        tarball.display()
    );
    assert!(
        dir.join("node_modules/.bin").join(bin).is_file(),
        "{shown} has no {bin} in node_modules: {install}"
    );
    // An install from an older tarball would test an older package (npm ci installs the tarball as
    // it is now only because the lock file names no integrity for it: tests/bundlers/README.md).
    let installed = dir.join("node_modules/client-tools");
    for file in files {
        let packed = std::process::Command::new("tar")
            .arg("-xzOf")
            .arg(&tarball)
            .arg(format!("package/{file}"))
            .output()
            .expect("run tar");
        assert!(
            packed.status.success(),
            "no {file} in {}",
            tarball.display()
        );
        assert!(
            std::fs::read(installed.join(file)).ok() == Some(packed.stdout),
            "{shown}/node_modules/client-tools/{file} is not the tarball's: {install}"
        );
    }
}

/// Vite's dev server on a free loopback port, stopped when dropped.
pub struct ViteDev {
    pub base_url: String,
    child: Child,
    log: PathBuf,
}

impl ViteDev {
    /// Starts `vite` in `dir` (with the app's own config, or `config`) and waits until it answers.
    /// Dev servers of one folder share its dependency cache (`node_modules/.vite`): the caller
    /// runs one at a time.
    pub async fn start(dir: &Path, config: Option<&Path>) -> ViteDev {
        let port = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port")
            .local_addr()
            .unwrap()
            .port();
        let log = std::env::temp_dir().join(format!(
            "client-tools-vite-dev-{}-{port}.log",
            std::process::id()
        ));
        let log_file = std::fs::File::create(&log).expect("create the dev server's log");
        let mut command = Command::new(dir.join("node_modules/.bin/vite"));
        command.args([
            "--port",
            &port.to_string(),
            "--strictPort",
            "--host",
            "127.0.0.1",
            "--clearScreen",
            "false",
        ]);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        let child = command
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("the log again"))
            .stderr(log_file)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("could not start the Vite dev server: {e}"));
        let mut dev = ViteDev {
            base_url: format!("http://127.0.0.1:{port}"),
            child,
            log,
        };
        dev.wait_until_serving().await;
        dev
    }

    async fn wait_until_serving(&mut self) {
        let address = self.base_url.trim_start_matches("http://").to_owned();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("the dev server's status") {
                panic!("the Vite dev server exited ({status}):\n{}", self.log());
            }
            if let Ok(response) = http_get(&address).await {
                if response.starts_with("HTTP/1.1 200") {
                    return;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the Vite dev server did not serve the page within 60 s:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// What the dev server printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for ViteDev {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// A bare `GET /` (the dev server is up once it answers it).
async fn http_get(address: &str) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    stream
        .write_all(
            format!("GET / HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await?;
    let mut head = vec![0; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut head))
        .await
        .map_err(|_| std::io::Error::other("no answer"))??;
    Ok(String::from_utf8_lossy(&head[..read]).into_owned())
}
