//! The end-to-end suites, one module per capability, compiled into one test binary: one compile
//! and one link of the bridge and the harness instead of one per suite (the suites are run one test
//! at a time by `cargo xtask test`: `--test-threads 1`). `cargo xtask test` runs the modules that
//! open their page through `Stack` again in Firefox (`STACK_SUITES` in xtask/src/test.rs).
//!
//! One suite: `cargo test -p client-tools-e2e --test e2e -- board::` (with the environment
//! `cargo xtask test` sets: `e2e` in xtask/src/test.rs).

mod agent_tools;
mod api_rounds;
mod bad_input;
mod board;
mod bundlers;
mod cluster;
mod conformance;
mod demo_console;
mod elicitation;
mod embed;
mod faults;
mod guardrails;
mod hitl;
mod injection;
mod mcp_access;
mod mcp_interop;
mod react;
mod reloads;
mod runtimes;
mod soak;
mod tasks;
mod trust;
mod users;
mod webmcp;
