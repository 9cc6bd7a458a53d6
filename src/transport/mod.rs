//! Connections to the agent runtime. One today: [`websocket`] (SPEC §6).

pub mod websocket;
