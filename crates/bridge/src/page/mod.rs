//! The page's connection, below the sessions: the bounded queue of frames to it
//! (`connection_queue`), where its answers to requests relayed from other nodes go back
//! (`relay_routes`), and the request an answer over the frame limit names (`oversized`).

pub(crate) mod connection_queue;
pub(crate) mod oversized;
pub(crate) mod relay_routes;
