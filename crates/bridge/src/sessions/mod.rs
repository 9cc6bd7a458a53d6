//! Page sessions: one per page, outliving its connections ([`page_session`]), the node's table of
//! them (`table`), and the one way to call a page's tool ([`call_options`]).

pub mod call_options;
pub mod page_session;
pub(crate) mod table;
