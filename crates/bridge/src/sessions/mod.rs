//! Page sessions: one per page, outliving its connections ([`page_session`]), the node's table of
//! them (`table`), the one way to call a page's tool ([`call_options`]), whose pages an agent
//! reaches ([`scope`]), and which of a user's tabs a call goes to (`user_tabs`).

pub mod call_options;
#[cfg(test)]
mod driver_tests;
#[cfg(test)]
pub(crate) mod fake_page;
pub mod page_session;
#[cfg(test)]
mod policy_tests;
pub mod scope;
#[cfg(test)]
mod served_policy_tests;
pub(crate) mod table;
#[cfg(test)]
pub(crate) mod trace_capture;
pub(crate) mod user_tabs;
