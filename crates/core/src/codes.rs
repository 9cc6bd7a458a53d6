//! Stable codes, part of the public API: the `code` of errors thrown to JavaScript and of `warning`
//! events. Each list is written once, here: the enum, its strings, and the TypeScript union of
//! those strings that goes into the package's `.d.ts` (`src/typescript.rs`), so pages branching on
//! `error.code` or `warning.code` are type-checked against exactly what the SDK can send.

/// Declares an enum of stable codes, `as_str`, `ALL`, and a `const` holding the TypeScript union.
macro_rules! stable_codes {
    (
        $(#[$meta:meta])*
        pub enum $name:ident as $ts_name:literal in $ts_const:ident {
            $($(#[$variant_meta:meta])* $variant:ident = $code:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$variant_meta])* $variant,)*
        }

        impl $name {
            /// Every code, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $code,)*
                }
            }
        }

        /// The TypeScript union of the codes' strings.
        pub const $ts_const: &str =
            concat!("export type ", $ts_name, " =", $(" | \"", $code, "\"",)* ";\n");
    };
}

stable_codes! {
    /// The `code` of an `Error` the SDK throws: pages may branch on `error.code`.
    pub enum ErrorCode as "ErrorCode" in ERROR_CODE_TS {
        InvalidName = "INVALID_NAME",
        InvalidHandler = "INVALID_HANDLER",
        InvalidSchema = "INVALID_SCHEMA",
        InvalidTimeout = "INVALID_TIMEOUT",
        InvalidOptions = "INVALID_OPTIONS",
        UnknownTool = "UNKNOWN_TOOL",
        NotConnected = "NOT_CONNECTED",
        ConnectionFailed = "CONNECTION_FAILED",
        /// The agent's client did not declare what a handler asked of it (`ctx.elicit`, …).
        CapabilityMissing = "CAPABILITY_MISSING",
        /// The agent could not answer what a handler asked (an error, or no answer in time).
        AgentFailed = "AGENT_FAILED",
        /// `defineResource` or `definePrompt` was given something it cannot serve (the message
        /// names what).
        InvalidDefinition = "INVALID_DEFINITION",
    }
}

stable_codes! {
    /// The `code` of a `warning` event: something the page should fix, which did not stop it.
    pub enum WarningCode as "WarningCode" in WARNING_CODE_TS {
        /// `parameters` missing or of another type than object: the tool takes no arguments.
        ParametersNotObject = "parameters_not_object",
        /// `properties` / `required` without `type`: taken as an object schema.
        ParametersTypeAssumed = "parameters_type_assumed",
        MissingDescription = "missing_description",
        TimeoutClamped = "timeout_clamped",
        ToolReplaced = "tool_replaced",
        /// A handler's output broke its `outputSchema` (the agent got an error result).
        OutputInvalid = "output_invalid",
        /// `autoConnect` failed, or the runtime refused a reconnect (once per reason).
        ConnectFailed = "connect_failed",
        TransportFailed = "transport_failed",
        /// A frame over the limits the other side enforces was not sent.
        FrameLimit = "frame_limit",
        FormToolNameTaken = "form_tool_name_taken",
        FormToolInvalid = "form_tool_invalid",
        /// The browser's `modelContext` refused a registration (e.g. a duplicate name).
        BrowserRegisterFailed = "browser_register_failed",
        /// A handler's `ctx.log` message was dropped (not a level, or over the call's bound).
        LogDropped = "log_dropped",
        /// A tool of the browser's `modelContext` was not adopted (`adoptBrowserTools`): its
        /// name is taken by a tool of the page, or its schema does not compile.
        BrowserToolNotAdopted = "browser_tool_not_adopted",
        /// A call's `_meta` `traceparent` or `tracestate` is not W3C Trace Context: dropped (the
        /// message names the key and what was wrong); the call goes on without it.
        TraceContextInvalid = "trace_context_invalid",
        /// What the page kept in the browser's storage (e.g. the calls a reload interrupted, in
        /// `sessionStorage`) is not what the SDK writes, or no longer holds: ignored, and never
        /// trusted to run anything.
        StoredDataIgnored = "stored_data_ignored",
        /// A handler's `ctx.partial` value was not kept (not JSON — a cycle, a BigInt — or over
        /// its bound; the message says which): the earlier partial value stands.
        PartialDropped = "partial_dropped",
        /// `allowAlways` is set but this page cannot keep an approval (no `localStorage`): "Always
        /// allow" is not offered (said once).
        AlwaysAllowUnavailable = "always_allow_unavailable",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes are public API: renaming or dropping one must fail a test, not pass silently.
    #[test]
    fn the_public_codes_are_these() {
        let codes = |all: &[&'static str]| all.to_vec();
        assert_eq!(
            ErrorCode::ALL
                .iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>(),
            codes(&[
                "INVALID_NAME",
                "INVALID_HANDLER",
                "INVALID_SCHEMA",
                "INVALID_TIMEOUT",
                "INVALID_OPTIONS",
                "UNKNOWN_TOOL",
                "NOT_CONNECTED",
                "CONNECTION_FAILED",
                "CAPABILITY_MISSING",
                "AGENT_FAILED",
                "INVALID_DEFINITION",
            ])
        );
        assert_eq!(
            WarningCode::ALL
                .iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>(),
            codes(&[
                "parameters_not_object",
                "parameters_type_assumed",
                "missing_description",
                "timeout_clamped",
                "tool_replaced",
                "output_invalid",
                "connect_failed",
                "transport_failed",
                "frame_limit",
                "form_tool_name_taken",
                "form_tool_invalid",
                "browser_register_failed",
                "log_dropped",
                "browser_tool_not_adopted",
                "trace_context_invalid",
                "stored_data_ignored",
                "partial_dropped",
                "always_allow_unavailable",
            ])
        );
    }

    /// The generated TypeScript is a well-formed union of exactly those strings.
    #[test]
    fn the_typescript_unions_are_well_formed() {
        assert!(ERROR_CODE_TS.starts_with("export type ErrorCode = | \"INVALID_NAME\" | "));
        assert!(ERROR_CODE_TS.ends_with(" | \"INVALID_DEFINITION\";\n"));
        assert_eq!(ERROR_CODE_TS.matches(" | \"").count(), ErrorCode::ALL.len());
        assert!(
            WARNING_CODE_TS.starts_with("export type WarningCode = | \"parameters_not_object\"")
        );
        assert_eq!(
            WARNING_CODE_TS.matches(" | \"").count(),
            WarningCode::ALL.len()
        );
    }
}
