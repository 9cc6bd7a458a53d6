//! Whose pages an agent reaches (SPEC §13): the operator's agent token reaches every page; an
//! agent token the site's backend signed for one person (`role: "agent"`, `sub`) reaches only that
//! person's pages. Every lookup an agent makes goes through [`AgentScope::reaches`]: a session,
//! task or round of another user is answered as unknown — nothing says it exists.

use crate::sessions::page_session::PageSession;

/// Whose pages an agent reaches, decided once per request from its credentials
/// (crate::routes::auth) and carried in the request's extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentScope {
    /// The operator (`--agent-token`, or a bridge with no agent token): every page.
    Everyone,
    /// An agent token signed for one person: the pages of this user (`sub`) only.
    User(String),
}

impl AgentScope {
    /// Whether an agent of this scope may see and call `session`.
    pub fn reaches(&self, session: &PageSession) -> bool {
        self.reaches_user(session.user())
    }

    /// Whether an agent of this scope may see a page serving `user`.
    pub fn reaches_user(&self, user: Option<&str>) -> bool {
        match self {
            AgentScope::Everyone => true,
            AgentScope::User(sub) => user == Some(sub.as_str()),
        }
    }

    /// The user this scope is limited to, if any.
    pub fn user(&self) -> Option<&str> {
        match self {
            AgentScope::Everyone => None,
            AgentScope::User(sub) => Some(sub),
        }
    }
}
