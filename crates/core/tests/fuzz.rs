//! Fuzzing the core with proptest: frame decoding, and the call state machine with the ledger.
//!
//! A short run is part of `cargo test` (and so of `cargo xtask test`). A long run:
//! `FUZZ_SECONDS=600 cargo test -p client-tools-core --release --test fuzz -- --nocapture`
//! keeps generating cases until the time is up and prints how many it executed. Frames are
//! generated freely and by mutating the seed corpus in `crates/core/fuzz-corpus/`.

use std::cell::Cell;
use std::time::{Duration, Instant};

use client_tools_core::call::{CallState, Clock};
use client_tools_core::ledger::{Arrival, CallLedger};
use client_tools_core::protocol::{self, code, CallToolResult, Message};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

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
/// the decoded ones.
fn check_frame(text: &str) -> Result<(), TestCaseError> {
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

#[derive(Debug, Clone)]
enum Op {
    Arrive(u8),
    Finish(u8),
    Expire(u8),
    Cancel(u8),
    Advance(u16),
    Confirm(u8),
    Start(u8, u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..8).prop_map(Op::Arrive),
        (0u8..8).prop_map(Op::Finish),
        (0u8..8).prop_map(Op::Expire),
        (0u8..8).prop_map(Op::Cancel),
        any::<u16>().prop_map(Op::Advance),
        (0u8..8).prop_map(Op::Confirm),
        (0u8..8, 1u16..5000).prop_map(|(i, t)| Op::Start(i, t)),
    ]
}

struct FakeClock(Cell<f64>);

impl Clock for FakeClock {
    fn now_ms(&self) -> f64 {
        self.0.get()
    }
}

/// Drives the ledger and one `CallState` per id through any interleaving: a handler starts at most
/// once per remembered id, each run yields at most one outcome, human waits stop the clock.
fn check_calls(ops: &[Op]) -> Result<(), TestCaseError> {
    let clock = FakeClock(Cell::new(0.0));
    let mut ledger = CallLedger::new(4);
    let mut states: Vec<Option<CallState>> = vec![None; 8];
    let mut started = [0u32; 8];
    let mut outcomes = [0u32; 8];
    for op in ops {
        match *op {
            Op::Arrive(i) => {
                if ledger.arrive(&i.to_string()) == Arrival::Run {
                    let previous = states[i as usize].as_ref();
                    prop_assert!(previous.is_none_or(|s| s.is_over()), "id {} ran twice", i);
                    states[i as usize] = Some(CallState::waiting_for_handler(&clock));
                    started[i as usize] += 1;
                }
            }
            Op::Finish(i) | Op::Expire(i) => {
                let only_if_expired = matches!(op, Op::Expire(_));
                if let Some(state) = states[i as usize].as_mut() {
                    if (!only_if_expired || state.expired(&clock))
                        && state.finish(CallToolResult::error("done")).is_some()
                    {
                        outcomes[i as usize] += 1;
                        ledger.finish(&i.to_string(), format!("answer {i}"));
                    }
                }
            }
            Op::Cancel(i) => {
                if let Some(state) = states[i as usize].as_mut() {
                    if state.cancel() {
                        outcomes[i as usize] += 1;
                        ledger.finish(&i.to_string(), "cancelled".into());
                    }
                }
            }
            Op::Advance(ms) => clock.0.set(clock.0.get() + f64::from(ms)),
            Op::Confirm(i) => {
                if let Some(state) = states[i as usize].as_mut() {
                    state.await_confirmation();
                    prop_assert!(
                        state.remaining_ms(&clock).is_none(),
                        "no timer while a human decides"
                    );
                }
            }
            Op::Start(i, timeout) => {
                if let Some(state) = states[i as usize].as_mut() {
                    state.start(&clock, u64::from(timeout));
                }
            }
        }
        for i in 0..8 {
            prop_assert!(
                started[i] <= outcomes[i] + 1,
                "id {}: {:?} {:?}",
                i,
                started,
                outcomes
            );
            prop_assert!(
                outcomes[i] <= started[i],
                "id {}: more outcomes than runs",
                i
            );
        }
    }
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
            .run(&proptest::collection::vec(op(), 1..300), |ops| {
                check_calls(&ops)
            })
            .unwrap();
        executed += 2 * u64::from(cases);
        if deadline.is_none_or(|d| Instant::now() >= d) {
            return executed;
        }
    }
}

#[test]
fn fuzz_frames_and_call_state() {
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
