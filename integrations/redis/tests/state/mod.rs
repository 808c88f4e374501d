//! The fleet store's state made sound, against the Redis of the tests: what a runtime reads from
//! Redis is checked as input (a malformed breaker, cooldown or window is read as absent and
//! repaired, and every key expires), the state is kept per target (a model of a scope) as in one
//! process, and a successful call costs two round trips.
//!
//! Needs `AGENTIC_REDIS_URL` (`.ci/run` starts a server); `AGENTIC_SKIP_REDIS=1` skips.

mod malformed;
mod round_trips;
mod targets;
