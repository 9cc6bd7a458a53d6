//! Connections to the agent runtime (SPEC §6): [`websocket`], or a channel the page supplies
//! ([`custom`]).

pub mod custom;
pub mod websocket;
