//! Who may talk to the bridge (SPEC §9, docs/security.md): the agent and page credentials, compared
//! in constant time, and the `Host` / `Origin` checks every HTTP route applies.
//!
//! - `Host` (every route): only loopback names, IP literals, and the names given with
//!   `--allowed-host`. A web site that re-points its own DNS name at 127.0.0.1 (DNS rebinding) sends
//!   its own name in `Host` and is refused (`403`).
//! - `Origin` on agent routes (`/mcp`, `/api`): a browser request must come from the bridge's own
//!   origin (the demo console); any other site gets `403`. Non-browser clients send no `Origin`.
//! - `Origin` on `/ws`: the page origins of `--allowed-origin` (loopback origins by default).
//! - Agents present `Authorization: Bearer <agent token>`; pages present the page token in their
//!   first frame (`clienttools/connect`), never in the URL.

use axum::extract::Request;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::bridge::Bridge;

/// Whether `presented` is `expected`, in time independent of where they differ (and of the
/// expected length: both are hashed to 32 bytes first).
pub fn secrets_match(presented: &str, expected: &str) -> bool {
    let presented = Sha256::digest(presented.as_bytes());
    let expected = Sha256::digest(expected.as_bytes());
    presented.ct_eq(&expected).into()
}

/// For every route: the `Host` header must name this bridge (`Some`: the refusal).
pub(crate) fn require_known_host(bridge: &Bridge, request: &Request) -> Option<Response> {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    match host {
        Some(host) if host_allowed(host, &bridge.config().allowed_hosts) => None,
        Some(host) => Some(refuse(
            StatusCode::FORBIDDEN,
            format!(
                "unknown Host '{host}': the bridge answers to loopback names, IP addresses and \
                 the names given with --allowed-host"
            ),
        )),
        None => Some(refuse(
            StatusCode::FORBIDDEN,
            "a Host header is required".into(),
        )),
    }
}

/// For agent routes (`/mcp`, `/api`): same-origin browsers only, and the agent token (`Some`: the
/// refusal).
pub(crate) fn require_agent(bridge: &Bridge, request: &Request) -> Option<Response> {
    if let Some(origin) = foreign_origin(request.headers()) {
        return Some(refuse(
            StatusCode::FORBIDDEN,
            format!("requests from the web origin {origin} may not act as an agent"),
        ));
    }
    let Some(expected) = &bridge.config().agent_token else {
        return None;
    };
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_token);
    match presented {
        Some(token) if secrets_match(token, expected) => None,
        _ => Some((
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong agent token: send Authorization: Bearer <the bridge's --agent-token>",
        )
            .into_response()),
    }
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
