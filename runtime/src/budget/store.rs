//! Where the retry token bucket and the cooldowns live when a fleet of processes shares them.

use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

/// A future returned by a [`SharedStore`].
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A store of retry buckets and cooldowns shared by many processes (e.g. Redis, with the `redis`
/// feature). Every update is atomic. A `scope` names one provider and API key (`"openai:3f9a..."`,
/// a fingerprint, never the key itself).
///
/// The runtime calls it on the failure path and, for cooldowns, before each request; when a call
/// fails or takes too long, the runtime goes on with its in-process state and logs one warning
/// (fail open).
pub trait SharedStore: Send + Sync + 'static {
    /// Takes `cost` tokens from the bucket of `scope` (a missing bucket is full, holding
    /// `capacity`); `Ok(false)` when it holds fewer than `cost`.
    fn try_take<'a>(&'a self, scope: &'a str, cost: u32, capacity: u32) -> StoreFuture<'a, bool>;

    /// Returns `amount` tokens to the bucket of `scope`, never above `capacity`.
    fn refund<'a>(&'a self, scope: &'a str, amount: u32, capacity: u32) -> StoreFuture<'a, ()>;

    /// The instant before which no request for `scope` should be sent, if one is set and not past.
    fn cooldown_until<'a>(&'a self, scope: &'a str) -> StoreFuture<'a, Option<SystemTime>>;

    /// Moves the cooldown of `scope` to `until` unless it already ends later.
    fn extend_cooldown<'a>(&'a self, scope: &'a str, until: SystemTime) -> StoreFuture<'a, ()>;
}

/// A [`SharedStore`] that could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shared store unavailable: {0}")]
pub struct StoreError(pub String);
