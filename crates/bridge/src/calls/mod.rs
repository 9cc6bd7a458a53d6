//! What a call carries and the rules it follows on its way to the page: checked once for every
//! route (`prepared_call`), the operator's guardrails (`policy`, applied to prepared calls by `policy_gate`) and `--tools FILE` tools
//! (`agent_tools`), a tool's annotations as calls read them (`tool_annotations`: the policy's
//! `annotations`, the untrusted marking of results), what agents ask a page besides tool calls (`served`: resources, prompts,
//! completion), and the rules of the requests waiting on one page (`request_engine`, sans-IO).

pub mod agent_tools;
pub(crate) mod policy;
pub(crate) mod policy_gate;
pub mod prepared_call;
pub(crate) mod request_engine;
pub mod served;
pub(crate) mod tool_annotations;
