//! The page's connection, below the sessions: the bounded queue of frames to it
//! (`connection_queue`), and where its answers to requests relayed from other nodes go back
//! (`relay_routes`).

pub(crate) mod connection_queue;
pub(crate) mod relay_routes;
