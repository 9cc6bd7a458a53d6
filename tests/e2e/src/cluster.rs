//! A cluster for the end-to-end tests, all real processes on loopback ports: a NATS server
//! (`NATS_SERVER`, installed by `cargo xtask test`), bridge nodes (the `client-tools-bridge`
//! binary, `CLIENT_TOOLS_BRIDGE_BIN`) joined to it, and a load balancer that sends each new
//! connection to the first node that accepts it (so a page whose node dies reconnects to the next).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};

use crate::{e2e_dir, pkg_dir};

/// A NATS server that wants `token`.
pub struct Nats {
    child: Option<Child>,
    pub port: u16,
    token: String,
}

impl Nats {
    pub async fn start(token: &str) -> Nats {
        let port = free_port();
        let mut nats = Nats {
            child: None,
            port,
            token: token.to_owned(),
        };
        nats.restart().await;
        nats
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Stops the server (every node loses its NATS connection).
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Starts the server (again) on its port; returns once it accepts connections.
    pub async fn restart(&mut self) {
        self.stop().await;
        let binary = std::env::var_os("NATS_SERVER")
            .map(PathBuf::from)
            .expect("NATS_SERVER is not set: run the cluster tests through `cargo xtask test`");
        let child = Command::new(binary)
            .args(["-a", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["--auth", &self.token])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start nats-server");
        self.child = Some(child);
        let address = SocketAddr::from(([127, 0, 0, 1], self.port));
        crate::eventually("nats-server accepts connections", || {
            std::net::TcpStream::connect(address).is_ok()
        })
        .await;
    }
}

/// One bridge node: `client-tools-bridge --nats …` serving the e2e site and the package.
pub struct Node {
    child: Child,
    /// Its id in the cluster (as `/api/sessions` names the node holding a page).
    pub id: String,
    pub address: SocketAddr,
    pub base_url: String,
    output: Arc<Mutex<Vec<String>>>,
}

impl Node {
    /// Starts a node on `nats` (its token in `CLIENT_TOOLS_NATS_TOKEN`) with more `args`;
    /// returns once it has joined the cluster.
    pub async fn start(nats: &Nats, args: &[&str]) -> Node {
        let port = free_port();
        let (mut child, output) = spawn_node(port, &nats.url(), &nats.token, args);
        let joined = async {
            loop {
                if output
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|l| l.contains("cluster node:"))
                {
                    return None;
                }
                if let Ok(Some(status)) = child.try_wait() {
                    return Some(status);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        let exited = tokio::time::timeout(Duration::from_secs(30), joined).await;
        let lines = || output.lock().unwrap().join("\n");
        match exited {
            Ok(None) => {}
            Ok(Some(status)) => panic!("the node exited ({status}):\n{}", lines()),
            Err(_) => panic!(
                "the node did not join the cluster within 30 s:\n{}",
                lines()
            ),
        }
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let id = output
            .lock()
            .unwrap()
            .iter()
            .find_map(|line| {
                let rest = line.split("cluster node:").nth(1)?;
                Some(rest.split_whitespace().next()?.to_owned())
            })
            .expect("the node printed its id");
        Node {
            child,
            id,
            address,
            base_url: format!("http://{address}"),
            output,
        }
    }

    /// Kills the node's process at once (SIGKILL: no goodbye to NATS or to its pages).
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }

    /// What the node printed (stderr), for failure messages.
    pub fn output(&self) -> String {
        self.output.lock().unwrap().join("\n")
    }
}

/// Runs a node that is expected to stop by itself (a refused start): its exit status and output.
pub async fn run_node(nats_url: &str, nats_token: &str, args: &[&str]) -> (ExitStatus, String) {
    let (mut child, output) = spawn_node(free_port(), nats_url, nats_token, args);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the node stops within 30 s")
        .expect("wait for the node");
    // Let the output readers take the last lines.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let output = output.lock().unwrap().join("\n");
    (status, output)
}

fn spawn_node(
    port: u16,
    nats_url: &str,
    nats_token: &str,
    args: &[&str],
) -> (Child, Arc<Mutex<Vec<String>>>) {
    let binary = std::env::var_os("CLIENT_TOOLS_BRIDGE_BIN")
        .map(PathBuf::from)
        .expect("CLIENT_TOOLS_BRIDGE_BIN is not set: run these through `cargo xtask test`");
    let mut child = Command::new(binary)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .arg("--www")
        .arg(e2e_dir().join("www"))
        .arg("--pkg")
        .arg(pkg_dir())
        .args(["--nats", nats_url])
        .args(args)
        .env("CLIENT_TOOLS_NATS_TOKEN", nats_token)
        .env("RUST_LOG", "client_tools_bridge=info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start client-tools-bridge");
    let output = Arc::new(Mutex::new(Vec::new()));
    let stderr = child.stderr.take().expect("piped stderr");
    let into = output.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            into.lock().unwrap().push(line);
        }
    });
    (child, output)
}

/// A TCP load balancer: each connection goes to the first backend that accepts it, in order.
pub struct Failover {
    pub address: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Failover {
    pub async fn start(backends: Vec<SocketAddr>) -> Failover {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let address = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let backends = backends.clone();
                tokio::spawn(async move {
                    for backend in backends {
                        if let Ok(mut server) = TcpStream::connect(backend).await {
                            let _ = client.set_nodelay(true);
                            let _ = server.set_nodelay(true);
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                            return;
                        }
                    }
                });
            }
        });
        Failover { address, task }
    }
}

impl Drop for Failover {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}
