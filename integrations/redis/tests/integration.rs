//! The fleet store against a real Redis, one test binary (each file a module): the store's
//! operations (`store`), its pacer (`pace`), its state made sound (`state`), and runtimes sharing it
//! as processes would (`fleet`).
//!
//! Needs `AGENTIC_REDIS_URL` (`.ci/run` starts a server, `.ci/redis.sh`); `AGENTIC_SKIP_REDIS=1`
//! skips.

mod account;
mod fleet;
mod pace;
mod state;
mod store;
mod support;
