//! W3C Trace Context in a request's `_meta` (MCP 2026-07-28, *General fields*: `traceparent`,
//! `tracestate` and `baggage` are reserved there, unprefixed, in W3C's formats; SEP-414). The one
//! reading of it for both sides: the page engine gives a call's trace context to its handler
//! (`ctx.traceparent`) and puts it in the call's result; the bridge checks an agent's before it
//! logs or forwards it.
//!
//! What is not W3C's format is dropped, never failing the call: a `traceparent` that is not one
//! (and the `tracestate` with it: W3C reads a `tracestate` only beside a valid `traceparent`), or a
//! `tracestate` that is not one (the `traceparent` stays). The reader says what it dropped and why,
//! without quoting the value (a side may log the reason).

use serde_json::{Map, Value};

use crate::limits::{MAX_TRACEPARENT_CHARS, MAX_TRACESTATE_CHARS, MAX_TRACESTATE_MEMBERS};

pub const TRACEPARENT: &str = "traceparent";
pub const TRACESTATE: &str = "tracestate";

/// A request's trace context, checked ([`TraceContext::read`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub traceparent: String,
    pub tracestate: Option<String>,
}

/// What of a request's trace context was dropped ([`TraceContext::read`]): the `_meta` key, and
/// what was wrong with its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dropped {
    pub key: &'static str,
    pub why: &'static str,
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Dropped { key, why } = self;
        write!(
            f,
            "_meta {key} was dropped (the call goes on without it): it {why}"
        )
    }
}

impl TraceContext {
    /// The trace context of a request's `_meta`, and what of it was dropped, if anything.
    pub fn read(meta: Option<&Map<String, Value>>) -> (Option<Self>, Option<Dropped>) {
        let get = |key| meta.and_then(|meta| meta.get(key));
        let parent = get(TRACEPARENT).map(|parent| {
            let text = parent.as_str().ok_or("is not a string")?;
            check_traceparent(text).map(|()| text)
        });
        // W3C reads a `tracestate` only beside a valid `traceparent`.
        let state = match parent {
            Some(Ok(_)) => get(TRACESTATE).map(checked_tracestate),
            _ => get(TRACESTATE).map(|_| Err("came without a valid traceparent")),
        };
        let (key, why) = match (parent, state) {
            (Some(Ok(traceparent)), state) => {
                let trace = Self {
                    traceparent: traceparent.to_owned(),
                    tracestate: state.and_then(Result::ok).flatten().map(str::to_owned),
                };
                let dropped = state.and_then(Result::err).map(|why| Dropped {
                    key: TRACESTATE,
                    why,
                });
                return (Some(trace), dropped);
            }
            (Some(Err(why)), _) => (TRACEPARENT, why),
            (None, Some(Err(why))) => (TRACESTATE, why),
            (None, _) => return (None, None),
        };
        (None, Some(Dropped { key, why }))
    }

    /// Puts it in a `_meta` (a result's, or a request's), replacing what was there.
    pub fn put(self, meta: &mut Map<String, Value>) {
        meta.insert(TRACEPARENT.into(), self.traceparent.into());
        match self.tracestate {
            Some(state) => meta.insert(TRACESTATE.into(), state.into()),
            None => meta.remove(TRACESTATE),
        };
    }
}

/// W3C Trace Context's `traceparent`: `version-traceid-parentid-flags`, two, 32, 16 and two
/// lowercase hex digits; version `ff` is invalid, and so is an all-zero trace-id or parent-id. A
/// version other than `00` may be longer: more fields in hex, after a `-` (up to
/// [`MAX_TRACEPARENT_CHARS`] in all here).
fn check_traceparent(text: &str) -> Result<(), &'static str> {
    let bytes = text.as_bytes();
    let later = !text.starts_with("00");
    if bytes.len() < 55 || bytes.len() > MAX_TRACEPARENT_CHARS || (bytes.len() > 55 && !later) {
        return Err("is not 55 characters (version 00), or 55 to 128 (a later version)");
    }
    let (mut trace_id, mut parent_id) = (false, false);
    for (at, &byte) in bytes.iter().enumerate() {
        let dash = matches!(at, 2 | 35 | 52 | 55);
        let fits = match byte {
            b'-' => dash || at > 55,
            b'0'..=b'9' | b'a'..=b'f' => !dash,
            _ => false,
        };
        if !fits {
            return Err("is not version-traceid-parentid-flags in lowercase hex");
        }
        trace_id |= byte != b'0' && (3..35).contains(&at);
        parent_id |= byte != b'0' && (36..52).contains(&at);
    }
    if text.starts_with("ff") {
        return Err("has version ff, which is invalid");
    }
    match trace_id && parent_id {
        true => Ok(()),
        false => Err("has an all-zero trace-id or parent-id"),
    }
}

/// W3C Trace Context's `tracestate`, bounded: at most [`MAX_TRACESTATE_CHARS`] characters and
/// [`MAX_TRACESTATE_MEMBERS`] comma-separated list members, and nothing but printable ASCII (and
/// tabs). Its members' keys and values are the vendors' to read: not checked here. `None` for an
/// empty one.
fn checked_tracestate(value: &Value) -> Result<Option<&str>, &'static str> {
    let text = value.as_str().ok_or("is not a string")?;
    let commas = text.bytes().filter(|&byte| byte == b',').count();
    if text.len() > MAX_TRACESTATE_CHARS || commas >= MAX_TRACESTATE_MEMBERS {
        return Err("is over 512 characters or 32 list members");
    }
    match text
        .bytes()
        .all(|byte| byte == b'\t' || (b' '..=b'~').contains(&byte))
    {
        true => Ok((!text.is_empty()).then_some(text)),
        false => Err("has characters other than printable ASCII"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
    const LENGTH: &str = "is not 55 characters (version 00), or 55 to 128 (a later version)";
    const MALFORMED: &str = "is not version-traceid-parentid-flags in lowercase hex";
    const ZERO: &str = "has an all-zero trace-id or parent-id";
    const OVER: &str = "is over 512 characters or 32 list members";
    const UNPRINTABLE: &str = "has characters other than printable ASCII";

    fn read(meta: Value) -> (Option<TraceContext>, Option<Dropped>) {
        TraceContext::read(meta.as_object())
    }

    /// A later version's traceparent: 00's four fields, then `rest`.
    fn later(rest: &str) -> String {
        format!("cc{}{rest}", &PARENT[2..])
    }

    fn why_dropped(traceparent: Value) -> &'static str {
        let (trace, dropped) = read(json!({"traceparent": traceparent, "tracestate": "a=b"}));
        assert_eq!(trace, None, "{traceparent}");
        let dropped = dropped.unwrap_or_else(|| panic!("{traceparent} was kept"));
        assert_eq!(dropped.key, TRACEPARENT);
        dropped.why
    }

    #[test]
    fn a_valid_context_is_kept_as_it_came() {
        let state = "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7";
        let (trace, dropped) = read(json!({"traceparent": PARENT, "tracestate": state}));
        assert_eq!(dropped, None);
        let trace = trace.unwrap();
        assert_eq!(trace.traceparent, PARENT);
        assert_eq!(trace.tracestate.as_deref(), Some(state));
        // A later version may carry more fields after the four it shares with 00, up to 128
        // characters here.
        for kept in [later("-abcdef"), later(&format!("-{}", "a".repeat(72)))] {
            assert_eq!(
                read(json!({"traceparent": kept})).0.unwrap().traceparent,
                kept
            );
        }
        // Flags are any two hex digits; blank members and tabs between them are W3C's too.
        let unsampled = PARENT.replace("-01", "-00");
        let blanks = " ,\tt@sys=v w ,,";
        let (trace, dropped) = read(json!({"traceparent": unsampled, "tracestate": blanks}));
        assert_eq!(trace.unwrap().tracestate.as_deref(), Some(blanks));
        assert_eq!(dropped, None);
        // None at all, or an empty tracestate: nothing.
        assert_eq!(TraceContext::read(None), (None, None));
        assert_eq!(read(json!({"progressToken": 1})), (None, None));
        let (trace, dropped) = read(json!({"traceparent": PARENT, "tracestate": ""}));
        assert_eq!((trace.unwrap().tracestate, dropped), (None, None));
    }

    #[test]
    fn a_traceparent_that_is_not_w3c_is_dropped_with_its_tracestate() {
        for (traceparent, why) in [
            (json!(1), "is not a string"),
            (json!(null), "is not a string"),
            (json!({"traceparent": PARENT}), "is not a string"),
            (PARENT.to_uppercase().into(), MALFORMED),
            (PARENT.replace("0af7", "0AF7").into(), MALFORMED),
            (
                format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32)).into(),
                ZERO,
            ),
            (
                PARENT.replace("00f067aa0ba902b7", &"0".repeat(16)).into(),
                ZERO,
            ),
            (
                format!("ff{}", &PARENT[2..]).into(),
                "has version ff, which is invalid",
            ),
            // Version 00 is exactly 55 characters; a later one at most 128 here.
            (format!("{PARENT}-01").into(), LENGTH),
            (later(&format!("-{}", "a".repeat(73))).into(), LENGTH),
            (PARENT[..54].into(), LENGTH),
            ("".into(), LENGTH),
            (PARENT.replace('-', "_").into(), MALFORMED),
            (PARENT.replacen('a', "g", 1).into(), MALFORMED),
            // Dashes where digits belong, and the reverse.
            (format!("00-{}", &PARENT[2..54]).into(), MALFORMED),
            (format!("0-{}", &PARENT[1..]).into(), MALFORMED),
            // A later version's extra fields follow a dash, in hex.
            (later("x-ab").into(), MALFORMED),
            (later("0abc").into(), MALFORMED),
            (later("-\nab").into(), MALFORMED),
            (later("").replace("-01", "-0\u{e9}").into(), MALFORMED),
        ] {
            assert_eq!(why_dropped(traceparent.clone()), why, "{traceparent}");
        }
    }

    #[test]
    fn a_tracestate_that_is_not_w3c_is_dropped_alone() {
        let dropped = |tracestate: Value| {
            let (trace, dropped) = read(json!({"traceparent": PARENT, "tracestate": tracestate}));
            let trace = trace.expect("the traceparent stays");
            assert_eq!(
                (trace.traceparent.as_str(), trace.tracestate),
                (PARENT, None)
            );
            let dropped = dropped.unwrap_or_else(|| panic!("{tracestate} was kept"));
            assert_eq!(dropped.key, TRACESTATE);
            dropped.why
        };
        let ten_kb = format!("a={}", "b".repeat(10 * 1024));
        assert_eq!(dropped(ten_kb.into()), OVER);
        let many = (0..33)
            .map(|n| format!("k{n}=v"))
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(dropped(many.into()), OVER);
        assert_eq!(
            dropped(",".repeat(32).into()),
            OVER,
            "blank members count (W3C)"
        );
        assert_eq!(dropped(json!(7)), "is not a string");
        assert_eq!(dropped(json!(["a=b"])), "is not a string");
        for bad in [
            "k=v\n",
            "k=caf\u{e9}",
            "a=b,\r\nc=d",
            "k=\u{1b}[31m",
            "k=\u{7f}",
        ] {
            assert_eq!(dropped(bad.into()), UNPRINTABLE, "{bad:?}");
        }
        // Exactly the bounds: kept.
        let at_most = (0..32)
            .map(|n| format!("k{n}=v"))
            .collect::<Vec<_>>()
            .join(",");
        let (trace, _) = read(json!({"traceparent": PARENT, "tracestate": at_most}));
        assert_eq!(trace.unwrap().tracestate, Some(at_most));
        let long = format!("a={}", "b".repeat(MAX_TRACESTATE_CHARS - 2));
        let (trace, _) = read(json!({"traceparent": PARENT, "tracestate": long}));
        assert_eq!(trace.unwrap().tracestate, Some(long));
        // A tracestate without a valid traceparent means nothing (W3C): dropped, said.
        let without = Dropped {
            key: TRACESTATE,
            why: "came without a valid traceparent",
        };
        assert_eq!(read(json!({"tracestate": "a=b"})), (None, Some(without)));
    }

    #[test]
    fn the_reason_names_the_key_and_never_quotes_the_value() {
        let (_, dropped) = read(json!({"traceparent": "00-\u{1b}[31mred"}));
        assert_eq!(
            dropped.unwrap().to_string(),
            format!("_meta traceparent was dropped (the call goes on without it): it {LENGTH}")
        );
        // The limits the messages name are the constants.
        assert!(LENGTH.contains(&format!("55 to {MAX_TRACEPARENT_CHARS} ")));
        assert!(OVER.contains(&format!(
            "{MAX_TRACESTATE_CHARS} characters or {MAX_TRACESTATE_MEMBERS} list"
        )));
        assert_eq!(check_traceparent(&"a".repeat(129)), Err(LENGTH));
        let over = "a".repeat(MAX_TRACESTATE_CHARS + 1).into();
        assert_eq!(checked_tracestate(&over), Err(OVER));
    }

    #[test]
    fn put_replaces_what_a_meta_had() {
        let mut meta = json!({"traceparent": "x", "tracestate": "y", "other": 1});
        let trace = TraceContext {
            traceparent: PARENT.into(),
            tracestate: None,
        };
        trace.put(meta.as_object_mut().unwrap());
        assert_eq!(meta, json!({"traceparent": PARENT, "other": 1}));
    }
}
