//! One error type for every misuse of the API, with a stable machine-readable code.
//!
//! The wasm layer turns a [`CoreError`] into a JavaScript `Error` (a `TypeError` when
//! [`CoreError::is_type_error`]) whose `code` property is [`ErrorCode::as_str`]. Failures of a
//! *call* (bad agent input, a throwing handler) are not errors of this kind: they are data, an error
//! result sent to the agent (see [`crate::call`]).

use thiserror::Error;

pub use crate::codes::ErrorCode;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum CoreError {
    #[error("tool name must be a non-empty string")]
    EmptyName,
    #[error("handler for tool '{0}' must be a function")]
    HandlerNotFunction(String),
    #[error("invalid JSON Schema in '{field}' of tool '{tool}': {message}")]
    InvalidSchema {
        tool: String,
        field: &'static str,
        message: String,
    },
    #[error("invalid JSON Schema: {0}")]
    InvalidStandaloneSchema(String),
    #[error("timeoutMs of tool '{tool}' must be a positive number of milliseconds, got {value}")]
    InvalidTimeout { tool: String, value: f64 },
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    #[error("no tool named '{0}' on this page")]
    UnknownTool(String),
    #[error("not connected to an agent runtime: {0}")]
    NotConnected(String),
    #[error("could not connect to the agent runtime at {url}: {message}")]
    ConnectionFailed { url: String, message: String },
}

impl CoreError {
    pub fn code(&self) -> ErrorCode {
        match self {
            CoreError::EmptyName => ErrorCode::InvalidName,
            CoreError::HandlerNotFunction(_) => ErrorCode::InvalidHandler,
            CoreError::InvalidSchema { .. } | CoreError::InvalidStandaloneSchema(_) => {
                ErrorCode::InvalidSchema
            }
            CoreError::InvalidTimeout { .. } => ErrorCode::InvalidTimeout,
            CoreError::InvalidOptions(_) => ErrorCode::InvalidOptions,
            CoreError::UnknownTool(_) => ErrorCode::UnknownTool,
            CoreError::NotConnected(_) => ErrorCode::NotConnected,
            CoreError::ConnectionFailed { .. } => ErrorCode::ConnectionFailed,
        }
    }

    /// Misuse of the API by the calling code (wrong argument types), thrown as `TypeError` (SPEC §3).
    pub fn is_type_error(&self) -> bool {
        matches!(
            self,
            CoreError::EmptyName | CoreError::HandlerNotFunction(_) | CoreError::InvalidOptions(_)
        )
    }
}
