//! The bridge's page sessions: who owns which, which is newest, and when they are forgotten
//! (SPEC §9, docs/security.md).
//!
//! Ownership without state: a session id is a hash of its resume secret. The bridge issues the
//! secret on first connect (256 random bits); a page that presents it later — after a reload, a
//! reconnect, or a restart of the bridge — gets the same id back, and nobody can name an id they
//! do not hold the secret of. A claim on a session whose connection still answers is not a
//! takeover: the newcomer (a duplicated tab, with `sessionStorage` copied) gets a new session.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use client_tools_core::connect::{ConnectParams, ConnectResult};
use client_tools_core::limits::DEFAULT_TIMEOUT_MS;
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::calls::agent_tools::AgentTools;
use crate::calls::policy::Policy;
use crate::ids::{hex, random_hex};
use crate::limits::{Limits, SESSION_SWEEP_EVERY};
use crate::sessions::page_session::{PageSession, RelayReplies, Via, CLOSE_REPLACED};

pub struct SessionTable {
    table: Mutex<Table>,
    connections: AtomicUsize,
    limits: Limits,
    allow: Vec<String>,
    log_payloads: bool,
    agent_tools: Arc<AgentTools>,
    default_timeout: Duration,
    /// The operator's guardrails, shared by every session (crate::calls::policy).
    policy: Arc<Policy>,
    /// In a cluster: how sessions answer requests other nodes relay.
    relay_replies: OnceLock<Arc<dyn RelayReplies>>,
    /// Bumped whenever a session's tools or connection change, or (in a cluster) the directory of
    /// every node's pages: what waits for a page ([`Self::watch`]) wakes then, instead of polling.
    changes: Arc<watch::Sender<u64>>,
}

struct Table {
    by_id: HashMap<String, Arc<PageSession>>,
    /// The ids of each user's sessions (SPEC §13): a user's tabs without a scan of every session.
    by_user: HashMap<String, HashSet<String>>,
    last_sweep: Instant,
}

impl Table {
    fn remove(&mut self, id: &str) -> Option<Arc<PageSession>> {
        let session = self.by_id.remove(id)?;
        if let Some(user) = session.user() {
            if let Some(ids) = self.by_user.get_mut(user) {
                ids.remove(id);
                if ids.is_empty() {
                    self.by_user.remove(user);
                }
            }
        }
        Some(session)
    }
}

/// What a page's connect claim resolved to.
pub struct Claimed {
    pub session: Arc<PageSession>,
    pub answer: ConnectResult,
}

/// Why a connect was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Every one of the `max_sessions` sessions is live (or has calls waiting on it).
    TooManySessions(usize),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::TooManySessions(limit) => write!(
                f,
                "the bridge has {limit} live page sessions, its limit: try again later"
            ),
        }
    }
}

/// Counts one open page connection while it lives (see [`SessionTable::open_connection`]).
pub struct ConnectionSlot {
    sessions: Arc<SessionTable>,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.sessions.connections.fetch_sub(1, Ordering::Relaxed);
    }
}

impl SessionTable {
    pub fn new(limits: Limits, allow: Vec<String>, log_payloads: bool) -> Self {
        Self {
            table: Mutex::new(Table {
                by_id: HashMap::new(),
                by_user: HashMap::new(),
                last_sweep: tokio::time::Instant::now().into_std(),
            }),
            connections: AtomicUsize::new(0),
            limits,
            allow,
            log_payloads,
            agent_tools: Arc::default(),
            default_timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            policy: Arc::default(),
            relay_replies: OnceLock::new(),
            changes: Arc::new(watch::channel(0).0),
        }
    }

    /// Joins the cluster: every session made from now on answers relayed requests through it.
    pub(crate) fn set_relay_replies(&self, replies: Arc<dyn RelayReplies>) {
        let _ = self.relay_replies.set(replies);
    }

    /// The `--tools FILE` tools and the default call timeout every session's calls use.
    /// The operator's policy for every session's calls (`--policy FILE`).
    pub fn with_policy(mut self, policy: Arc<Policy>) -> Self {
        self.policy = policy;
        self
    }

    pub fn with_agent_tools(
        mut self,
        agent_tools: Arc<AgentTools>,
        default_timeout: Duration,
    ) -> Self {
        self.agent_tools = agent_tools;
        self.default_timeout = default_timeout;
        self
    }

    /// A slot for one more page connection, or `None` at `max_connections`.
    pub fn open_connection(self: &Arc<Self>) -> Option<ConnectionSlot> {
        let limit = self.limits.max_connections;
        self.connections
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok()?;
        Some(ConnectionSlot {
            sessions: self.clone(),
        })
    }

    /// Page connections open now.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// Resolves a page's connect: its own session back (with the secret), or a new one.
    /// `user`: the `sub` of the page's signed token (SPEC §13), which owns the session with the
    /// secret: the same secret with another user's token names another session.
    /// `known_elsewhere`: another cluster node had the session (its page's calls go on: resumed).
    pub async fn claim(
        &self,
        params: &ConnectParams,
        user: Option<&str>,
        known_elsewhere: bool,
    ) -> Result<Claimed, Refused> {
        let Some(secret) = params.resume_secret.as_deref().filter(|s| valid_secret(s)) else {
            return self.create(new_secret(), user);
        };
        let id = session_id_of(secret, user);
        let Some(existing) = self.get(&id) else {
            // Unknown here (expired, or the bridge restarted): the secret still owns its id.
            let mut claimed = self.create(secret.to_owned(), user)?;
            claimed.answer.resumed = known_elsewhere;
            return Ok(claimed);
        };
        if existing.user() != user {
            // Never another user's session (the id includes the user: only a session linked
            // from a directory entry that named none could get here).
            tracing::info!(session = %id, user = existing.user().unwrap_or(""), claimant = user.unwrap_or(""), "resume claim by another user: new session");
            return self.create(new_secret(), user);
        }
        // A session linked to another node: that node was asked already (crate::cluster).
        if existing.via() == Some(Via::Socket) {
            if existing.is_answering(self.limits.takeover_probe).await {
                // Its page is alive: this is another tab with a copy of its storage.
                tracing::info!(session = %id, user = user.unwrap_or(""), "resume claim on a live session: new session");
                return self.create(new_secret(), user);
            }
            existing.close_connection(
                CLOSE_REPLACED,
                "replaced by a newer connection of the same page session",
            );
        }
        Ok(Claimed {
            session: existing,
            answer: ConnectResult {
                session_id: id,
                resume_secret: secret.to_owned(),
                resumed: true,
                user: user.map(str::to_owned),
                token_expires_in_ms: None,
            },
        })
    }

    fn create(&self, secret: String, user: Option<&str>) -> Result<Claimed, Refused> {
        let id = session_id_of(&secret, user);
        let session = self.insert(&id, user)?;
        Ok(Claimed {
            session,
            answer: ConnectResult {
                session_id: id,
                resume_secret: secret,
                resumed: false,
                user: user.map(str::to_owned),
                token_expires_in_ms: None,
            },
        })
    }

    /// The session `id` of a page on another cluster node, made here to reach it (crate::cluster).
    /// `user`: the person that node's page serves, as its directory entry says.
    pub(crate) fn linked(&self, id: &str, user: Option<&str>) -> Result<Arc<PageSession>, Refused> {
        self.insert(id, user)
    }

    /// The session `id`, made if it is not in the table; refused when the table is full of live
    /// sessions (else the one disconnected longest makes room).
    fn insert(&self, id: &str, user: Option<&str>) -> Result<Arc<PageSession>, Refused> {
        let id = id.to_owned();
        let mut table = self.lock();
        self.sweep(&mut table, true);
        if table.by_id.len() >= self.limits.max_sessions && !table.by_id.contains_key(&id) {
            let now = tokio::time::Instant::now().into_std();
            let longest_gone = table
                .by_id
                .iter()
                .filter(|(_, s)| s.pending_calls() == 0)
                .filter_map(|(id, s)| Some((s.disconnected_for(now)?, id.clone())))
                .max();
            // Else a session linked to another cluster node's page with no call waiting: it is
            // made again when an agent needs it.
            let linked = || {
                table
                    .by_id
                    .iter()
                    .filter(|(_, s)| s.pending_calls() == 0)
                    .find(|(_, s)| matches!(s.via(), Some(Via::Node(_))))
                    .map(|(id, _)| id.clone())
            };
            match longest_gone.map(|(_, gone)| gone).or_else(linked) {
                Some(gone) => {
                    if let Some(forgotten) = table.remove(&gone) {
                        if matches!(forgotten.via(), Some(Via::Node(_))) {
                            forgotten.drop_link();
                        }
                    }
                }
                None => return Err(Refused::TooManySessions(self.limits.max_sessions)),
            }
        }
        if let Some(user) = user {
            let ids = table.by_user.entry(user.to_owned()).or_default();
            ids.insert(id.clone());
        }
        let session = table
            .by_id
            .entry(id.clone())
            .or_insert_with(|| {
                Arc::new(
                    PageSession::new(
                        id.clone(),
                        self.allow.clone(),
                        self.limits.clone(),
                        self.log_payloads,
                    )
                    .with_agent_tools(self.agent_tools.clone(), self.default_timeout)
                    .with_policy(self.policy.clone())
                    .with_relay_replies(self.relay_replies.get().cloned())
                    .with_table_changes(self.changes.clone())
                    .with_user(user.map(str::to_owned)),
                )
            })
            .clone();
        Ok(session)
    }

    /// The session with this id, if it exists and has not expired.
    pub fn get(&self, id: &str) -> Option<Arc<PageSession>> {
        let mut table = self.lock();
        self.sweep(&mut table, false);
        table.by_id.get(id).cloned()
    }

    /// The most recently connected page that is connected now (one pass, no sorting: unbound MCP
    /// agents ask this twice a second).
    /// A receiver that changes whenever some session's tools or connection change (and, in a
    /// cluster, whenever the directory of every node's pages does: [`Self::changed`]).
    pub(crate) fn watch(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Something [`Self::watch`]ers look at changed outside this node's sessions (a cluster
    /// node's page came, went or listed tools).
    pub(crate) fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    pub fn newest(&self) -> Option<Arc<PageSession>> {
        let mut table = self.lock();
        self.sweep(&mut table, false);
        table
            .by_id
            .values()
            .filter_map(|session| Some((session.connected_at()?, session)))
            .max_by_key(|(connected_at, _)| *connected_at)
            .map(|(_, session)| session.clone())
    }

    /// The sessions of `user` on this node (connected or not, not expired).
    pub fn of_user(&self, user: &str) -> Vec<Arc<PageSession>> {
        let mut table = self.lock();
        self.sweep(&mut table, false);
        let Some(ids) = table.by_user.get(user) else {
            return Vec::new();
        };
        ids.iter()
            .filter_map(|id| table.by_id.get(id))
            .filter(|session| session.user() == Some(user))
            .cloned()
            .collect()
    }

    /// Every session: connected ones first, most recently connected first.
    pub fn list(&self) -> Vec<Arc<PageSession>> {
        let mut all: Vec<_> = {
            let mut table = self.lock();
            self.sweep(&mut table, false);
            table.by_id.values().cloned().collect()
        };
        all.sort_by_key(|s| std::cmp::Reverse(s.connected_at()));
        all
    }

    /// Forgets sessions disconnected longer than the TTL (at most once per [`SESSION_SWEEP_EVERY`] unless
    /// `now_anyway`) that no call is waiting on.
    fn sweep(&self, table: &mut Table, now_anyway: bool) {
        let now = tokio::time::Instant::now().into_std();
        if !now_anyway && now < table.last_sweep + SESSION_SWEEP_EVERY {
            return;
        }
        table.last_sweep = now;
        let ttl = self.limits.session_ttl;
        let expired: Vec<String> = table
            .by_id
            .iter()
            .filter(|(_, session)| {
                session
                    .disconnected_for(now)
                    .is_some_and(|gone| gone >= ttl && session.pending_calls() == 0)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            table.remove(&id);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// 256 random bits, hex.
fn new_secret() -> String {
    random_hex(32)
}

/// The session id a resume secret owns (with `user`'s token), if it is one the bridge could have
/// issued.
pub(crate) fn id_of_secret(secret: &str, user: Option<&str>) -> Option<String> {
    valid_secret(secret).then(|| session_id_of(secret, user))
}

/// What the bridge issues: 64 hex digits.
fn valid_secret(secret: &str) -> bool {
    secret.len() == 64 && secret.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The public id of the session a secret owns: 128 bits of its hash, hex. With a user (a signed
/// page token's `sub`), the hash covers the user too: resuming needs the secret *and* a token of the
/// same user (SPEC §13), and no user's secret names another user's session.
fn session_id_of(secret: &str, user: Option<&str>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"client-tools session id\0");
    hasher.update(secret.to_ascii_lowercase().as_bytes());
    if let Some(user) = user {
        hasher.update(b"\0");
        hasher.update(user.as_bytes());
    }
    hex(&hasher.finalize()[..16])
}

#[cfg(test)]
mod tests {
    use client_tools_core::protocol::method;
    use serde_json::json;

    use super::*;
    use crate::sessions::fake_page::FakePage;
    use crate::sessions::trace_capture::capture_trace;

    fn sessions(limits: Limits) -> SessionTable {
        SessionTable::new(limits, Vec::new(), false)
    }

    #[tokio::test]
    async fn a_secret_owns_its_id_and_nothing_else_does() {
        let sessions = sessions(Limits::default());
        let first = sessions
            .claim(&ConnectParams::default(), None, false)
            .await
            .unwrap();
        assert!(!first.answer.resumed);
        assert_eq!(first.answer.session_id.len(), 32);
        assert_eq!(first.answer.resume_secret.len(), 64);
        let resume = ConnectParams {
            token: None,
            resume_secret: Some(first.answer.resume_secret.clone()),
        };
        let again = sessions.claim(&resume, None, false).await.unwrap();
        assert!(again.answer.resumed);
        assert_eq!(again.answer.session_id, first.answer.session_id);
        assert!(Arc::ptr_eq(&again.session, &first.session));
        // A made-up secret gets its own, new session; a malformed one a fresh secret.
        let guess = ConnectParams {
            token: None,
            resume_secret: Some("0".repeat(64)),
        };
        let guessed = sessions.claim(&guess, None, false).await.unwrap();
        assert_ne!(guessed.answer.session_id, first.answer.session_id);
        let malformed = ConnectParams {
            token: None,
            resume_secret: Some(first.answer.session_id.clone()),
        };
        let fresh = sessions.claim(&malformed, None, false).await.unwrap();
        assert_ne!(fresh.answer.resume_secret, first.answer.session_id);
        assert!(!fresh.answer.resumed);
    }

    #[tokio::test]
    async fn full_tables_forget_the_longest_gone_session_first() {
        let sessions = sessions(Limits {
            max_sessions: 2,
            ..Limits::default()
        });
        let a = sessions
            .claim(&ConnectParams::default(), None, false)
            .await
            .unwrap();
        let b = sessions
            .claim(&ConnectParams::default(), None, false)
            .await
            .unwrap();
        let c = sessions
            .claim(&ConnectParams::default(), None, false)
            .await
            .unwrap();
        // Never-connected sessions count as gone since they were made: `a` went first.
        assert!(sessions.get(&a.answer.session_id).is_none());
        assert!(sessions.get(&b.answer.session_id).is_some());
        assert!(sessions.get(&c.answer.session_id).is_some());
    }

    #[tokio::test]
    async fn a_full_table_forgets_a_linked_session_before_refusing_a_page() {
        let sessions = sessions(Limits {
            max_sessions: 1,
            ..Limits::default()
        });
        let linked = sessions.linked(&"a".repeat(32), None).unwrap();
        let (sender, _queue) = crate::page::connection_queue::channel(8, 1 << 16);
        let kill = Arc::new(tokio::sync::Notify::new());
        let node = "b".repeat(16);
        let at = std::time::SystemTime::now();
        assert!(linked.attach_link(sender, kill.clone(), node, at).is_some());
        let page = sessions
            .claim(&ConnectParams::default(), None, false)
            .await
            .unwrap();
        assert!(sessions.get(linked.id()).is_none());
        assert!(sessions.get(&page.answer.session_id).is_some());
        // The forgotten session's link was told to stop.
        assert!(futures_util::FutureExt::now_or_never(kill.notified()).is_some());
        // A page's own live session is never forgotten for another page.
        let (sender, _queue) = crate::page::connection_queue::channel(8, 1 << 16);
        page.session
            .attach(sender, Arc::new(tokio::sync::Notify::new()));
        let refused = sessions.claim(&ConnectParams::default(), None, false).await;
        assert!(matches!(refused, Err(Refused::TooManySessions(1))));
    }

    /// A resume claim's events name the session's user (SPEC §13: every event of a session does):
    /// a live session's own user, and a session of no user claimed with another user's token.
    #[tokio::test]
    async fn resume_claims_log_the_sessions_user() {
        let (captured, _trace) = capture_trace();
        let sessions = sessions(Limits::default());
        let first = sessions
            .claim(&ConnectParams::default(), Some("alice"), false)
            .await
            .unwrap();
        let mut page = FakePage::connect(&first.session);
        let again = ConnectParams {
            token: None,
            resume_secret: Some(first.answer.resume_secret.clone()),
        };
        let (claimed, ()) = tokio::join!(sessions.claim(&again, Some("alice"), false), async {
            let (id, _) = page.request(method::PING).await;
            page.answer(&id, json!({}));
        });
        assert_ne!(claimed.unwrap().answer.session_id, first.answer.session_id);
        // A session linked from a directory entry that named no user, claimed with bob's token.
        let secret = new_secret();
        let linked = sessions.linked(&session_id_of(&secret, Some("bob")), None);
        let bobs = ConnectParams {
            token: None,
            resume_secret: Some(secret),
        };
        sessions.claim(&bobs, Some("bob"), false).await.unwrap();

        let logged = captured.text();
        let event = |message: &str| {
            let found = logged.lines().find(|line| line.contains(message));
            found.unwrap_or_else(|| panic!("no {message:?} in {logged}"))
        };
        let live = event("resume claim on a live session");
        let session = format!("session={}", first.answer.session_id);
        assert!(
            live.contains(&session) && live.contains("user=\"alice\""),
            "{live}"
        );
        let other = event("resume claim by another user");
        let session = format!("session={}", linked.unwrap().id());
        assert!(other.contains(&session), "{other}");
        assert!(other.contains("user=\"\" claimant=\"bob\""), "{other}");
    }

    #[test]
    fn ids_are_hashes_of_secrets() {
        let secret = new_secret();
        assert_ne!(secret, new_secret());
        assert_eq!(
            session_id_of(&secret, None),
            session_id_of(&secret.to_uppercase(), None)
        );
        assert!(!session_id_of(&secret, None).contains(&secret[..8]));
        // A user's secret names that user's session only.
        let alice = session_id_of(&secret, Some("alice"));
        assert_ne!(alice, session_id_of(&secret, None));
        assert_ne!(alice, session_id_of(&secret, Some("bob")));
    }
}
