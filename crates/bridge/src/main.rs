//! `client-tools-bridge`: run the bridge from the command line (SPEC §9).

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use client_tools_bridge::limits::JWKS_REFETCH_EVERY;
use client_tools_bridge::tokens::TokenKeys;
use client_tools_bridge::McpAgent;
use client_tools_bridge::{
    AgentTools, Bridge, BridgeConfig, ClusterOptions, ConfirmVia, Limits, Policy,
};
use client_tools_core::limits::MAX_TIMEOUT_MS;
use rmcp::ServiceExt;

/// Relays tool calls between AI agents and the client tools of web pages.
// Every default below is read from `BridgeConfig::default()` (`defaults`), or from a constant of
// `BridgeConfig` for what it holds inside another value (the token audience, in `TokenKeys`): the
// flags and the Rust API agree.
#[derive(Parser)]
#[command(name = "client-tools-bridge", version)]
struct Cli {
    /// Address to listen on (loopback by default).
    #[arg(long, default_value_t = defaults().listen)]
    listen: SocketAddr,
    /// Site served at `/`.
    #[arg(long, default_value_os_t = defaults().www_dir)]
    www: PathBuf,
    /// Built npm package served at `/pkg/`.
    #[arg(long, default_value_os_t = defaults().pkg_dir)]
    pkg: PathBuf,
    /// Bearer token agents must send to /mcp and /api (`Authorization: Bearer <T>`).
    #[arg(long, env = "CLIENT_TOOLS_AGENT_TOKEN", hide_env_values = true)]
    agent_token: Option<String>,
    /// Token pages must send in their first frame (the SDK's `token` option; never in a URL).
    #[arg(long, env = "CLIENT_TOOLS_PAGE_TOKEN", hide_env_values = true)]
    page_token: Option<String>,
    /// Signed tokens (SPEC §13): a JWK Set file of the keys page and agent tokens may be signed
    /// with (EdDSA/Ed25519, ES256, RS256, HS256, each with a `kid`). Refuses --page-token.
    #[arg(long, env = "CLIENT_TOOLS_TOKEN_KEYS")]
    token_keys: Option<PathBuf>,
    /// Signed tokens: a JWK Set URL (http or https), fetched at start and again for an unknown
    /// `kid` (at most once a minute).
    #[arg(long, env = "CLIENT_TOOLS_TOKEN_JWKS_URL")]
    token_jwks_url: Option<String>,
    /// Signed tokens: the `aud` they must carry.
    #[arg(
        long,
        env = "CLIENT_TOOLS_TOKEN_AUDIENCE",
        default_value = BridgeConfig::DEFAULT_TOKEN_AUDIENCE
    )]
    token_audience: String,
    /// Signed tokens: the `iss` they must carry (not checked when unset).
    #[arg(long, env = "CLIENT_TOOLS_TOKEN_ISSUER")]
    token_issuer: Option<String>,
    /// A host name the bridge is reached by (repeatable; loopback names and IP addresses always
    /// work): other `Host` headers are refused (DNS rebinding).
    #[arg(long = "allowed-host")]
    allowed_hosts: Vec<String>,
    /// Origin allowed to connect pages (repeatable); default: loopback origins.
    #[arg(long = "allowed-origin")]
    allowed_origins: Vec<String>,
    /// Original tool name agents may call (repeatable); default: all.
    #[arg(long)]
    allow: Vec<String>,
    // The help names the core's maximum (`timeout_help`).
    #[arg(long, default_value_t = default_timeout_ms(), help = timeout_help())]
    timeout_ms: u64,
    /// Serve one MCP session on stdin/stdout (for desktop MCP clients that launch the bridge);
    /// pages still connect over `/ws`.
    #[arg(long)]
    stdio: bool,
    /// With --stdio: bind the MCP session to this page session (default: the newest page).
    #[arg(long, conflicts_with = "user")]
    session: Option<String>,
    /// With --stdio: bind the MCP session to all the connected pages of this user (the `sub` of
    /// their signed page tokens, SPEC §13): one tool list over the user's tabs.
    #[arg(long, requires = "stdio")]
    user: Option<String>,
    /// Page connections open at once.
    #[arg(long, default_value_t = defaults().limits.max_connections)]
    max_connections: usize,
    /// Page sessions kept (live, or disconnected within the session TTL).
    #[arg(long, default_value_t = defaults().limits.max_sessions)]
    max_sessions: usize,
    /// Calls waiting for one page at once.
    #[arg(long, default_value_t = defaults().limits.max_pending_per_session)]
    max_pending_calls: usize,
    /// Seconds a disconnected page session is kept for its page to come back.
    #[arg(long, default_value_t = defaults().limits.session_ttl.as_secs())]
    session_ttl_secs: u64,
    /// Log tool arguments and results (at debug level; off by default: they may hold personal data).
    #[arg(long)]
    log_payloads: bool,
    /// Agent-defined tools: a JSON file, an array of {name, title?, description, inputSchema,
    /// outputSchema?, requireConfirmation?, fallback?: "form", annotations?, timeoutMs?,
    /// taskSupport?: "forbidden" | "optional" | "required"} (or {"tools": [...]}). Listed to
    /// agents; pages answer them with `registerHandler`.
    #[arg(long, value_name = "FILE")]
    tools: Option<PathBuf>,
    /// Guardrails on tool calls: a policy file (TOML, or JSON) of rules that block, confirm,
    /// redact, rate-limit or log calls by tool and condition (docs/guardrails.md). A file that is
    /// not valid stops the bridge (exit code 2) naming the rule.
    #[arg(long, value_name = "FILE", env = "CLIENT_TOOLS_POLICY")]
    policy: Option<PathBuf>,
    /// Who confirms calls that need it: the page's dialog, or the person at the agent (MCP
    /// elicitation, when the agent's client declares it; else the page).
    #[arg(long, value_enum, default_value_t = defaults().confirm_via)]
    confirm_via: ConfirmVia,
    /// Join a cluster of bridge nodes on NATS (`nats://host:4222`, `tls://…`; docs/deploy.md):
    /// pages on any node are reachable from every node. Without it the bridge runs alone.
    #[arg(long, value_name = "URL", env = "CLIENT_TOOLS_NATS_URL")]
    nats: Option<String>,
    /// NATS credentials file (JWT and NKey seed).
    #[arg(
        long,
        value_name = "FILE",
        env = "CLIENT_TOOLS_NATS_CREDS",
        requires = "nats"
    )]
    nats_creds: Option<PathBuf>,
    /// NATS token.
    #[arg(
        long,
        env = "CLIENT_TOOLS_NATS_TOKEN",
        hide_env_values = true,
        requires = "nats"
    )]
    nats_token: Option<String>,
    /// NATS user (with --nats-password).
    #[arg(long, env = "CLIENT_TOOLS_NATS_USER", requires = "nats")]
    nats_user: Option<String>,
    /// NATS password (with --nats-user).
    #[arg(
        long,
        env = "CLIENT_TOOLS_NATS_PASSWORD",
        hide_env_values = true,
        requires = "nats"
    )]
    nats_password: Option<String>,
    /// CA certificate (PEM) for the NATS server's TLS certificate (TLS is then required).
    #[arg(
        long,
        value_name = "FILE",
        env = "CLIENT_TOOLS_NATS_CA",
        requires = "nats"
    )]
    nats_ca: Option<PathBuf>,
}

/// The bridge's defaults, set once: every flag's default is read from here.
fn defaults() -> BridgeConfig {
    BridgeConfig::default()
}

/// [`defaults`]' per-call timeout, in the unit of `--timeout-ms`.
fn default_timeout_ms() -> u64 {
    u64::try_from(defaults().timeout.as_millis()).unwrap_or(u64::MAX)
}

/// The signed tokens' keys of `--token-keys` and `--token-jwks-url` (fetched now), if any.
async fn token_keys(cli: &Cli) -> Result<Option<TokenKeys>, String> {
    let (audience, issuer) = (cli.token_audience.clone(), cli.token_issuer.clone());
    let keys = match &cli.token_keys {
        Some(path) => TokenKeys::from_file(path, audience, issuer)?,
        None if cli.token_jwks_url.is_some() => TokenKeys::none(audience, issuer),
        None => return Ok(None),
    };
    let keys = match &cli.token_jwks_url {
        Some(url) => keys.with_jwks_url(url, JWKS_REFETCH_EVERY).await?,
        None => keys,
    };
    tracing::info!(?keys, "signed tokens on");
    Ok(Some(keys))
}

/// `--timeout-ms`' help, with the maximum every route applies (the core's `MAX_TIMEOUT_MS`).
fn timeout_help() -> String {
    format!("Default per-call timeout in milliseconds (max {MAX_TIMEOUT_MS})")
}

/// See Cargo.toml: small allocations dominate the bridge's hot path.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let cli = Cli::parse();
    // Logs go to stderr (stdout belongs to the MCP session under --stdio); RUST_LOG overrides.
    // Colours only for a person at a terminal: escape codes in a log file are noise, and writing
    // them was a twentieth of the bridge's CPU per call (one line per call).
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "client_tools_bridge=info".into()),
        )
        .init();
    let signed = cli.token_keys.is_some() || cli.token_jwks_url.is_some();
    if signed && cli.page_token.is_some() {
        eprintln!(
            "client-tools-bridge: --page-token is refused with signed tokens (--token-keys, \
             --token-jwks-url): pages present their signed token instead (docs/security.md)"
        );
        std::process::exit(2);
    }
    let pages_closed = cli.page_token.is_some() || signed;
    if !cli.listen.ip().is_loopback() && (cli.agent_token.is_none() || !pages_closed) {
        eprintln!(
            "client-tools-bridge: listening on {} reaches beyond this machine: set --agent-token \
             and --page-token or signed tokens (docs/security.md)",
            cli.listen
        );
        std::process::exit(2);
    }
    let token_keys = match token_keys(&cli).await {
        Ok(keys) => keys.map(std::sync::Arc::new),
        Err(error) => {
            eprintln!("client-tools-bridge: {error}");
            std::process::exit(2);
        }
    };
    let tools = match cli.tools.as_deref().map(AgentTools::load).transpose() {
        Ok(tools) => tools.unwrap_or_default(),
        Err(error) => {
            eprintln!("client-tools-bridge: {error}");
            std::process::exit(2);
        }
    };
    let policy = match cli.policy.as_deref().map(Policy::load).transpose() {
        Ok(policy) => policy.unwrap_or_default(),
        Err(error) => {
            eprintln!("client-tools-bridge: {error}");
            std::process::exit(2);
        }
    };
    if !policy.is_empty() {
        let rules: Vec<&str> = policy.rule_ids().collect();
        tracing::info!(digest = policy.digest(), rules = %rules.join(", "), "policy loaded");
    }
    let defaults = defaults();
    let config = BridgeConfig {
        listen: cli.listen,
        www_dir: cli.www,
        pkg_dir: cli.pkg,
        agent_token: cli.agent_token,
        page_token: cli.page_token,
        token_keys,
        allowed_hosts: cli.allowed_hosts,
        allowed_origins: cli.allowed_origins,
        allow: cli.allow,
        timeout: client_tools_bridge::config::clamp_timeout(
            Some(Duration::from_millis(cli.timeout_ms)),
            defaults.timeout,
        ),
        limits: Limits {
            max_connections: cli.max_connections,
            max_sessions: cli.max_sessions,
            max_pending_per_session: cli.max_pending_calls,
            session_ttl: Duration::from_secs(cli.session_ttl_secs),
            ..defaults.limits
        },
        log_payloads: cli.log_payloads,
        tools: std::sync::Arc::new(tools),
        confirm_via: cli.confirm_via,
        policy: std::sync::Arc::new(policy),
    };
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let address = listener.local_addr()?;
    let bridge = Bridge::new(config);
    if let Some(url) = cli.nats {
        let options = ClusterOptions {
            url,
            creds_file: cli.nats_creds,
            token: cli.nats_token,
            user: cli.nats_user,
            password: cli.nats_password,
            ca_file: cli.nats_ca,
        };
        if let Err(error) = bridge.join_cluster(&options).await {
            eprintln!("client-tools-bridge: {error}");
            std::process::exit(2);
        }
    }
    // stdout belongs to the MCP session under --stdio: everything else goes to stderr.
    eprintln!("client-tools-bridge listening on http://{address}/");
    eprintln!("  pages connect to   ws://{address}/ws");
    eprintln!("  MCP agents:        http://{address}/mcp");
    eprintln!("  sessions:          http://{address}/api/sessions");
    if let Some(node) = bridge.cluster_node() {
        eprintln!("  cluster node:      {node}");
    }
    if !cli.stdio {
        return bridge.serve(listener).await;
    }
    let serving = bridge.clone();
    tokio::spawn(async move { serving.serve(listener).await });
    let agent = match cli.user {
        Some(user) => McpAgent::for_user(bridge, user),
        None => McpAgent::new(bridge, cli.session),
    };
    let running = agent
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}
