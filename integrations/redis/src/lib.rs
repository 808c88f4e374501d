//! Fleet mode for `agentic-runtime`: [`RedisStore`], a
//! [`SharedStore`](agentic_runtime::storm::store::SharedStore) in Redis.
//!
//! A `Runtime` keeps its storm control in the process: the retry quota (one process's successes
//! pay for its retries), the cooldowns a server's `Retry-After` starts, the targets' circuit
//! breakers and the pacer's rate limits. Given a `RedisStore`, every process that names the same
//! Redis and key prefix shares them: one process's successes pay for another's retries, a 429 one
//! process hears holds the others, a breaker one process opens makes the others skip the target
//! without a request, and the limits one response states pace every process's calls.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use agentic_redis::RedisStore;
//! use agentic_runtime::{Runtime, ScriptedProvider};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let provider = ScriptedProvider::new([]);
//! let store = RedisStore::connect("redis://127.0.0.1:6379").await?.with_prefix("billing-workers");
//! let runtime = Runtime::builder(provider).with_shared_store(Arc::new(store)).build()?;
//! let reply = runtime.exec("Summarize the invoice").await?;
//! # Ok(())
//! # }
//! ```
//!
//! Redis down or silent costs a call at most the store's timeout (250 ms) once per back-off period
//! (10 s): meanwhile each process goes on with its own state, and says so in a warning when Redis
//! fails and another when it answers again.
//!
//! # Keys
//!
//! Every key of a scope starts `{prefix}:{<scope>}:`, whose braces are a Redis Cluster hash tag: a
//! scope's keys live in one slot, so a script may touch several of them (the budget and a breaker,
//! in one round trip) on a single node, behind Sentinel and in Cluster alike. The keys:
//!
//! - `{prefix}:{<scope>}:budget`: a hash, the successes and retries of each slot of the window,
//!   fields `s:{slot}` and `r:{slot}`; slots that leave the window are deleted, and a budget left
//!   untouched for two windows expires (an empty window).
//! - `{prefix}:{<scope>}:cooldown:<model>`: the end of the cooldown, in ms since the UNIX epoch. It
//!   expires when it ends, and lasts no longer than the runtime that set it would wait
//!   (`retry_after_cap_ms`: a hint past it is not stored).
//! - `{prefix}:{<scope>}:breaker:<model>`: a hash, `state` `open` or `half_open` (absent when
//!   closed), `until` (the end of the open period, ms on the server's clock), `failures` and
//!   `calls` (why it opened); `…:breaker-window:<model>`: the answered, failed and let-through
//!   calls of each slot of the window (`s:`, `f:`, `a:`); `…:breaker-probe:<model>`: set, if
//!   absent, by the caller that takes the probe, to its admission's token, expiring after the open
//!   period, so a probe that never reports lets another go; a probe given back is deleted only
//!   while it holds the token of the admission that gives it back. A breaker untouched for two
//!   windows and two open periods expires (closed).
//! - `{prefix}:{<scope>}:pace:<model>`: the pacer's buckets (six fields per limit: its size,
//!   level, rate, the level's instant, when the server said it is full again and what was taken
//!   since, instants in µs on the server's clock); it expires after twice the longest time one of its limits takes to refill, 5 minutes at least
//!   and 2 days at most.
//! - `{prefix}:{account:<name>}:spend`: a spend account's reservations and spend in its current
//!   window and the one before (`<n>:rt`, `<n>:rc` held, `<n>:ut`, `<n>:uc` used, in tokens and
//!   millionths of a dollar; `n` the window's number on the server's clock); it expires two
//!   windows after its last write, so a reservation that never settles holds its room until its
//!   window ends, no longer.
//!
//! Every update is one Lua script, so concurrent processes never lose a count; windows and open periods run on the Redis server's clock, one clock for the fleet.
//! What a script reads is checked as input: a malformed value is read as absent and repaired, an
//! open period never lasts longer than the settings' from now, and every key has an expiry.
//!
//! A call asks Redis once before it goes (the cooldown, the breaker's admission and whether a limit
//! is known, one script) and once after its answer (the deposit and the breaker's record, one
//! script); it reserves and settles pace only for a target whose server stated limits.
//!
//! Cooldowns are wall-clock instants of the processes: machines that share them should keep their
//! clocks in sync (NTP), or a fast clock ends a cooldown early.
//!
//! The scripts mirror the runtime's own state machines, rule for rule; the crate's tests run the
//! same seeded sequences through both and compare every answer (docs/design.md §10, "Fleet mode").
#![deny(missing_docs)]
#![deny(unsafe_code)]
#![warn(unreachable_pub, missing_debug_implementations)]

mod account;
mod pace;
mod scripts;
mod store;
#[cfg(test)]
mod test_redis;
#[cfg(test)]
mod twins;

pub use store::RedisStore;
