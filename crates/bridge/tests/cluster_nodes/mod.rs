//! A cluster for the bridge's tests that span nodes (`served_cluster.rs`, `partial_results.rs`,
//! `trace_context.rs`, `untrusted_results.rs`): a real NATS server, the one `NATS_SERVER` names
//! (as `cargo xtask test` sets it, and the end-to-end cluster tests find one), and bridge nodes
//! in this process joined to it. One copy, so that every such test starts its cluster alike.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use client_tools_bridge::{Bridge, ClusterOptions};

/// How long the NATS server may take to accept connections.
const STARTS_WITHIN: Duration = Duration::from_secs(20);

/// A NATS server process, stopped when dropped.
pub struct Nats(Child);

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A NATS server on a free loopback port and its URL, or `None` without `NATS_SERVER` (it says
/// then that `skipped`, the tests that need it, are skipped).
pub async fn nats(skipped: &str) -> Option<(Nats, String)> {
    let Some(binary) = std::env::var_os("NATS_SERVER").map(PathBuf::from) else {
        eprintln!("NATS_SERVER is not set: {skipped} skipped");
        return None;
    };
    let port = (std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(binary)
        .args(["-a", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nats-server");
    let child = Nats(child);
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + STARTS_WITHIN;
    while tokio::net::TcpStream::connect(address).await.is_err() {
        assert!(Instant::now() < deadline, "nats-server never accepted");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Some((child, format!("nats://127.0.0.1:{port}")))
}

/// The bridge `served` (serving HTTP: it and its address) joined to the cluster at `url` as a node.
pub async fn node(url: &str, served: (Bridge, SocketAddr)) -> (Bridge, SocketAddr) {
    let options = ClusterOptions {
        url: url.to_owned(),
        ..Default::default()
    };
    served.0.join_cluster(&options).await.unwrap();
    served
}
