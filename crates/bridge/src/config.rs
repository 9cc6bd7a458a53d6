//! The bridge's settings: the command-line flags of SPEC §9, usable from Rust as a plain struct.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use client_tools_core::limits::{call_timeout, DEFAULT_TIMEOUT_MS};

use crate::calls::agent_tools::AgentTools;
use crate::calls::policy::Policy;
use crate::limits::{whole_ms, Limits};
use crate::tokens::TokenKeys;

/// Who is asked to confirm a call that needs it (SPEC §7, `--confirm-via`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ConfirmVia {
    /// The page's dialog (or its `confirm` callback) asks, as always.
    #[default]
    Page,
    /// The person at the agent is asked through MCP elicitation when the agent's client declares
    /// it; otherwise the page asks.
    Agent,
}

/// `Debug` shows whether each token is set, never the token.
#[derive(Clone)]
pub struct BridgeConfig {
    /// Where to listen; loopback by default.
    pub listen: SocketAddr,
    /// The site served at `/` (the demo by default).
    pub www_dir: PathBuf,
    /// The built npm package served at `/pkg/`.
    pub pkg_dir: PathBuf,
    /// Required from agents (`/mcp`, `/api`: `Authorization: Bearer`) when set.
    pub agent_token: Option<String>,
    /// Required from pages (in their first frame, `clienttools/connect`) when set.
    pub page_token: Option<String>,
    /// Signed tokens (SPEC §13, `--token-keys`, `--token-jwks-url`): pages and agents present JWTs
    /// naming their user; `None`: no signed tokens, the static tokens alone.
    pub token_keys: Option<Arc<TokenKeys>>,
    /// Extra `Host` names HTTP requests may carry (beyond loopback names, IP addresses and the listen
    /// address): the names the bridge is reached by behind a proxy or TLS terminator.
    pub allowed_hosts: Vec<String>,
    /// `Origin`s pages may connect from; empty = loopback origins only. Clients that send no `Origin`
    /// (not browsers) are let in: docs/security.md.
    pub allowed_origins: Vec<String>,
    /// Original tool names agents may call; empty = all.
    pub allow: Vec<String>,
    /// Default per-call timeout.
    pub timeout: Duration,
    /// Bounds on connections, sessions, queues and timers.
    pub limits: Limits,
    /// Log tool arguments and results in the per-call trace (off: they may hold personal data).
    pub log_payloads: bool,
    /// Agent-defined tools (`--tools FILE`, [`AgentTools::load`]).
    pub tools: Arc<AgentTools>,
    /// Who confirms calls that need it (`--confirm-via`).
    pub confirm_via: ConfirmVia,
    /// The operator's guardrails on tool calls (`--policy FILE`, [`Policy::load`]).
    pub policy: Arc<Policy>,
}

impl BridgeConfig {
    /// The `aud` signed tokens must carry unless told otherwise (`--token-audience`; the audience
    /// is held by [`TokenKeys`], made with it).
    pub const DEFAULT_TOKEN_AUDIENCE: &'static str = "client-tools";
}

impl Default for BridgeConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8787)),
            www_dir: PathBuf::from("www"),
            pkg_dir: PathBuf::from("pkg"),
            agent_token: None,
            page_token: None,
            token_keys: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            allow: Vec::new(),
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            limits: Limits::default(),
            log_payloads: false,
            tools: Arc::default(),
            confirm_via: ConfirmVia::default(),
            policy: Arc::default(),
        }
    }
}

impl std::fmt::Debug for BridgeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted = |token: &Option<String>| token.as_ref().map(|_| "<redacted>");
        f.debug_struct("BridgeConfig")
            .field("listen", &self.listen)
            .field("www_dir", &self.www_dir)
            .field("pkg_dir", &self.pkg_dir)
            .field("agent_token", &redacted(&self.agent_token))
            .field("page_token", &redacted(&self.page_token))
            .field("token_keys", &self.token_keys)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("allow", &self.allow)
            .field("timeout", &self.timeout)
            .field("limits", &self.limits)
            .field("log_payloads", &self.log_payloads)
            .field(
                "tools",
                &self.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
            )
            .field("confirm_via", &self.confirm_via)
            .field("policy", &self.policy.digest())
            .finish()
    }
}

/// Clamps a requested call timeout to the core's `MAX_TIMEOUT_MS` (the core's
/// `limits::call_timeout`); zero means the default.
pub fn clamp_timeout(requested: Option<Duration>, default: Duration) -> Duration {
    let asked = requested.filter(|t| !t.is_zero()).map(whole_ms);
    let ms = call_timeout(asked, None, whole_ms(default)).unwrap_or_else(|too_long| too_long.limit);
    Duration::from_millis(ms)
}
