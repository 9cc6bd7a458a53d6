//! Who may talk to the bridge (SPEC §9, docs/security.md): the agent and page credentials, compared
//! in constant time, and the `Host` / `Origin` checks every HTTP route applies.
//!
//! - `Host` (every route): only loopback names, IP literals, and the names given with
//!   `--allowed-host`. A web site that re-points its own DNS name at 127.0.0.1 (DNS rebinding) sends
//!   its own name in `Host` and is refused (`403`).
//! - `Origin` on agent routes (`/mcp`, `/api`): a browser request must come from the bridge's own
//!   origin (the demo console); any other site gets `403`. Non-browser clients send no `Origin`.
//! - `Origin` on `/ws`: the page origins of `--allowed-origin` (loopback origins by default).
//! - Agents present `Authorization: Bearer <agent token>`: the operator's, or (SPEC §13) a signed
//!   agent token, which decides whose pages the agent reaches ([`require_agent`]); pages present
//!   the page token in their first frame (`clienttools/connect`), never in the URL.

use axum::extract::Request;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::bridge::Bridge;
use crate::ids::now_unix_ms;
use crate::routes::route_check::Checked;
use crate::sessions::scope::AgentScope;
use crate::tokens::{Role, Unverified};

/// Whether `presented` is `expected`, in time independent of where they differ (and of the
/// expected length: both are hashed to 32 bytes first).
pub fn secrets_match(presented: &str, expected: &str) -> bool {
    let presented = Sha256::digest(presented.as_bytes());
    let expected = Sha256::digest(expected.as_bytes());
    presented.ct_eq(&expected).into()
}

/// For every route: the `Host` header must name this bridge.
pub(crate) fn require_known_host(bridge: &Bridge, request: &mut Request) -> Checked {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    match host {
        Some(host) if host_allowed(host, &bridge.config().allowed_hosts) => Checked::Pass,
        Some(host) => Checked::Refuse(refuse(
            StatusCode::FORBIDDEN,
            format!(
                "unknown Host '{host}': the bridge answers to loopback names, IP addresses and \
                 the names given with --allowed-host"
            ),
        )),
        None => Checked::Refuse(refuse(
            StatusCode::FORBIDDEN,
            "a Host header is required".into(),
        )),
    }
}

/// For agent routes (`/mcp`, `/api`): same-origin browsers only, and the agent's credential,
/// which decides whose pages it reaches ([`AgentScope`], put in the request's extensions):
/// - the operator's `--agent-token` reaches everyone; so does any agent when the bridge has no agent
///   token and verifies no signed tokens (one developer on one machine, as before SPEC §13);
/// - with signed tokens (`--token-keys`, `--token-jwks-url`), a JWT with `role: "agent"` reaches the
///   pages of its `sub` only; a request with neither credential is refused.
pub(crate) fn require_agent(bridge: &Bridge, request: &mut Request) -> Checked {
    if let Some(refusal) = credential_in_url(request.uri()) {
        return Checked::Refuse(refusal);
    }
    if let Some(origin) = foreign_origin(request.headers()) {
        return Checked::Refuse(refuse(
            StatusCode::FORBIDDEN,
            format!("requests from the web origin {origin} may not act as an agent"),
        ));
    }
    let config = bridge.config();
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token);
    let operator = match (&config.agent_token, presented) {
        (Some(expected), Some(token)) => secrets_match(token, expected),
        (None, _) => config.token_keys.is_none(),
        (Some(_), None) => false,
    };
    let scope =
        if operator {
            AgentScope::Everyone
        } else {
            match (&config.token_keys, presented) {
                (Some(keys), Some(token)) => {
                    match keys.verify_cached(token, Role::Agent, now_unix_ms()) {
                        Ok(verified) => AgentScope::User(verified.sub),
                        Err(Unverified::UnknownKid) => return Checked::AfterKeyRefetch,
                        Err(Unverified::Refused(why)) => {
                            tracing::info!(reason = %why, "agent token refused");
                            return Checked::Refuse(unauthorized(format!(
                                "agent token refused: {why}"
                            )));
                        }
                    }
                }
                (Some(_), None) => return Checked::Refuse(unauthorized(
                    "missing agent token: send Authorization: Bearer <the bridge's --agent-token, \
                     or a signed agent token (role \"agent\")>"
                        .to_owned(),
                )),
                (None, _) => {
                    return Checked::Refuse(unauthorized(
                        "missing or wrong agent token: send Authorization: Bearer <the bridge's \
                     --agent-token>"
                            .to_owned(),
                    ))
                }
            }
        };
    request.extensions_mut().insert(scope);
    Checked::Pass
}

/// The query parameters that name a credential: none may travel in a URL (logs, history,
/// `Referer`), on any route.
const CREDENTIAL_PARAMETERS: [&str; 5] = [
    "token",
    "access_token",
    "jwt",
    "resumeSecret",
    "resume_secret",
];

/// The refusal of a request whose URL carries a credential (`?token=…`): it is refused rather
/// than ignored, so a site that put it there learns at once.
pub(crate) fn credential_in_url(uri: &axum::http::Uri) -> Option<Response> {
    let query = uri.query()?;
    let named = query.split('&').find_map(|pair| {
        let key = pair.split('=').next().unwrap_or_default();
        CREDENTIAL_PARAMETERS
            .iter()
            .find(|name| key.eq_ignore_ascii_case(name))
    })?;
    Some(refuse(
        StatusCode::BAD_REQUEST,
        format!(
            "the URL carries a credential ('{named}'): credentials never travel in a URL — pages \
             send their token in their first frame (clienttools/connect), agents in an \
             Authorization: Bearer header"
        ),
    ))
}

fn unauthorized(message: String) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        message,
    )
        .into_response()
}

/// The token of an `Authorization: Bearer <token>` value (the scheme is case-insensitive).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn refuse(status: StatusCode, message: String) -> Response {
    (status, message).into_response()
}

/// The request's `Origin` when it is a web origin other than the bridge's own (`Host`).
fn foreign_origin(headers: &HeaderMap) -> Option<&str> {
    let origin = headers
        .get(header::ORIGIN)?
        .to_str()
        .unwrap_or("(unreadable)");
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let authority = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    match (authority, host) {
        (Some(authority), Some(host)) if authority.eq_ignore_ascii_case(host) => None,
        _ => Some(origin),
    }
}

/// `host` (with an optional port) is a loopback name, an IP literal, or configured.
pub fn host_allowed(host: &str, configured: &[String]) -> bool {
    let name = host_name(host);
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::IpAddr>().is_ok()
        || configured
            .iter()
            .any(|c| host_name(c).eq_ignore_ascii_case(name))
}

/// The name of a `Host` value, without its port (`[::1]:80` → `::1`).
fn host_name(host: &str) -> &str {
    match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                host
            }
        }),
    }
}

/// Pages may connect from the configured origins; by default from loopback origins (and from
/// non-browser clients, which send no `Origin`).
pub fn page_origin_allowed(origin: Option<&str>, allowed: &[String]) -> bool {
    match origin {
        None => allowed.is_empty(),
        Some(origin) if allowed.is_empty() => is_loopback_origin(origin),
        Some(origin) => allowed.iter().any(|a| a == origin || a == "*"),
    }
}

fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = host_name(rest);
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins() {
        assert!(is_loopback_origin("http://127.0.0.1:8787"));
        assert!(is_loopback_origin("http://localhost"));
        assert!(is_loopback_origin("http://[::1]:80"));
        assert!(!is_loopback_origin("http://127.example.com.evil"));
        assert!(!is_loopback_origin("https://example.com"));
        assert!(!is_loopback_origin("null"));
    }

    #[test]
    fn hosts_that_dns_rebinding_cannot_produce() {
        let none: &[String] = &[];
        assert!(host_allowed("127.0.0.1:8787", none));
        assert!(host_allowed("localhost:8787", none));
        assert!(host_allowed("[::1]:8787", none));
        assert!(host_allowed("10.1.2.3", none));
        assert!(!host_allowed("evil.example:8787", none));
        assert!(!host_allowed("localhost.evil.example", none));
        let configured = ["tools.example.com".to_owned()];
        assert!(host_allowed("tools.example.com:443", &configured));
        assert!(host_allowed("TOOLS.example.com", &configured));
        assert!(!host_allowed("example.com", &configured));
    }

    #[test]
    fn foreign_origins_on_agent_routes() {
        let headers = |origin: &str, host: &str| {
            let mut map = HeaderMap::new();
            map.insert(header::ORIGIN, origin.parse().unwrap());
            map.insert(header::HOST, host.parse().unwrap());
            map
        };
        assert_eq!(
            foreign_origin(&headers("http://127.0.0.1:8787", "127.0.0.1:8787")),
            None
        );
        assert_eq!(
            foreign_origin(&headers("https://evil.example", "127.0.0.1:8787")),
            Some("https://evil.example")
        );
        assert_eq!(
            foreign_origin(&headers("null", "127.0.0.1:8787")),
            Some("null")
        );
        assert_eq!(foreign_origin(&HeaderMap::new()), None);
    }

    #[test]
    fn bearer_tokens() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer abc"), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearerabc"), None);
    }

    #[test]
    fn secrets_compare_equal_only_when_equal() {
        assert!(secrets_match("abc", "abc"));
        assert!(!secrets_match("abd", "abc"));
        assert!(!secrets_match("", "abc"));
        assert!(!secrets_match("abcd", "abc"));
    }
}
