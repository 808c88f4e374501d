//! Where the retry budget and the cooldowns live when a fleet of processes shares them.

use std::future::Future;
use std::pin::Pin;
use std::time::SystemTime;

use super::quota::RetryQuota;

/// A future returned by a [`SharedStore`].
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A store of retry budgets and cooldowns shared by many processes (e.g. Redis, with the `redis`
/// feature). Every update is atomic. A `scope` names one provider and API key (`"openai:3f9a..."`,
/// a fingerprint, never the key itself).
///
/// The budget's window is the store's: every process's successes pay for every process's retries,
/// by the rule of [`RetryQuota`] (docs/design.md §10), counted on the store's clock.
///
/// The runtime deposits after each successful model call, withdraws as a retry is about to be sent,
/// and asks for the cooldown before each request; when a call fails or takes too long, the runtime
/// goes on with its in-process state and logs one warning (fail open).
pub trait SharedStore: Send + Sync + 'static {
    /// Counts one successful model call in the window of `scope`.
    fn deposit<'a>(&'a self, scope: &'a str, quota: &'a RetryQuota) -> StoreFuture<'a, ()>;

    /// Withdraws one retry from the window of `scope` when `quota` allows one, and says whether
    /// it did, with the window's counts before the withdrawal.
    fn try_withdraw<'a>(&'a self, scope: &'a str, quota: &'a RetryQuota) -> StoreFuture<'a, Withdrawal>;

    /// The instant before which no request for `scope` should be sent, if one is set and not past.
    fn cooldown_until<'a>(&'a self, scope: &'a str) -> StoreFuture<'a, Option<SystemTime>>;

    /// Moves the cooldown of `scope` to `until` unless it already ends later.
    fn extend_cooldown<'a>(&'a self, scope: &'a str, until: SystemTime) -> StoreFuture<'a, ()>;
}

/// What a [`SharedStore::try_withdraw`] came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Withdrawal {
    /// The retry may be sent (and was counted).
    pub granted: bool,
    /// Successful model calls in the window, before this withdrawal.
    pub successes: u64,
    /// Retries in the window, before this withdrawal.
    pub retries: u64,
}

/// A [`SharedStore`] that could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shared store unavailable: {0}")]
pub struct StoreError(pub String);
