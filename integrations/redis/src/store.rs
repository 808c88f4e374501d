//! `RedisStore`: the [`SharedStore`] of a fleet, its keys and its connection (the crate's docs say
//! what each key holds).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Script};
use tokio::sync::OnceCell;

use agentic_runtime::policy::rules::millis;
use agentic_runtime::spend::{AccountRefused, Amounts, Held, SpendAccount};
use agentic_runtime::storm::pace::{Demand, PaceRefused, RateLimits, Reserved};
use agentic_runtime::storm::store::{
    BeforeCall, DEFAULT_OFFLINE_BACKOFF, SharedStore, StoreError, StoreFuture, StoreKey, Withdrawal,
};
use agentic_runtime::storm::{
    BreakerSettings, BreakerState, CallOutcome, Opened, ProbeToken, Recorded, RetryQuota, SharedAdmission, WINDOW_SLOTS,
};

use crate::account::{AccountScripts, held_of};
use crate::pace::{PaceScripts, reserved_of};
use crate::scripts::Scripts as StoreScripts;

/// The retry quotas and cooldowns of a fleet, in Redis.
///
/// One store is meant to be shared by every call of a process (it is cheap to clone: clones share
/// one connection, multiplexed and re-established after a failure). Every operation is bounded
/// by a timeout (250 ms by default), so a dead or slow Redis costs a call at most that long and
/// never hangs it; the error then says "timed out". After a failure the runtime works without
/// Redis for a back-off period ([`with_offline_backoff`](Self::with_offline_backoff), 10 s) before
/// it asks again, so a Redis that accepts and never answers costs one call the timeout per period,
/// not every call.
///
/// Its `Debug` output shows the server's address with any password replaced by `***`.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
///
/// use agentic_redis::RedisStore;
/// use agentic_runtime::storm::store::SharedStore;
///
/// # async fn run() -> Result<(), agentic_runtime::storm::store::StoreError> {
/// let store = RedisStore::connect("redis://127.0.0.1:6379")
///     .await?
///     .with_prefix("billing-workers")
///     .with_timeout(Duration::from_millis(100));
///
/// // One retry for one provider and API-key fingerprint, if the fleet's budget allows it.
/// let quota = agentic_runtime::storm::RetryQuota::standard();
/// if store.try_withdraw("openai:3f9a0c", &quota).await?.granted {
///     // ... retry ...
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    client: Client,
    connection: Arc<OnceCell<ConnectionManager>>,
    scripts: Arc<Scripts>,
    address: Arc<str>,
    prefix: Arc<str>,
    timeout: Duration,
    offline_backoff: Duration,
}

/// The store's scripts: the budget's, the cooldowns' and the breakers', the pacer's and the spend
/// accounts'.
struct Scripts {
    store: StoreScripts,
    pace: PaceScripts,
    account: AccountScripts,
}

impl RedisStore {
    /// The key prefix unless [`with_prefix`](Self::with_prefix) sets another.
    pub const DEFAULT_PREFIX: &'static str = "agentic";

    /// The bound on each operation unless [`with_timeout`](Self::with_timeout) sets another.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(250);

    /// How long [`connect`](Self::connect) waits for the server.
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

    /// Connects to the Redis at `url` (`redis://[[user]:password@]host[:port][/db]` or
    /// `redis+unix:///path`), waiting at most [`CONNECT_TIMEOUT`](Self::CONNECT_TIMEOUT).
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when the URL is not a Redis URL, or the server cannot be reached or
    /// refuses the connection (a wrong password, say). To start while Redis is down, use
    /// [`lazy`](Self::lazy).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), agentic_runtime::storm::store::StoreError> {
    /// let store = agentic_redis::RedisStore::connect("redis://:secret@cache:6379/0").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let store = Self::lazy(url)?;
        store.bounded("connect", Self::CONNECT_TIMEOUT, store.connection()).await?;
        Ok(store)
    }

    /// A store for the Redis at `url` that connects on its first operation, and again on the
    /// next one while it cannot: a process can start while Redis is down and share its state once
    /// Redis is back. The first operation's timeout includes connecting.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when `url` is not a Redis URL. It does no I/O.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use agentic_redis::RedisStore;
    ///
    /// let store = RedisStore::lazy("redis://127.0.0.1:6379")?;
    /// # Ok::<(), agentic_runtime::storm::store::StoreError>(())
    /// ```
    pub fn lazy(url: &str) -> Result<Self, StoreError> {
        let address: Arc<str> = redact(url).into();
        let client = Client::open(url).map_err(|err| StoreError(format!("redis at {address}: invalid URL: {err}")))?;
        Ok(Self {
            client,
            connection: Arc::new(OnceCell::new()),
            scripts: Arc::new(Scripts {
                store: StoreScripts::new(),
                pace: PaceScripts::new(),
                account: AccountScripts::new(),
            }),
            address,
            prefix: Self::DEFAULT_PREFIX.into(),
            timeout: Self::DEFAULT_TIMEOUT,
            offline_backoff: DEFAULT_OFFLINE_BACKOFF,
        })
    }

    /// Sets the prefix of every key, so that several fleets (or tests) can share one Redis.
    ///
    /// # Default
    ///
    /// `"agentic"` ([`DEFAULT_PREFIX`](Self::DEFAULT_PREFIX)).
    #[must_use]
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into().into();
        self
    }

    /// Sets the bound on each operation; past it the operation fails with an error saying it
    /// timed out.
    ///
    /// # Default
    ///
    /// 250 ms ([`DEFAULT_TIMEOUT`](Self::DEFAULT_TIMEOUT)).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets how long a runtime goes on with its own state after an operation failed (a Redis that
    /// is down, or accepts and never answers) before it asks Redis again: one call asks then, the
    /// others stay local meanwhile.
    ///
    /// # Default
    ///
    /// 10 s ([`DEFAULT_OFFLINE_BACKOFF`]): one call in 10 s pays the timeout while Redis is silent,
    /// and the fleet shares its state again within 10 s of Redis's return.
    #[must_use]
    pub fn with_offline_backoff(mut self, backoff: Duration) -> Self {
        self.offline_backoff = backoff;
        self
    }

    /// The prefix of every key.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The bound on each operation.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// What every key of `scope` starts with: `{prefix}:{<scope>}:`, the scope a Redis Cluster
    /// hash tag, so that one script may touch all of them.
    fn scope_prefix(&self, scope: &str) -> String {
        format!("{}:{{{scope}}}:", self.prefix)
    }

    /// The key of the retry quota of `scope`: `{prefix}:{<scope>}:budget`.
    pub fn budget_key(&self, scope: &str) -> String {
        format!("{}budget", self.scope_prefix(scope))
    }

    /// The key of a target's `kind` of state: `{prefix}:{<scope>}:<kind>:<model>`.
    fn target_key(&self, kind: &str, key: StoreKey<'_>) -> String {
        format!("{}{kind}:{}", self.scope_prefix(key.scope), key.model)
    }

    /// The key of the cooldown of the target `key`: `{prefix}:{<scope>}:cooldown:<model>`.
    pub fn cooldown_key(&self, key: StoreKey<'_>) -> String {
        self.target_key("cooldown", key)
    }

    /// The key of the state of the breaker of the target `key`: `{prefix}:{<scope>}:breaker:<model>`.
    pub fn breaker_key(&self, key: StoreKey<'_>) -> String {
        self.target_key("breaker", key)
    }

    /// The key of the window of the breaker of the target `key`:
    /// `{prefix}:{<scope>}:breaker-window:<model>`.
    pub fn breaker_window_key(&self, key: StoreKey<'_>) -> String {
        self.target_key("breaker-window", key)
    }

    /// The key of the probe of the breaker of the target `key`:
    /// `{prefix}:{<scope>}:breaker-probe:<model>`.
    pub fn breaker_probe_key(&self, key: StoreKey<'_>) -> String {
        self.target_key("breaker-probe", key)
    }

    /// The key of the pacer's buckets of the target `key`: `{prefix}:{<scope>}:pace:<model>` (see
    /// the module's docs).
    pub fn pace_key(&self, key: StoreKey<'_>) -> String {
        self.target_key("pace", key)
    }

    /// The key of the spend account `name`: `{prefix}:{account:<name>}:spend` (see the crate's
    /// docs).
    pub fn account_key(&self, name: &str) -> String {
        format!("{}:{{account:{name}}}:spend", self.prefix)
    }

    /// Adds the keys and arguments of breaker `key` under `settings` to `invocation`, as the
    /// scripts' `breaker` reads them.
    pub(crate) fn breaker_args(
        &self,
        invocation: &mut redis::ScriptInvocation<'_>,
        key: StoreKey<'_>,
        settings: &BreakerSettings,
    ) {
        let window_ms = millis(settings.window());
        let open_ms = millis(settings.open_for());
        invocation
            .key(self.breaker_window_key(key))
            .key(self.breaker_key(key))
            .key(self.breaker_probe_key(key))
            .arg((window_ms / WINDOW_SLOTS as u64).max(1))
            .arg(open_ms)
            .arg(window_ms.saturating_add(open_ms).saturating_mul(2))
            .arg(settings.failure_percent())
            .arg(settings.min_calls());
    }

    /// An invocation of one of the breaker's scripts for breaker `key` under `settings`.
    fn breaker<'s>(
        &self,
        script: &'s Script,
        key: StoreKey<'_>,
        settings: &BreakerSettings,
    ) -> redis::ScriptInvocation<'s> {
        let mut invocation = script.prepare_invoke();
        self.breaker_args(&mut invocation, key, settings);
        invocation
    }

    /// The successes and retries in the window of `scope` now, for monitoring (`granted` says
    /// whether `quota` would allow a retry; nothing is withdrawn).
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when Redis cannot answer within the timeout.
    pub async fn counts(&self, scope: &str, quota: &RetryQuota) -> Result<Withdrawal, StoreError> {
        let (successes, retries): (u64, u64) =
            self.invoke("counts", self.window(&self.scripts.store.counts, scope, quota)).await?;
        let granted = quota.allowance(successes as f64, retries) > 0;
        Ok(Withdrawal { granted, successes, retries })
    }

    /// An invocation of one of the budget's scripts for `scope` under `quota`.
    fn window<'s>(&self, script: &'s Script, scope: &str, quota: &RetryQuota) -> redis::ScriptInvocation<'s> {
        let mut invocation = script.key(self.budget_key(scope));
        budget_args(&mut invocation, quota);
        invocation
    }

    /// The shared connection, made on first use.
    async fn connection(&self) -> Result<ConnectionManager, StoreError> {
        let connection = self
            .connection
            .get_or_try_init(|| {
                // One attempt per operation: while Redis is down each call fails fast with the
                // real cause, and the next one tries again.
                let config = ConnectionManagerConfig::new()
                    .set_number_of_retries(0)
                    .set_connection_timeout(self.timeout.max(Self::CONNECT_TIMEOUT));
                ConnectionManager::new_with_config(self.client.clone(), config)
            })
            .await
            .map_err(|err| self.failed("connect", &err))?;
        Ok(connection.clone())
    }

    /// Runs `operation` within the store's timeout.
    async fn run<T>(
        &self,
        what: &str,
        operation: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.bounded(what, self.timeout, operation).await
    }

    async fn bounded<T>(
        &self,
        what: &str,
        timeout: Duration,
        operation: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(timeout, operation).await {
            Ok(result) => result,
            Err(_) => {
                Err(StoreError(format!("redis at {}: {what} timed out after {} ms", self.address, timeout.as_millis())))
            }
        }
    }

    fn failed(&self, what: &str, err: &redis::RedisError) -> StoreError {
        StoreError(format!("redis at {}: {what} failed: {err}", self.address))
    }

    fn unexpected(&self, what: &str, answer: &[i64]) -> StoreError {
        StoreError(format!("redis at {}: {what} answered {answer:?}, not an answer of {what}", self.address))
    }

    /// Runs `invocation` on the shared connection within the store's timeout.
    async fn invoke<T: redis::FromRedisValue>(
        &self,
        what: &str,
        invocation: redis::ScriptInvocation<'_>,
    ) -> Result<T, StoreError> {
        self.run(what, async {
            let mut connection = self.connection().await?;
            invocation.invoke_async(&mut connection).await.map_err(|err| self.failed(what, &err))
        })
        .await
    }
}

impl SharedStore for RedisStore {
    fn deposit<'a>(&'a self, scope: &'a str, quota: &'a RetryQuota) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = self.invoke("deposit", self.window(&self.scripts.store.deposit, scope, quota)).await?;
            Ok(())
        })
    }

    fn try_withdraw<'a>(&'a self, scope: &'a str, quota: &'a RetryQuota) -> StoreFuture<'a, Withdrawal> {
        Box::pin(async move {
            let (granted, successes, retries): (i64, u64, u64) =
                self.invoke("try_withdraw", self.window(&self.scripts.store.try_withdraw, scope, quota)).await?;
            Ok(Withdrawal { granted: granted == 1, successes, retries })
        })
    }

    fn cooldown_until<'a>(&'a self, key: StoreKey<'a>) -> StoreFuture<'a, Option<SystemTime>> {
        Box::pin(async move {
            let until_ms: i64 =
                self.invoke("cooldown_until", self.scripts.store.cooldown.key(self.cooldown_key(key))).await?;
            Ok(cooldown_of(until_ms))
        })
    }

    fn extend_cooldown<'a>(&'a self, key: StoreKey<'a>, until: SystemTime) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            // Rounded up, so a cooldown is never shorter than asked for.
            let until_ms = millis_since_epoch(until);
            if until_ms <= millis_since_epoch(SystemTime::now()) {
                return Ok(());
            }
            let mut invocation = self.scripts.store.extend_cooldown.key(self.cooldown_key(key));
            invocation.arg(until_ms);
            let _until_ms: i64 = self.invoke("extend_cooldown", invocation).await?;
            Ok(())
        })
    }

    fn offline_backoff(&self) -> Duration {
        self.offline_backoff
    }

    fn breaker_admit<'a>(
        &'a self,
        key: StoreKey<'a>,
        settings: &'a BreakerSettings,
        token: ProbeToken,
    ) -> StoreFuture<'a, Option<SharedAdmission>> {
        Box::pin(async move {
            let mut invocation = self.breaker(&self.scripts.store.breaker_admit, key, settings);
            invocation.arg(token.get());
            let answer: Vec<i64> = self.invoke("breaker_admit", invocation).await?;
            admission_of(&answer, settings).map(Some).ok_or_else(|| self.unexpected("breaker_admit", &answer))
        })
    }

    fn breaker_record<'a>(
        &'a self,
        key: StoreKey<'a>,
        outcome: CallOutcome,
        probe: bool,
        settings: &'a BreakerSettings,
    ) -> StoreFuture<'a, Option<Recorded>> {
        Box::pin(async move {
            let mut invocation = self.breaker(&self.scripts.store.breaker_record, key, settings);
            invocation.arg(u8::from(outcome == CallOutcome::Failed)).arg(u8::from(probe));
            let answer: Vec<i64> = self.invoke("breaker_record", invocation).await?;
            recorded_of(&answer, settings).map(Some).ok_or_else(|| self.unexpected("breaker_record", &answer))
        })
    }

    fn breaker_release<'a>(&'a self, key: StoreKey<'a>, token: ProbeToken) -> StoreFuture<'a, ()> {
        // The probe's key goes if it is still this admission's: the next admission while half-open
        // takes it (`SET NX`) at once.
        Box::pin(async move {
            let mut invocation = self.scripts.store.breaker_release.key(self.breaker_probe_key(key));
            invocation.arg(token.get());
            let _released: i64 = self.invoke("breaker_release", invocation).await?;
            Ok(())
        })
    }

    fn before_call<'a>(
        &'a self,
        key: StoreKey<'a>,
        breaker: Option<(&'a BreakerSettings, ProbeToken)>,
    ) -> StoreFuture<'a, BeforeCall> {
        Box::pin(async move {
            let mut invocation = self.scripts.store.before_call.key(self.cooldown_key(key));
            invocation.key(self.pace_key(key)).arg(u8::from(breaker.is_some()));
            if let Some((settings, token)) = breaker {
                self.breaker_args(&mut invocation, key, settings);
                invocation.arg(token.get());
            }
            let answer: Vec<i64> = self.invoke("before_call", invocation).await?;
            let unexpected = || self.unexpected("before_call", &answer);
            let (&until_ms, &paces) = answer.first().zip(answer.get(1)).ok_or_else(unexpected)?;
            let admission = match breaker {
                Some((settings, _)) => Some(admission_of(&answer[2..], settings).ok_or_else(unexpected)?),
                None => None,
            };
            Ok(BeforeCall::new(cooldown_of(until_ms), admission, paces == 1))
        })
    }

    fn after_answer<'a>(
        &'a self,
        key: StoreKey<'a>,
        quota: Option<&'a RetryQuota>,
        breaker: Option<(&'a BreakerSettings, bool)>,
    ) -> StoreFuture<'a, Option<Recorded>> {
        Box::pin(async move {
            let mut invocation = self.scripts.store.after_answer.key(self.budget_key(key.scope));
            invocation.arg(u8::from(quota.is_some()));
            // The budget's arguments are there either way, so that the breaker's have fixed places.
            budget_args(&mut invocation, &quota.copied().unwrap_or_else(RetryQuota::standard));
            invocation.arg(u8::from(breaker.is_some()));
            let settings = breaker.map(|(settings, _)| settings);
            let standard = BreakerSettings::standard();
            self.breaker_args(&mut invocation, key, settings.unwrap_or(&standard));
            invocation.arg(u8::from(breaker.is_some_and(|(_, probe)| probe)));
            let answer: Vec<i64> = self.invoke("after_answer", invocation).await?;
            match settings {
                Some(settings) => {
                    recorded_of(&answer, settings).map(Some).ok_or_else(|| self.unexpected("after_answer", &answer))
                }
                None => Ok(None),
            }
        })
    }

    fn pace_learn<'a>(&'a self, key: StoreKey<'a>, limits: &'a RateLimits) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            if !limits.is_empty() {
                let _: i64 = self.invoke("pace_learn", self.scripts.pace.learn(self.pace_key(key), limits)).await?;
            }
            Ok(true)
        })
    }

    fn pace_reserve<'a>(
        &'a self,
        key: StoreKey<'a>,
        demand: &'a Demand,
        left: Option<Duration>,
    ) -> StoreFuture<'a, Option<Result<Reserved, PaceRefused>>> {
        Box::pin(async move {
            let invocation = self.scripts.pace.reserve(self.pace_key(key), demand, left);
            let answer: Vec<i64> = self.invoke("pace_reserve", invocation).await?;
            reserved_of(&answer, left).ok_or_else(|| self.unexpected("pace_reserve", &answer))
        })
    }

    fn pace_settle<'a>(&'a self, key: StoreKey<'a>, reserved: &'a Demand, used: &'a Demand) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 =
                self.invoke("pace_settle", self.scripts.pace.settle(self.pace_key(key), reserved, used)).await?;
            Ok(())
        })
    }

    fn account_reserve<'a>(
        &'a self,
        account: &'a SpendAccount,
        needed: Amounts,
    ) -> StoreFuture<'a, Option<Result<Held, AccountRefused>>> {
        Box::pin(async move {
            let invocation = self.scripts.account.reserve(self.account_key(account.name()), account, needed);
            let answer: Vec<i64> = self.invoke("account_reserve", invocation).await?;
            held_of(&answer, needed).map(Some).ok_or_else(|| self.unexpected("account_reserve", &answer))
        })
    }

    fn account_settle<'a>(&'a self, account: &'a SpendAccount, held: Held, used: Amounts) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let invocation = self.scripts.account.settle(self.account_key(account.name()), account, held, used);
            let _settled: i64 = self.invoke("account_settle", invocation).await?;
            Ok(())
        })
    }
}

/// Adds the arguments of a budget under `quota` to `invocation`, as the scripts' `budget` reads
/// them: the slot's length, the expiry, the fewest retries and the retry percent.
pub(crate) fn budget_args(invocation: &mut redis::ScriptInvocation<'_>, quota: &RetryQuota) {
    let window_ms = millis(quota.window());
    invocation
        .arg((window_ms / WINDOW_SLOTS as u64).max(1))
        .arg(window_ms.saturating_mul(2))
        .arg(quota.min_retries())
        .arg(quota.retry_percent());
}

/// The cooldown the scripts' `cooldown` answered (`-1`: none), if it is not past.
fn cooldown_of(until_ms: i64) -> Option<SystemTime> {
    let until_ms = u64::try_from(until_ms).ok()?;
    (until_ms > millis_since_epoch(SystemTime::now())).then(|| UNIX_EPOCH + Duration::from_millis(until_ms))
}

/// What the scripts' `admit` answered, under `settings`. An open period is never longer than the
/// settings' (a store is input, as a server is); `None` when it is no answer of `admit`.
pub(crate) fn admission_of(answer: &[i64], settings: &BreakerSettings) -> Option<SharedAdmission> {
    let opened = |at: usize| opened_of(answer, at, settings);
    match answer.first()? {
        0 => Some(SharedAdmission::Call),
        1 => opened(1).map(SharedAdmission::Probe),
        2 => opened(1).map(|opened| SharedAdmission::Skip(BreakerState::HalfOpen { opened })),
        3 => opened(1).zip(answer.get(3)).map(|(opened, &left)| {
            let left = Duration::from_millis(u64::try_from(left).unwrap_or(0)).min(settings.open_for());
            SharedAdmission::Skip(BreakerState::Open { left, opened })
        }),
        _ => None,
    }
}

/// What the scripts' `record` answered, under `settings`; `None` when it is no answer of `record`.
pub(crate) fn recorded_of(answer: &[i64], settings: &BreakerSettings) -> Option<Recorded> {
    match answer.first()? {
        0 => Some(Recorded::Unchanged),
        1 => opened_of(answer, 1, settings).map(Recorded::Opened),
        2 => opened_of(answer, 1, settings).map(Recorded::Reopened),
        3 => Some(Recorded::Closed),
        _ => None,
    }
}

/// The [`Opened`] at `answer[at..at + 2]` (failures, calls), in `settings`' window.
fn opened_of(answer: &[i64], at: usize, settings: &BreakerSettings) -> Option<Opened> {
    let count = |at: usize| answer.get(at).and_then(|&count| u64::try_from(count).ok());
    Some(Opened { failures: count(at)?, calls: count(at + 1)?, window: settings.window() })
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("address", &self.address)
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("offline_backoff", &self.offline_backoff)
            .field("connected", &self.connection.initialized())
            .finish()
    }
}

/// Milliseconds since the UNIX epoch, rounded up (0 before it).
fn millis_since_epoch(time: SystemTime) -> u64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let millis = since.as_millis() + u128::from(since.subsec_nanos() % 1_000_000 != 0);
    u64::try_from(millis).unwrap_or(u64::MAX)
}

/// `url` with the password of its user info replaced by `***`.
fn redact(url: &str) -> String {
    let authority_start = url.find("://").map_or(0, |at| at + 3);
    let rest = &url[authority_start..];
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_len].rfind('@') else {
        return url.to_owned();
    };
    let user_info = &rest[..at];
    let user = user_info.split_once(':').map_or(user_info, |(user, _)| user);
    if user.len() == user_info.len() {
        // No password; a lone user name is not secret, but some write the password there.
        return url.to_owned();
    }
    format!("{}{user}:***{}", &url[..authority_start], &rest[at..])
}

#[cfg(test)]
mod tests {
    use super::{millis_since_epoch, redact};
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn redacts_passwords_only() {
        assert_eq!(redact("redis://:secret@host:6379/0"), "redis://:***@host:6379/0");
        assert_eq!(redact("redis://user:p@ss:word@host"), "redis://user:***@host");
        assert_eq!(redact("redis://host:6379"), "redis://host:6379");
        assert_eq!(redact("redis://user@host"), "redis://user@host");
        assert_eq!(redact("redis+unix:///tmp/r.sock"), "redis+unix:///tmp/r.sock");
        assert_eq!(redact("rediss://a:b@h/?x=@"), "rediss://a:***@h/?x=@");
    }

    #[test]
    fn rounds_up_to_the_millisecond() {
        assert_eq!(millis_since_epoch(UNIX_EPOCH + Duration::from_millis(7)), 7);
        assert_eq!(millis_since_epoch(UNIX_EPOCH + Duration::from_micros(7_001)), 8);
        assert_eq!(millis_since_epoch(UNIX_EPOCH - Duration::from_secs(1)), 0);
    }
}
