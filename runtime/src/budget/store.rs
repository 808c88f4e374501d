//! Where the retry budget and the cooldowns live when a fleet of processes shares them.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use super::breaker::{BreakerSettings, CallOutcome, Recorded, SharedAdmission};
use super::quota::RetryQuota;
use crate::pace::{Demand, PaceRefused, RateLimits, Reserved};

/// How long the runtime works without a shared store that failed before it asks the store again,
/// unless the store says otherwise ([`SharedStore::offline_backoff`]): 10 s.
///
/// A store that accepts connections and never answers costs each operation its timeout (250 ms for
/// `RedisStore`): asked on every call, it would hold every call that long. Asked once per 10 s,
/// it costs one call 250 ms in 10 s, and the process shares its state again within 10 s of the
/// store's return (a Redis failover takes about as long); a sixth of the budget's 60 s window is
/// spent on local counts at most.
pub const DEFAULT_OFFLINE_BACKOFF: Duration = Duration::from_secs(10);

/// A future returned by a [`SharedStore`].
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A store of retry budgets, cooldowns and circuit breakers shared by many processes (e.g. Redis, with the `redis`
/// feature). Every update is atomic. A `scope` names one provider and API key (`"openai:3f9a..."`,
/// a fingerprint, never the key itself).
///
/// The budget's window is the store's: every process's successes pay for every process's retries,
/// by the rule of [`RetryQuota`] (docs/design.md §10), counted on the store's clock.
///
/// The runtime deposits after each successful model call, withdraws as a retry is about to be sent,
/// and asks for the cooldown before each request; when a call fails or takes too long, the runtime
/// goes on with its in-process state (fail open) and does not ask the store again for
/// [`offline_backoff`](SharedStore::offline_backoff), logging a warning when the store fails and
/// another when it answers again.
///
/// A runtime with fallbacks also asks, before each call to a target, whether its circuit breaker
/// lets the call go ([`breaker_admit`](SharedStore::breaker_admit)), and counts each call's outcome
/// in it ([`breaker_record`](SharedStore::breaker_record)). A store that does not implement them
/// keeps no breakers: each process keeps its own.
///
/// The pacer (`Runtime::with_pacing`) shares its buckets the same way: every response's rate
/// limits go to the store ([`pace_learn`](SharedStore::pace_learn)), every call reserves what it
/// needs there ([`pace_reserve`](SharedStore::pace_reserve)) on the store's clock, and gives back
/// what it did not use ([`pace_settle`](SharedStore::pace_settle)): one limit per key for the
/// fleet, not one per process. A store that does not implement them leaves pacing to each process.
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

    /// How long the runtime goes on without the store after an operation failed, before it asks
    /// again.
    ///
    /// # Default
    ///
    /// [`DEFAULT_OFFLINE_BACKOFF`] (10 s).
    fn offline_backoff(&self) -> Duration {
        DEFAULT_OFFLINE_BACKOFF
    }

    /// Whether a call to the target of breaker `key` (`"<scope>/<model>"`) may go now, under
    /// `settings`: at most one caller in the fleet gets [`SharedAdmission::Probe`] per open period.
    /// `None` when this store keeps no breakers: each process then keeps its own.
    ///
    /// # Default
    ///
    /// `None`: this store keeps no breakers.
    fn breaker_admit<'a>(
        &'a self,
        key: &'a str,
        settings: &'a BreakerSettings,
    ) -> StoreFuture<'a, Option<SharedAdmission>> {
        let _ = (key, settings);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Counts one call's outcome in breaker `key` under `settings`, and says what it changed;
    /// `probe` when the call was let through as the probe, the only call whose outcome decides while
    /// the breaker is half-open. `None` when this store keeps no breakers.
    ///
    /// # Default
    ///
    /// `None`: this store keeps no breakers.
    fn breaker_record<'a>(
        &'a self,
        key: &'a str,
        outcome: CallOutcome,
        probe: bool,
        settings: &'a BreakerSettings,
    ) -> StoreFuture<'a, Option<Recorded>> {
        let _ = (key, outcome, probe, settings);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Gives back the probe of breaker `key` that this caller took and that will report nothing
    /// (its call was never sent, or its exec was dropped): the next caller may probe at once,
    /// instead of after the open period.
    ///
    /// # Default
    ///
    /// Nothing: the probe is taken for lost after the open period, as one of a process that died.
    fn breaker_release<'a>(&'a self, key: &'a str) -> StoreFuture<'a, ()> {
        let _ = key;
        Box::pin(std::future::ready(Ok(())))
    }

    /// Takes in the rate limits a response for `scope` stated, received now (each limit's `reset`
    /// counts from now on the store's clock), by the rules of the in-process pacer: a limit's size
    /// and rate are the server's, its level the lower of the store's and the server's. `false`
    /// when this store keeps no pacer.
    ///
    /// # Default
    ///
    /// `false`: this store keeps no pacer.
    fn pace_learn<'a>(&'a self, scope: &'a str, limits: &'a RateLimits) -> StoreFuture<'a, bool> {
        let _ = (scope, limits);
        Box::pin(std::future::ready(Ok(false)))
    }

    /// Reserves `demand` in every limit the store knows for `scope`, if the wait for them is
    /// shorter than `left` (the time before the caller's deadline, `None`: no deadline): the
    /// reservation, or why not (nothing reserved then). `None` when this store keeps no pacer or
    /// knows no limit of `scope` (the process paces by its own then).
    ///
    /// # Default
    ///
    /// `None`: this store keeps no pacer.
    fn pace_reserve<'a>(
        &'a self,
        scope: &'a str,
        demand: &'a Demand,
        left: Option<Duration>,
    ) -> StoreFuture<'a, Option<Result<Reserved, PaceRefused>>> {
        let _ = (scope, demand, left);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Reconciles a call of `scope` that reserved `reserved` and used `used` (its counted tokens):
    /// each token limit gets `reserved - used` back (less than zero: takes more), up to its size.
    /// Requests are not given back: the call was sent.
    ///
    /// # Default
    ///
    /// Nothing: this store keeps no pacer.
    fn pace_settle<'a>(&'a self, scope: &'a str, reserved: &'a Demand, used: &'a Demand) -> StoreFuture<'a, ()> {
        let _ = (scope, reserved, used);
        Box::pin(std::future::ready(Ok(())))
    }
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
