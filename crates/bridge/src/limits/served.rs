//! What agents ask a page besides tool calls (SPEC §11 "Resources, prompts, completion"):
//! resources, prompts and completion, and the subscriptions to resources.

/// Resources one agent session (an MCP session, or one `subscriptions/listen` stream) may be
/// subscribed to at once; one more is refused with an error naming this bound.
pub const MAX_SUBSCRIPTIONS_PER_AGENT: usize = 64;

/// Resources one page session is subscribed to at once for all its agents (and, in a cluster,
/// all nodes); one more is refused. The page's own bound (the SDK's page server watches at most
/// 256 resources at once; its error reaches the agent as it is).
pub const MAX_SUBSCRIPTIONS_PER_SESSION: usize = 256;

/// The most values a completion answers (MCP's own bound): more from the page are cut, and
/// `hasMore` says so.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// The longest resource URI an agent may name, in bytes.
pub const MAX_URI_BYTES: usize = 2_048;

/// The most resources, resource templates or prompts of one page kept listed (each kind); more
/// are dropped from the list, with a warning.
pub const MAX_LISTED_ENTRIES: usize = 1_024;

/// Resource updates (`notifications/resources/updated`) of one page session buffered for slow
/// agents; an agent that falls behind misses the oldest (an update is a hint: read again).
pub const RESOURCE_UPDATES_BUFFER: usize = 64;
