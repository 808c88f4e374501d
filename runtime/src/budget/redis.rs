//! A [`SharedStore`] in Redis, so a fleet of processes on many machines shares one retry budget,
//! one cooldown and one pacer per provider and API key, and one circuit breaker per target (cargo
//! feature `redis`).
//!
//! Keys are `{prefix}:budget:{scope}` (a hash: the successes and retries of each slot of the
//! window, fields `s:{slot}` and `r:{slot}`) and `{prefix}:cooldown:{scope}` (the end of the
//! cooldown, in milliseconds since the UNIX epoch). Every update is one Lua script, so concurrent
//! processes never lose a count. The budget's slots are cut on the Redis server's clock, one
//! clock for the whole fleet; slots that leave the window are deleted, and a budget left untouched
//! for two windows expires (an empty window). A cooldown expires when it ends, and lasts no longer
//! than the runtime that set it would wait (`retry_after_cap_ms`: a hint past it is not stored).
//!
//! A breaker (key `"<scope>/<model>"`) is three keys: `{prefix}:breaker:{key}` (a hash: `state`
//! `open` or `half_open`, absent when closed; `until`, the end of the open period in ms on the
//! server's clock; `failures` and `calls`, why it opened), `{prefix}:breaker-window:{key}` (a hash:
//! the answered and failed calls of each slot of the window, fields `s:{slot}` and `f:{slot}`, as
//! the budget's, and the calls let through, `a:{slot}`) and `{prefix}:breaker-probe:{key}` (set, if absent, by the caller that takes the
//! probe; it expires after the open period, so a probe that never reports lets another go). Each
//! admission and each outcome is one Lua script on the server's clock; a breaker untouched for two
//! windows and two open periods expires (closed).
//!
//! The pacer's buckets of a scope are one hash, `{prefix}:pace:{scope}` (six fields per limit: its
//! size, level, rate, the level's instant, the server's reset and what was taken since), kept on
//! the server's clock by three Lua scripts that run the in-process pacer's rules (see
//! `budget/redis_pace.rs`); it expires after twice the longest time one of its limits takes to
//! refill, 5 minutes at least and 2 days at most.
//!
//! Cooldowns are wall-clock instants of the processes: machines that share them should keep their
//! clocks in sync (NTP), or a fast clock ends a cooldown early.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Script};
use tokio::sync::OnceCell;

use super::breaker::{BreakerSettings, BreakerState, CallOutcome, Opened, Recorded, SharedAdmission};
use super::ledger::SLOTS;
use super::quota::RetryQuota;
use super::redis_pace::{PaceScripts, reserved_of};
use super::store::{DEFAULT_OFFLINE_BACKOFF, SharedStore, StoreError, StoreFuture, Withdrawal};
use crate::pace::{Demand, PaceRefused, RateLimits, Reserved};
use crate::policy::rules::millis;

/// The slot of now on the server's clock (`ARGV[1]`: a slot's length in ms), and a function that
/// deletes the slots older than the window (`ARGV[2]`: the slots in a window) and sums the rest.
/// `redis.replicate_commands` lets a script write after reading the clock on Redis before 5.
const WINDOW: &str = r"
if redis.replicate_commands then redis.replicate_commands() end
local time = redis.call('TIME')
local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local slot = math.floor(now_ms / tonumber(ARGV[1]))
local oldest = slot - tonumber(ARGV[2]) + 1
local function counts()
  local fields = redis.call('HGETALL', KEYS[1])
  local successes, retries = 0, 0
  for i = 1, #fields, 2 do
    local name, count = fields[i], tonumber(fields[i + 1])
    if tonumber(string.sub(name, 3)) < oldest then
      redis.call('HDEL', KEYS[1], name)
    elseif string.sub(name, 1, 1) == 's' then
      successes = successes + count
    else
      retries = retries + count
    end
  end
  return successes, retries
end
";

/// Counts one success in the slot of now; the first of a slot also forgets the slots that left
/// the window. `ARGV[3]`: how long an untouched budget is kept, in ms.
const DEPOSIT: &str = r"
if redis.call('HINCRBY', KEYS[1], 's:' .. slot, 1) == 1 then counts() end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
";

/// Counts one retry in the slot of now when the window allows one: `ARGV[4]` retries whatever
/// succeeded, plus `ARGV[5]` per 100 successes. Returns {granted, successes, retries}, the counts
/// before the retry.
const TRY_WITHDRAW: &str = r"
local successes, retries = counts()
local allowed = math.floor(tonumber(ARGV[4]) + successes * tonumber(ARGV[5]) / 100)
if allowed - retries < 1 then return {0, successes, retries} end
redis.call('HINCRBY', KEYS[1], 'r:' .. slot, 1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, successes, retries}
";

/// The window's successes and retries now: {successes, retries}.
const COUNTS: &str = r"
local successes, retries = counts()
return {successes, retries}
";

/// Whether a call may go (after [`WINDOW`]; `KEYS`: the window, the state, the probe; `ARGV[3]`:
/// the open period in ms, `ARGV[4]`: how long an untouched breaker is kept). Closed, it counts the
/// call let through in now's `a:` slot (a call still out counts as not failed). Returns {0} closed,
/// {1, failures, calls} the caller's probe, {2, failures, calls} half-open with another's probe,
/// {3, failures, calls, left_ms} open.
const BREAKER_ADMIT: &str = r"
local state = redis.call('HMGET', KEYS[2], 'state', 'until', 'failures', 'calls')
if not state[1] then
  redis.call('HINCRBY', KEYS[1], 'a:' .. slot, 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return {0}
end
local failures, calls = tonumber(state[3]), tonumber(state[4])
if state[1] == 'open' then
  local left = tonumber(state[2]) - now_ms
  if left > 0 then return {3, failures, calls, left} end
  redis.call('HSET', KEYS[2], 'state', 'half_open')
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
if redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[3]) then return {1, failures, calls} end
return {2, failures, calls}
";

/// Counts a call's outcome (after [`WINDOW`]; `KEYS` and `ARGV[3..4]` as [`BREAKER_ADMIT`]'s;
/// `ARGV[5]`: 1 when it failed, `ARGV[6]`: the failure percent, `ARGV[7]`: the fewest calls,
/// `ARGV[8]`: 1 when the call was the probe, the only one whose outcome decides while half-open).
/// Returns {0} unchanged, {1, failures, calls} opened, {2, failures, calls} opened again (the
/// probe failed), {3} closed.
const BREAKER_RECORD: &str = r"
local failed = ARGV[5] == '1'
local state = redis.call('HMGET', KEYS[2], 'state', 'failures', 'calls')
local function open(failures, calls)
  redis.call('DEL', KEYS[1], KEYS[3])
  local until_ms = string.format('%.0f', now_ms + tonumber(ARGV[3]))
  redis.call('HSET', KEYS[2], 'state', 'open', 'until', until_ms, 'failures', failures, 'calls', calls)
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
if state[1] == 'half_open' then
  if ARGV[8] ~= '1' then return {0} end
  if failed then
    open(state[2], state[3])
    return {2, tonumber(state[2]), tonumber(state[3])}
  end
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  return {3}
end
if state[1] then return {0} end
redis.call('HINCRBY', KEYS[1], (failed and 'f:' or 's:') .. slot, 1)
local answered, failures, admitted = 0, 0, 0
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local name, count = fields[i], tonumber(fields[i + 1])
  local kind = string.sub(name, 1, 1)
  if tonumber(string.sub(name, 3)) < oldest then
    redis.call('HDEL', KEYS[1], name)
  elseif kind == 's' then
    answered = answered + count
  elseif kind == 'f' then
    failures = failures + count
  else
    admitted = admitted + count
  end
end
local calls = math.max(answered + failures, admitted)
if calls >= tonumber(ARGV[7]) and failures * 100 >= tonumber(ARGV[6]) * calls then
  open(failures, calls)
  return {1, failures, calls}
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {0}
";

/// Moves the cooldown `KEYS[1]` to `ARGV[1]` (ms since the UNIX epoch) unless it ends later, and
/// lets it expire then. Returns the end in force.
const EXTEND_COOLDOWN: &str = r"
local current = tonumber(redis.call('GET', KEYS[1]))
local until_ms = tonumber(ARGV[1])
if current ~= nil and current >= until_ms then return current end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[1])
return until_ms
";

/// The retry budgets and cooldowns of a fleet, in Redis.
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
/// use agentic_runtime::budget::redis::RedisStore;
/// use agentic_runtime::budget::store::SharedStore;
///
/// # async fn run() -> Result<(), agentic_runtime::budget::store::StoreError> {
/// let store = RedisStore::connect("redis://127.0.0.1:6379")
///     .await?
///     .with_prefix("billing-workers")
///     .with_timeout(Duration::from_millis(100));
///
/// // One retry for one provider and API-key fingerprint, if the fleet's budget allows it.
/// let quota = agentic_runtime::budget::RetryQuota::standard();
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

struct Scripts {
    deposit: Script,
    try_withdraw: Script,
    counts: Script,
    extend_cooldown: Script,
    breaker_admit: Script,
    breaker_record: Script,
    pace: PaceScripts,
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
    /// # async fn run() -> Result<(), agentic_runtime::budget::store::StoreError> {
    /// let store = agentic_runtime::budget::redis::RedisStore::connect("redis://:secret@cache:6379/0").await?;
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
    /// use agentic_runtime::budget::redis::RedisStore;
    ///
    /// let store = RedisStore::lazy("redis://127.0.0.1:6379")?;
    /// # Ok::<(), agentic_runtime::budget::store::StoreError>(())
    /// ```
    pub fn lazy(url: &str) -> Result<Self, StoreError> {
        let address: Arc<str> = redact(url).into();
        let client = Client::open(url).map_err(|err| StoreError(format!("redis at {address}: invalid URL: {err}")))?;
        Ok(Self {
            client,
            connection: Arc::new(OnceCell::new()),
            scripts: Arc::new(Scripts {
                deposit: Script::new(&format!("{WINDOW}{DEPOSIT}")),
                try_withdraw: Script::new(&format!("{WINDOW}{TRY_WITHDRAW}")),
                counts: Script::new(&format!("{WINDOW}{COUNTS}")),
                extend_cooldown: Script::new(EXTEND_COOLDOWN),
                breaker_admit: Script::new(&format!("{WINDOW}{BREAKER_ADMIT}")),
                breaker_record: Script::new(&format!("{WINDOW}{BREAKER_RECORD}")),
                pace: PaceScripts::new(),
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

    /// The key of the retry budget of `scope`: `{prefix}:budget:{scope}`.
    pub fn budget_key(&self, scope: &str) -> String {
        format!("{}:budget:{scope}", self.prefix)
    }

    /// The key of the cooldown of `scope`: `{prefix}:cooldown:{scope}`.
    pub fn cooldown_key(&self, scope: &str) -> String {
        format!("{}:cooldown:{scope}", self.prefix)
    }

    /// The key of the state of breaker `key` (`"<scope>/<model>"`): `{prefix}:breaker:{key}`.
    pub fn breaker_key(&self, key: &str) -> String {
        format!("{}:breaker:{key}", self.prefix)
    }

    /// The key of the window of breaker `key`: `{prefix}:breaker-window:{key}`.
    pub fn breaker_window_key(&self, key: &str) -> String {
        format!("{}:breaker-window:{key}", self.prefix)
    }

    /// The key of the probe of breaker `key`: `{prefix}:breaker-probe:{key}`.
    pub fn breaker_probe_key(&self, key: &str) -> String {
        format!("{}:breaker-probe:{key}", self.prefix)
    }

    /// The key of the pacer's buckets of `scope`: `{prefix}:pace:{scope}` (see the module's docs).
    pub fn pace_key(&self, scope: &str) -> String {
        format!("{}:pace:{scope}", self.prefix)
    }

    /// An invocation of one of the breaker's scripts for breaker `key` under `settings`.
    fn breaker<'s>(&self, script: &'s Script, key: &str, settings: &BreakerSettings) -> redis::ScriptInvocation<'s> {
        let window_ms = millis(settings.window());
        let open_ms = millis(settings.open_for());
        let mut invocation = script.key(self.breaker_window_key(key));
        invocation
            .key(self.breaker_key(key))
            .key(self.breaker_probe_key(key))
            .arg((window_ms / SLOTS as u64).max(1))
            .arg(SLOTS)
            .arg(open_ms)
            .arg(window_ms.saturating_add(open_ms).saturating_mul(2));
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
            self.invoke("counts", self.window(&self.scripts.counts, scope, quota)).await?;
        let granted = quota.allowance(successes as f64, retries) > 0;
        Ok(Withdrawal { granted, successes, retries })
    }

    /// An invocation of one of the window's scripts for `scope` under `quota`.
    fn window<'s>(&self, script: &'s Script, scope: &str, quota: &RetryQuota) -> redis::ScriptInvocation<'s> {
        let window_ms = u64::try_from(quota.window().as_millis()).unwrap_or(u64::MAX);
        let mut invocation = script.key(self.budget_key(scope));
        invocation
            .arg((window_ms / SLOTS as u64).max(1))
            .arg(SLOTS)
            .arg(window_ms.saturating_mul(2))
            .arg(quota.min_retries())
            .arg(quota.retry_percent());
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
            let _: i64 = self.invoke("deposit", self.window(&self.scripts.deposit, scope, quota)).await?;
            Ok(())
        })
    }

    fn try_withdraw<'a>(&'a self, scope: &'a str, quota: &'a RetryQuota) -> StoreFuture<'a, Withdrawal> {
        Box::pin(async move {
            let (granted, successes, retries): (i64, u64, u64) =
                self.invoke("try_withdraw", self.window(&self.scripts.try_withdraw, scope, quota)).await?;
            Ok(Withdrawal { granted: granted == 1, successes, retries })
        })
    }

    fn cooldown_until<'a>(&'a self, scope: &'a str) -> StoreFuture<'a, Option<SystemTime>> {
        Box::pin(self.run("cooldown_until", async move {
            let mut connection = self.connection().await?;
            let until_ms: Option<u64> = redis::cmd("GET")
                .arg(self.cooldown_key(scope))
                .query_async(&mut connection)
                .await
                .map_err(|err| self.failed("cooldown_until", &err))?;
            let now_ms = millis_since_epoch(SystemTime::now());
            Ok(until_ms
                .filter(|&until_ms| until_ms > now_ms)
                .map(|until_ms| UNIX_EPOCH + Duration::from_millis(until_ms)))
        }))
    }

    fn extend_cooldown<'a>(&'a self, scope: &'a str, until: SystemTime) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            // Rounded up, so a cooldown is never shorter than asked for.
            let until_ms = millis_since_epoch(until);
            if until_ms <= millis_since_epoch(SystemTime::now()) {
                return Ok(());
            }
            let mut invocation = self.scripts.extend_cooldown.key(self.cooldown_key(scope));
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
        key: &'a str,
        settings: &'a BreakerSettings,
    ) -> StoreFuture<'a, Option<SharedAdmission>> {
        Box::pin(async move {
            let answer: Vec<i64> =
                self.invoke("breaker_admit", self.breaker(&self.scripts.breaker_admit, key, settings)).await?;
            let opened = |at: usize| opened_of(&answer, at, settings);
            let admission = match answer.first() {
                Some(0) => Some(SharedAdmission::Call),
                Some(1) => opened(1).map(SharedAdmission::Probe),
                Some(2) => opened(1).map(|opened| SharedAdmission::Skip(BreakerState::HalfOpen { opened })),
                Some(3) => opened(1).zip(answer.get(3)).map(|(opened, &left)| {
                    let left = Duration::from_millis(u64::try_from(left).unwrap_or(0));
                    SharedAdmission::Skip(BreakerState::Open { left, opened })
                }),
                _ => None,
            };
            admission.map(Some).ok_or_else(|| self.unexpected("breaker_admit", &answer))
        })
    }

    fn breaker_record<'a>(
        &'a self,
        key: &'a str,
        outcome: CallOutcome,
        probe: bool,
        settings: &'a BreakerSettings,
    ) -> StoreFuture<'a, Option<Recorded>> {
        Box::pin(async move {
            let mut invocation = self.breaker(&self.scripts.breaker_record, key, settings);
            invocation
                .arg(u8::from(outcome == CallOutcome::Failed))
                .arg(settings.failure_percent())
                .arg(settings.min_calls())
                .arg(u8::from(probe));
            let answer: Vec<i64> = self.invoke("breaker_record", invocation).await?;
            let recorded = match answer.first() {
                Some(0) => Some(Recorded::Unchanged),
                Some(1) => opened_of(&answer, 1, settings).map(Recorded::Opened),
                Some(2) => opened_of(&answer, 1, settings).map(Recorded::Reopened),
                Some(3) => Some(Recorded::Closed),
                _ => None,
            };
            recorded.map(Some).ok_or_else(|| self.unexpected("breaker_record", &answer))
        })
    }

    fn breaker_release<'a>(&'a self, key: &'a str) -> StoreFuture<'a, ()> {
        // The probe's key goes: the next admission while half-open takes it (`SET NX`) at once.
        Box::pin(self.run("breaker_release", async move {
            let mut connection = self.connection().await?;
            let _: i64 = redis::cmd("DEL")
                .arg(self.breaker_probe_key(key))
                .query_async(&mut connection)
                .await
                .map_err(|err| self.failed("breaker_release", &err))?;
            Ok(())
        }))
    }

    fn pace_learn<'a>(&'a self, scope: &'a str, limits: &'a RateLimits) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            if !limits.is_empty() {
                let _: i64 = self.invoke("pace_learn", self.scripts.pace.learn(self.pace_key(scope), limits)).await?;
            }
            Ok(true)
        })
    }

    fn pace_reserve<'a>(
        &'a self,
        scope: &'a str,
        demand: &'a Demand,
        left: Option<Duration>,
    ) -> StoreFuture<'a, Option<Result<Reserved, PaceRefused>>> {
        Box::pin(async move {
            let invocation = self.scripts.pace.reserve(self.pace_key(scope), demand, left);
            let answer: Vec<i64> = self.invoke("pace_reserve", invocation).await?;
            reserved_of(&answer, left).ok_or_else(|| self.unexpected("pace_reserve", &answer))
        })
    }

    fn pace_settle<'a>(&'a self, scope: &'a str, reserved: &'a Demand, used: &'a Demand) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 =
                self.invoke("pace_settle", self.scripts.pace.settle(self.pace_key(scope), reserved, used)).await?;
            Ok(())
        })
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
