//! Storm control shared by every call of a `Runtime`: the retry token bucket and the cooldown a
//! server's Retry-After sets for everyone.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::refusal::Refusal;
use super::store::{SharedStore, StoreError};

/// The retry token bucket's settings, modelled on the AWS SDKs' standard retry quota.
///
/// Every retry of either layer takes `retry_cost` tokens (`timeout_cost` when the failure was a
/// timeout); when the bucket holds fewer, the retry is refused at once and the exec ends with an
/// error of kind `budget`. First attempts always go through. A success returns the cost of the
/// retry that led to it, or `success_refund` when it needed none, never above `capacity`. So a
/// healthy provider keeps the bucket full, and an outage drains it after `capacity / retry_cost`
/// retries, after which each logical call makes about one request instead of twelve.
///
/// # Examples
///
/// ```
/// use agentic_runtime::{Runtime, ScriptedProvider, budget::RetryQuota};
///
/// let runtime = Runtime::new(ScriptedProvider::new([]))
///     .with_retry_quota(Some(RetryQuota::standard().with_capacity(100)));
/// let unbounded = runtime.clone().with_retry_quota(None); // the off switch
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryQuota {
    capacity: u32,
    retry_cost: u32,
    timeout_cost: u32,
    success_refund: u32,
}

impl Default for RetryQuota {
    fn default() -> Self {
        Self::standard()
    }
}

impl RetryQuota {
    /// Capacity 500, retry cost 5, timeout cost 10, success refund 1.
    pub const fn standard() -> Self {
        Self { capacity: 500, retry_cost: 5, timeout_cost: 10, success_refund: 1 }
    }

    /// Tokens in a full bucket.
    ///
    /// # Default
    /// `500`
    pub const fn with_capacity(mut self, capacity: u32) -> Self {
        self.capacity = capacity;
        self
    }

    /// Tokens one retry takes.
    ///
    /// # Default
    /// `5`
    pub const fn with_retry_cost(mut self, cost: u32) -> Self {
        self.retry_cost = cost;
        self
    }

    /// Tokens one retry after a timeout takes.
    ///
    /// # Default
    /// `10`
    pub const fn with_timeout_cost(mut self, cost: u32) -> Self {
        self.timeout_cost = cost;
        self
    }

    /// Tokens a success that needed no retry returns.
    ///
    /// # Default
    /// `1`
    pub const fn with_success_refund(mut self, refund: u32) -> Self {
        self.success_refund = refund;
        self
    }

    /// Tokens in a full bucket.
    pub const fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Tokens a retry takes after a failure that was (or was not) a timeout.
    pub const fn cost(&self, timeout: bool) -> u32 {
        if timeout { self.timeout_cost } else { self.retry_cost }
    }

    /// Tokens a success returns: the cost of the retry that led to it, or the success refund.
    const fn refund(&self, last_retry_cost: u32) -> u32 {
        if last_retry_cost > 0 { last_retry_cost } else { self.success_refund }
    }
}

/// The shared state of one `Runtime` (and its clones) for one provider scope.
pub(crate) struct Governor {
    scope: String,
    quota: Option<RetryQuota>,
    tokens: AtomicU32,
    cooldown: Mutex<Option<Instant>>,
    /// Set once any cooldown was noted, so the success path skips the lock until then.
    cooled: AtomicBool,
    store: Option<Arc<dyn SharedStore>>,
    warned: AtomicBool,
}

impl std::fmt::Debug for Governor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Governor")
            .field("scope", &self.scope)
            .field("quota", &self.quota)
            .field("tokens", &self.tokens.load(Ordering::Relaxed))
            .field("shared_store", &self.store.is_some())
            .finish()
    }
}

/// The longest cooldown a server's hint sets (100 years): longer waits would overflow the clocks.
pub(crate) const MAX_COOLDOWN: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

impl Governor {
    pub(crate) fn new(scope: String, quota: Option<RetryQuota>, store: Option<Arc<dyn SharedStore>>) -> Self {
        Self {
            scope,
            tokens: AtomicU32::new(quota.map_or(0, |quota| quota.capacity)),
            quota,
            cooldown: Mutex::new(None),
            cooled: AtomicBool::new(false),
            store,
            warned: AtomicBool::new(false),
        }
    }

    /// A governor of nothing: no retry bucket, no shared store, no cooldowns from other calls. What a
    /// resilient call runs under (it belongs to no `Runtime`), so that the retry rules have one path.
    pub(crate) fn unlimited() -> Self {
        Self::new(String::new(), None, None)
    }

    /// The scope, e.g. `"openai:3f9a0c1b2d4e5f60"`.
    pub(crate) fn scope(&self) -> &str {
        &self.scope
    }

    /// Takes the tokens of one retry; `Err` says why the bucket refused. Always `Ok` without a quota.
    pub(crate) async fn take_retry(&self, timeout: bool) -> Result<u32, Refusal> {
        let Some(quota) = self.quota else { return Ok(0) };
        let cost = quota.cost(timeout);
        let granted = match &self.store {
            Some(store) => match self.shared(store.try_take(&self.scope, cost, quota.capacity)).await {
                Some(granted) => granted,
                None => self.take_local(cost),
            },
            None => self.take_local(cost),
        };
        if granted { Ok(cost) } else { Err(Refusal::RetryBucket { cost, capacity: quota.capacity }) }
    }

    /// Returns tokens after a success: the cost of the retry that led to it, or the success refund.
    pub(crate) async fn on_success(&self, last_retry_cost: u32) {
        if self.refund_locally(last_retry_cost) {
            return;
        }
        let (Some(quota), Some(store)) = (self.quota, &self.store) else { return };
        let amount = quota.refund(last_retry_cost);
        if amount > 0 && self.shared(store.refund(&self.scope, amount, quota.capacity)).await.is_none() {
            self.add_tokens(quota, amount);
        }
    }

    /// [`Governor::on_success`] when nothing is shared (no store): `false` when there is a store,
    /// whose refund is to be awaited. Synchronous, so that an exec's success path awaits nothing
    /// for it.
    #[inline]
    pub(crate) fn refund_locally(&self, last_retry_cost: u32) -> bool {
        if self.store.is_some() {
            return false;
        }
        if let Some(quota) = self.quota {
            self.add_tokens(quota, quota.refund(last_retry_cost));
        }
        true
    }

    /// Puts `amount` tokens back in this process's bucket, up to its capacity.
    fn add_tokens(&self, quota: RetryQuota, amount: u32) {
        if amount > 0 {
            let _ = self.tokens.fetch_update(Ordering::AcqRel, Ordering::Acquire, |tokens| {
                (tokens < quota.capacity).then(|| tokens.saturating_add(amount).min(quota.capacity))
            });
        }
    }

    /// Whether a call may have to wait for a cooldown ([`Governor::cooldown_remaining`]): `false`
    /// with no shared store while no server has asked for one (one load).
    #[inline]
    pub(crate) fn may_cool_down(&self) -> bool {
        self.store.is_some() || self.cooled.load(Ordering::Acquire)
    }

    /// Tokens left in the in-process bucket (the shared store's count is its own).
    pub(crate) fn local_tokens(&self) -> u32 {
        self.tokens.load(Ordering::Acquire)
    }

    /// Records a server hint: nobody sends a request for this scope before `now + wait`.
    ///
    /// A wait longer than [`MAX_COOLDOWN`] (a server can send `Retry-After: 1e19`) counts as that:
    /// the clocks cannot represent `now + wait` much further out.
    pub(crate) async fn note_hint(&self, wait: Duration) {
        let wait = wait.min(MAX_COOLDOWN);
        let until = Instant::now() + wait;
        self.cooled.store(true, Ordering::Release);
        {
            let mut cooldown = lock(&self.cooldown);
            if cooldown.is_none_or(|current| current < until) {
                *cooldown = Some(until);
            }
        }
        if let Some(store) = &self.store {
            let until = SystemTime::now() + wait;
            self.shared(store.extend_cooldown(&self.scope, until)).await;
        }
    }

    /// How long to wait before the next request, if the scope is cooling down.
    pub(crate) async fn cooldown_remaining(&self) -> Option<Duration> {
        if self.store.is_none() && !self.cooled.load(Ordering::Acquire) {
            return None;
        }
        let now = Instant::now();
        let local = lock(&self.cooldown).and_then(|until| until.checked_duration_since(now)).filter(|d| !d.is_zero());
        let shared = match &self.store {
            Some(store) => self
                .shared(store.cooldown_until(&self.scope))
                .await
                .flatten()
                .and_then(|until| until.duration_since(SystemTime::now()).ok())
                .filter(|d| !d.is_zero()),
            None => None,
        };
        local.max(shared)
    }

    /// Runs a store operation; on failure logs one warning and answers `None` (fail open).
    async fn shared<T>(&self, operation: impl Future<Output = Result<T, StoreError>>) -> Option<T> {
        match operation.await {
            Ok(value) => Some(value),
            Err(error) => {
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(scope = %self.scope, %error,
                        "shared retry store unavailable; using this process's bucket and cooldowns");
                }
                None
            }
        }
    }

    fn take_local(&self, cost: u32) -> bool {
        self.tokens.fetch_update(Ordering::AcqRel, Ordering::Acquire, |tokens| tokens.checked_sub(cost)).is_ok()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
