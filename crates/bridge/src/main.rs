//! `client-tools-bridge`: run the bridge from the command line (SPEC §9).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use client_tools_bridge::mcp::McpAgent;
use client_tools_bridge::{Bridge, BridgeConfig};
use rmcp::ServiceExt;

/// Relays tool calls between AI agents and the client tools of web pages.
#[derive(Debug, Parser)]
#[command(name = "client-tools-bridge", version)]
struct Cli {
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// Site served at `/`.
    #[arg(long, default_value = "www")]
    www: PathBuf,
    /// Built npm package served at `/pkg/`.
    #[arg(long, default_value = "pkg")]
    pkg: PathBuf,
    /// Token pages must send (`?token=`).
    #[arg(long)]
    token: Option<String>,
    /// Origin allowed to connect pages (repeatable); default: loopback origins.
    #[arg(long = "allowed-origin")]
    allowed_origins: Vec<String>,
    /// Original tool name agents may call (repeatable); default: all.
    #[arg(long)]
    allow: Vec<String>,
    /// Default per-call timeout in milliseconds (max 300000).
    #[arg(long, default_value_t = 30_000)]
    timeout_ms: u64,
    /// Serve one MCP session on stdin/stdout (for desktop MCP clients that launch the bridge);
    /// pages still connect over `/ws`.
    #[arg(long)]
    stdio: bool,
    /// With --stdio: bind the MCP session to this page session (default: the newest page).
    #[arg(long)]
    session: Option<String>,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let cli = Cli::parse();
    let config = BridgeConfig {
        listen: cli.listen,
        www_dir: cli.www,
        pkg_dir: cli.pkg,
        token: cli.token,
        allowed_origins: cli.allowed_origins,
        allow: cli.allow,
        timeout: client_tools_bridge::config::clamp_timeout(
            Some(Duration::from_millis(cli.timeout_ms)),
            Duration::from_millis(30_000),
        ),
    };
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let address = listener.local_addr()?;
    // stdout belongs to the MCP session under --stdio: everything else goes to stderr.
    eprintln!("client-tools-bridge listening on http://{address}/");
    eprintln!("  pages connect to   ws://{address}/ws");
    eprintln!("  MCP agents:        http://{address}/mcp");
    eprintln!("  sessions:          http://{address}/api/sessions");
    let bridge = Bridge::new(config);
    if !cli.stdio {
        return bridge.serve(listener).await;
    }
    let serving = bridge.clone();
    tokio::spawn(async move { serving.serve(listener).await });
    let agent = McpAgent::new(bridge, cli.session);
    let running = agent
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}
