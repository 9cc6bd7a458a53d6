//! Fuzzing the core with proptest: frame decoding, and the page engine that ships (every input in
//! any order, with time).
//!
//! A short run is part of `cargo test` (and so of `cargo xtask test`). A long run:
//! `FUZZ_SECONDS=600 cargo test -p client-tools-core --release --test fuzz -- --nocapture`
//! keeps generating cases until the time is up and prints how many it executed. Frames are
//! generated freely and by mutating the seed corpus in `crates/core/fuzz-corpus/`.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use client_tools_core::page_engine::{
    Answer, CallHandle, Caller, EngineConfig, HandlerOutcome, Input, Output, PageEngine, LOG_LEVELS,
};
use client_tools_core::protocol::{self, code, meta, method, CallToolParams, Message, RequestId};
use client_tools_core::registry::{Declaration, ToolKind};
use client_tools_core::time::Millis;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;

mod mutation;
use mutation::{apply, edit};

fn corpus() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz-corpus");
    let mut seeds: Vec<String> = std::fs::read_dir(dir)
        .expect("the seed corpus is committed")
        .filter_map(|entry| std::fs::read_to_string(entry.ok()?.path()).ok())
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 10, "seed corpus missing");
    seeds
}

fn frame() -> impl Strategy<Value = String> {
    let seeds = corpus();
    let mutated = (0..seeds.len(), proptest::collection::vec(edit(), 0..8))
        .prop_map(move |(i, edits)| apply(&seeds[i], &edits));
    prop_oneof![4 => mutated, 1 => any::<String>(), 1 => "[\\[\\]{}\":,0-9a-z ]{0,200}"]
}

/// Decoding never panics; every failure carries a JSON-RPC code and encodes to a valid frame;
/// every success round-trips through the encoders, and a request's arguments found in its text are
/// the decoded ones. The runtime's codecs agree with the full decoder: its answer reader takes only
/// answers, read as `decode` reads them, and its call-frame writer writes the call `decode_call`
/// and `decode` read back.
fn check_frame(text: &str) -> Result<(), TestCaseError> {
    if let Some((id, result)) = protocol::read_answer(text) {
        let result: serde_json::Value = serde_json::from_str(result.get()).unwrap();
        prop_assert_eq!(
            protocol::decode(text).ok(),
            Some(Message::Response {
                id,
                result: Ok(result)
            }),
            "read_answer took {:?}",
            text
        );
    }
    if let Some((id, params, arguments)) = protocol::decode_call(text) {
        check_call_frame(text, id, params, arguments)?;
    }
    // The page's fast path for calls reads exactly what the full decoder reads, or steps aside.
    if let Some((id, params, arguments)) = protocol::decode_call(text) {
        let Ok(Message::Request {
            id: full_id,
            method,
            params: full,
        }) = protocol::decode(text)
        else {
            return Err(TestCaseError::fail(format!(
                "decode_call took {text:?}, decode did not"
            )));
        };
        prop_assert_eq!((id, method.as_str()), (full_id, "tools/call"));
        let full: protocol::CallToolParams = serde_json::from_value(full).unwrap();
        let arguments =
            arguments.map(|found| serde_json::from_str::<serde_json::Value>(found).unwrap());
        prop_assert_eq!(
            (params.name, params.meta, arguments),
            (full.name, full.meta, full.arguments)
        );
    }
    match protocol::decode(text) {
        Err(error) => {
            prop_assert!([code::PARSE_ERROR, code::INVALID_REQUEST].contains(&error.error.code));
            // A malformed response is never answered; every answer is itself never answered back
            // (no error ping-pong between two sides).
            if let Some(frame) = error.to_frame() {
                let answer: serde_json::Value = serde_json::from_str(&frame).unwrap();
                prop_assert_eq!(&answer["jsonrpc"], "2.0");
                prop_assert_eq!(
                    protocol::decode(&frame).err().and_then(|e| e.to_frame()),
                    None
                );
            }
        }
        Ok(Message::Request { id, method, params }) => {
            // The arguments the page hands a handler from the frame text are the decoded ones.
            if let Some(text) = protocol::call_arguments_text(text) {
                let found: serde_json::Value = serde_json::from_str(text).unwrap();
                prop_assert_eq!(Some(&found), params.get("arguments"));
            }
            let again = protocol::decode(&protocol::encode_request(&id, &method, &params)).unwrap();
            prop_assert_eq!(again, Message::Request { id, method, params });
        }
        Ok(Message::Notification { method, params }) => {
            let again = protocol::decode(&protocol::encode_notification(&method, &params)).unwrap();
            prop_assert_eq!(again, Message::Notification { method, params });
        }
        Ok(Message::Response { id, result }) => {
            let encoded = match &result {
                Ok(value) => protocol::encode_result(&id, value),
                Err(error) => protocol::encode_error(Some(&id), error),
            };
            prop_assert_eq!(
                protocol::decode(&encoded).unwrap(),
                Message::Response { id, result }
            );
        }
    }
    Ok(())
}

/// The runtime's `tools/call` writer, given a call the page read from `text`, writes a frame that
/// both decoders read as that call, with the runtime's timeout and progress token in `_meta`.
fn check_call_frame(
    text: &str,
    id: RequestId,
    params: CallToolParams,
    arguments: Option<&str>,
) -> Result<(), TestCaseError> {
    let id = match id {
        RequestId::String(id) => id,
        RequestId::Number(n) => format!("b-{n}"),
    };
    let arguments = arguments.map_or(serde_json::Value::Null, |found| {
        serde_json::from_str(found).unwrap()
    });
    let extensions = params.meta.unwrap_or_default();
    let timeout_ms = text.len() as u64;
    let written =
        protocol::encode_tool_call(&id, &params.name, &arguments, timeout_ms, &extensions);
    let mut meta = extensions;
    meta.insert(meta::TIMEOUT_MS.into(), timeout_ms.into());
    meta.insert("progressToken".into(), id.clone().into());
    let expected = CallToolParams {
        name: params.name,
        arguments: Some(arguments),
        meta: Some(meta),
    };
    let id = RequestId::String(id);
    let reference = protocol::encode_request(&id, method::TOOLS_CALL, &expected);
    prop_assert_eq!(
        protocol::decode(&written).ok(),
        protocol::decode(&reference).ok(),
        "{}",
        written
    );
    let Some((again_id, again, again_arguments)) = protocol::decode_call(&written) else {
        return Err(TestCaseError::fail(format!(
            "decode_call refused {written:?}"
        )));
    };
    let again_arguments = again_arguments.map_or(serde_json::Value::Null, |found| {
        serde_json::from_str(found).unwrap()
    });
    prop_assert_eq!(
        (again_id, again.name, again.meta, Some(again_arguments)),
        (id, expected.name, expected.meta, expected.arguments)
    );
    Ok(())
}

#[derive(Debug, Clone)]
enum Op {
    /// `tools/call` with id, tool, arguments that fit or not, and a progress token or not.
    Call(u8, u8, bool, bool),
    /// Any frame (generated or mutated from the corpus).
    Frame(String),
    Cancel(u8),
    /// Settles the n-th handler the engine asked to run, one of four ways.
    Settle(u8, u8),
    /// Answers the n-th question to a person, one of seven ways.
    Decide(u8, u8),
    Progress(u8),
    Withdraw(u8),
    /// A page call (`invoke`) of a tool.
    PageCall(u8),
    /// The late tool is defined (or removed again).
    ToggleLateTool,
    Session(bool),
    Advance(u32),
    /// `ctx.log` of the n-th running handler, at one of nine levels (one is not a level).
    Log(u8, u8),
    /// The n-th running handler asks the agent a round of this many requests.
    Ask(u8, u8),
    /// The agent answers the n-th request the page sent it (a result or an error).
    Reply(u8, bool),
}

const TOOLS: [&str; 5] = ["plain", "confirm", "late", "agent_tool", "pick"];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..6, 0u8..5, any::<bool>(), any::<bool>()).prop_map(|(i, t, ok, p)| Op::Call(i, t, ok, p)),
        1 => frame().prop_map(Op::Frame),
        2 => (0u8..6).prop_map(Op::Cancel),
        4 => (any::<u8>(), 0u8..4).prop_map(|(n, how)| Op::Settle(n, how)),
        3 => (any::<u8>(), 0u8..7).prop_map(|(n, how)| Op::Decide(n, how)),
        1 => any::<u8>().prop_map(Op::Progress),
        1 => any::<u8>().prop_map(Op::Withdraw),
        1 => (0u8..5).prop_map(Op::PageCall),
        1 => Just(Op::ToggleLateTool),
        1 => any::<bool>().prop_map(Op::Session),
        1 => (any::<u8>(), 0u8..9).prop_map(|(n, level)| Op::Log(n, level)),
        2 => (any::<u8>(), 0u8..10).prop_map(|(n, count)| Op::Ask(n, count)),
        3 => (any::<u8>(), any::<bool>()).prop_map(|(n, ok)| Op::Reply(n, ok)),
        4 => prop_oneof![0u32..3_000, 0u32..400_000].prop_map(Op::Advance),
    ]
}

fn engine() -> PageEngine<u8> {
    let mut engine = PageEngine::new(EngineConfig::default(), 30_000, vec!["5".into()]);
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let registry = engine.registry_mut();
    for (name, confirm, timeout) in [("plain", false, 2_000.0), ("confirm", true, 500.0)] {
        let declaration = Declaration {
            original_name: name.into(),
            parameters: Some(schema.clone()),
            output_schema: Some(json!({"type": "object"})),
            require_confirmation: Some(confirm),
            timeout_ms: Some(timeout),
            ..Declaration::default()
        };
        registry.define(declaration, ToolKind::Function, 0).unwrap();
    }
    registry.register_handler("agent_tool", 1).unwrap();
    engine
}

/// What the fuzzer saw of the engine's outputs so far.
#[derive(Default)]
struct Seen {
    /// Handles the engine ever asked to run: a handle runs at most once.
    ran: HashSet<CallHandle>,
    /// (session, agent call id) whose handler ran: at most once per session.
    ran_ids: HashSet<(u32, String)>,
    /// Handlers running and questions open, by handle, in the order asked.
    running: Vec<CallHandle>,
    asking: Vec<CallHandle>,
    /// Page calls begun and settled.
    page_calls: HashSet<CallHandle>,
    settled: HashSet<CallHandle>,
    /// Ids of the page's own requests to the agent, in the order sent.
    asked: Vec<serde_json::Value>,
}

/// Drives the page engine that ships through any interleaving of frames, handler ends, decisions,
/// cancels, sessions and time: a handler runs at most once per call id and session, nothing is
/// asked of a call that ended, a page call settles exactly once, the timer never asks to be woken
/// in the past, and once time runs on every call has ended (no hang).
fn check_engine(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut engine = engine();
    let mut now = Millis(0.0);
    let mut session = 0u32;
    let mut late_defined = false;
    let mut seen = Seen::default();
    for op in ops {
        match op {
            Op::Call(id, tool, fits, progress) => {
                let name = TOOLS[*tool as usize];
                let n = if *fits { json!(1) } else { json!("one") };
                let mut meta = json!({});
                if *progress {
                    meta["progressToken"] = json!(id);
                }
                if name == "pick" {
                    meta["clienttools/fallback"] = json!("form");
                    meta["clienttools/outputSchema"] = json!({"type": "object"});
                }
                let frame = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": name, "arguments": {"n": n}, "_meta": meta}});
                engine.handle(now, Input::Frame(&frame.to_string()));
            }
            Op::Frame(text) => engine.handle(now, Input::Frame(text)),
            Op::Cancel(id) => {
                let frame = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                   "params": {"requestId": id}});
                engine.handle(now, Input::Frame(&frame.to_string()));
            }
            Op::Settle(n, how) => {
                if let Some(&call) = pick(&seen.running, *n) {
                    let outcome = match how {
                        0 => HandlerOutcome::Returned(r#"{"ok":true}"#.into()),
                        1 => HandlerOutcome::Returned("[1]".into()),
                        2 => HandlerOutcome::Threw("no".into()),
                        _ => HandlerOutcome::ReturnedNothing,
                    };
                    engine.handle(now, Input::HandlerSettled { call, outcome });
                }
            }
            Op::Decide(n, how) => {
                if let Some(&call) = pick(&seen.asking, *n) {
                    let answer = match how {
                        0 => Answer::Approve {
                            allow_session: true,
                            allow_always: false,
                        },
                        1 => Answer::Reject(None),
                        2 => Answer::Modify(json!({"n": 2})),
                        3 => Answer::Modify(json!({"n": "x"})),
                        4 => Answer::Result(json!({})),
                        5 => Answer::Cancelled,
                        _ => Answer::Failed("no dialog".into()),
                    };
                    engine.handle(now, Input::Answered { call, answer });
                }
            }
            Op::Progress(n) => {
                if let Some(&call) = pick(&seen.running, *n) {
                    let input = Input::Progress {
                        call,
                        progress: 1.0,
                        total: None,
                        message: None,
                    };
                    engine.handle(now, input);
                }
            }
            Op::Withdraw(n) => {
                if let Some(&call) = pick(&seen.running, *n) {
                    engine.handle(
                        now,
                        Input::Withdraw {
                            call,
                            reason: "reset".into(),
                        },
                    );
                }
            }
            Op::PageCall(tool) => {
                let name = TOOLS[*tool as usize].into();
                let input = Some(r#"{"n":1}"#.into());
                let call = engine.begin_page_call(now, name, input, Caller::Page);
                seen.page_calls.insert(call);
            }
            Op::ToggleLateTool => {
                if late_defined {
                    engine.registry_mut().unregister("late");
                } else {
                    engine.registry_mut().register_handler("late", 2).unwrap();
                }
                late_defined = !late_defined;
                engine.handle(now, Input::ToolsChanged);
            }
            Op::Session(resumed) => {
                if !resumed {
                    session += 1;
                }
                engine.handle(now, Input::SessionBegun { resumed: *resumed });
            }
            Op::Log(n, level) => {
                if let Some(&call) = pick(&seen.running, *n) {
                    // The engine's levels, and one it does not know.
                    let level = LOG_LEVELS
                        .get(*level as usize)
                        .unwrap_or(&"loud")
                        .to_string();
                    let input = Input::Log {
                        call,
                        level,
                        data: json!({"n": n}),
                        logger: None,
                    };
                    engine.handle(now, input);
                }
            }
            Op::Ask(n, count) => {
                if let Some(&call) = pick(&seen.running, *n) {
                    let methods = ["elicitation/create", "sampling/createMessage", "roots/list"];
                    // `count` 0 is not an object: the engine refuses it at once.
                    let requests = match count {
                        0 => "[]".to_owned(),
                        _ => json!((0..*count)
                            .map(|k| (
                                format!("k{k}"),
                                json!({"method": methods[k as usize % 3], "params": {"message": "?"}})
                            ))
                            .collect::<serde_json::Map<_, _>>())
                        .to_string(),
                    };
                    engine.handle(
                        now,
                        Input::AskAgent {
                            call,
                            requests: &requests,
                        },
                    );
                }
            }
            Op::Reply(n, ok) => {
                if !seen.asked.is_empty() {
                    let id = seen.asked[*n as usize % seen.asked.len()].clone();
                    let frame = match ok {
                        true => json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept"}}),
                        false => json!({"jsonrpc": "2.0", "id": id,
                                        "error": {"code": -32021, "message": "no"}}),
                    };
                    engine.handle(now, Input::Frame(&frame.to_string()));
                }
            }
            Op::Advance(ms) => {
                now = now.after(u64::from(*ms));
                wake(&mut engine, now)?;
            }
        }
        drain(&mut engine, session, &mut seen)?;
    }
    // Time runs on with no one answering: every call ends by itself.
    for _ in 0..700 {
        now = now.after(1_000);
        wake(&mut engine, now)?;
        drain(&mut engine, session, &mut seen)?;
    }
    prop_assert_eq!(engine.live_calls(), 0, "a call never ended");
    prop_assert_eq!(engine.poll_timeout(), None);
    prop_assert_eq!(&seen.page_calls, &seen.settled, "every page call settles");
    Ok(())
}

fn pick(handles: &[CallHandle], n: u8) -> Option<&CallHandle> {
    (!handles.is_empty()).then(|| &handles[n as usize % handles.len()])
}

/// Wakes the engine when it asked; afterwards it never asks for a time already past.
fn wake(engine: &mut PageEngine<u8>, now: Millis) -> Result<(), TestCaseError> {
    if engine.poll_timeout().is_some_and(|at| at <= now) {
        engine.handle(now, Input::Timeout);
        let next = engine.poll_timeout();
        prop_assert!(
            next.is_none_or(|at| at > now),
            "woken at {:?} for {:?}",
            now,
            next
        );
    }
    Ok(())
}

fn drain(engine: &mut PageEngine<u8>, session: u32, seen: &mut Seen) -> Result<(), TestCaseError> {
    while let Some(output) = engine.poll_output() {
        match output {
            Output::RunHandler { call, call_id, .. } => {
                prop_assert!(seen.ran.insert(call), "handle {:?} ran twice", call);
                if !call_id.starts_with("local-") {
                    prop_assert!(
                        seen.ran_ids.insert((session, call_id.clone())),
                        "call id {} ran twice in one session",
                        call_id
                    );
                }
                seen.asking.retain(|c| *c != call);
                seen.running.push(call);
            }
            Output::AskPerson { call, .. } => {
                prop_assert!(!seen.ran.contains(&call), "asked after it ran");
                seen.asking.push(call);
            }
            Output::Abort { call, .. } => {
                prop_assert!(seen.running.contains(&call), "aborted what never ran");
                seen.running.retain(|c| *c != call);
            }
            Output::WithdrawAsk { call } => {
                prop_assert!(seen.asking.contains(&call), "withdrew what was never asked");
                seen.asking.retain(|c| *c != call);
            }
            Output::Settled { call, .. } => {
                prop_assert!(seen.page_calls.contains(&call));
                prop_assert!(
                    seen.settled.insert(call),
                    "page call {:?} settled twice",
                    call
                );
            }
            Output::Send(frame) => {
                prop_assert!(protocol::check_outgoing(&frame).is_ok());
                // The runtime reads it (an error response with a `null` id it reads as one it
                // never answers).
                let read = protocol::decode(&frame).map_or_else(|e| e.was_response, |_| true);
                prop_assert!(read, "sent what the runtime refuses: {}", frame);
                if let Ok(Message::Request { id, .. }) = protocol::decode(&frame) {
                    seen.asked.push(serde_json::to_value(&id).unwrap());
                }
            }
            Output::AgentAnswered { call, .. } => {
                prop_assert!(
                    seen.running.contains(&call),
                    "answered a round of no running call"
                );
            }
            Output::Emit(_) => {}
        }
    }
    // Whatever the person or handler does now, an ended call is not live.
    seen.running.retain(|c| engine.is_live(*c));
    seen.asking.retain(|c| engine.is_live(*c));
    Ok(())
}

/// Runs both targets for `cases` cases each, again and again until `deadline`; returns executions.
fn run(cases: u32, deadline: Option<Instant>) -> u64 {
    let config = || Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut executed = 0u64;
    loop {
        TestRunner::new(config())
            .run(&frame(), |text| check_frame(&text))
            .unwrap();
        TestRunner::new(config())
            .run(&proptest::collection::vec(op(), 1..200), |ops| {
                check_engine(&ops)
            })
            .unwrap();
        executed += 2 * u64::from(cases);
        if deadline.is_none_or(|d| Instant::now() >= d) {
            return executed;
        }
    }
}

#[test]
fn fuzz_frames_and_the_page_engine() {
    let seconds: Option<u64> = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok());
    let started = Instant::now();
    let executed = match seconds {
        Some(seconds) => run(10_000, Some(started + Duration::from_secs(seconds))),
        None => run(500, None),
    };
    println!(
        "fuzz: {executed} cases in {:.1} s, no failure",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn every_seed_decodes_or_fails_cleanly() {
    for seed in corpus() {
        check_frame(&seed).unwrap();
    }
}
