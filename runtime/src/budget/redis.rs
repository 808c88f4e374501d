//! A [`SharedStore`] in Redis, so a fleet of processes on many machines shares one retry bucket
//! and one cooldown per provider and API key (cargo feature `redis`).
//!
//! Keys are `{prefix}:bucket:{scope}` (the tokens left, as an integer) and
//! `{prefix}:cooldown:{scope}` (the end of the cooldown, in milliseconds since the UNIX epoch).
//! Every update is one Lua script, so concurrent processes never lose a token. A bucket left
//! untouched for an hour expires, which makes it full again; a cooldown expires when it ends.
//!
//! Cooldowns are wall-clock instants: machines that share them should keep their clocks in sync
//! (NTP), or a fast clock ends a cooldown early.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Script};
use tokio::sync::OnceCell;

use super::store::{SharedStore, StoreError, StoreFuture};

/// Takes `ARGV[1]` tokens from the bucket `KEYS[1]` (missing means `ARGV[2]`, the capacity) and
/// returns 1, or returns 0 when it holds fewer. A write keeps the bucket for `ARGV[3]` ms.
const TAKE: &str = r"
local capacity = tonumber(ARGV[2])
local tokens = tonumber(redis.call('GET', KEYS[1])) or capacity
if tokens > capacity then tokens = capacity end
local cost = tonumber(ARGV[1])
if tokens < cost then return 0 end
redis.call('SET', KEYS[1], tokens - cost, 'PX', ARGV[3])
return 1
";

/// Returns `ARGV[1]` tokens to the bucket `KEYS[1]`, never above `ARGV[2]`; a full bucket is
/// deleted (missing means full). Returns the tokens it holds.
const REFUND: &str = r"
local capacity = tonumber(ARGV[2])
local tokens = tonumber(redis.call('GET', KEYS[1]))
if tokens == nil then return capacity end
tokens = math.min(capacity, tokens + tonumber(ARGV[1]))
if tokens >= capacity then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], tokens, 'PX', ARGV[3])
end
return tokens
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

/// The retry buckets and cooldowns of a fleet, in Redis.
///
/// One store is meant to be shared by every call of a process (it is cheap to clone: clones share
/// one connection, multiplexed and re-established after a failure). Every operation is bounded
/// by a timeout (250 ms by default), so a dead or slow Redis costs a call at most that long and
/// never hangs it; the error then says "timed out".
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
/// // Take 5 of 500 tokens for one provider and API-key fingerprint.
/// if store.try_take("openai:3f9a0c", 5, 500).await? {
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
    idle_expiry: Duration,
}

struct Scripts {
    take: Script,
    refund: Script,
    extend_cooldown: Script,
}

impl RedisStore {
    /// The key prefix unless [`with_prefix`](Self::with_prefix) sets another.
    pub const DEFAULT_PREFIX: &'static str = "agentic";

    /// The bound on each operation unless [`with_timeout`](Self::with_timeout) sets another.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(250);

    /// How long [`connect`](Self::connect) waits for the server.
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

    /// How long an untouched bucket is kept unless
    /// [`with_idle_expiry`](Self::with_idle_expiry) sets another.
    pub const DEFAULT_IDLE_EXPIRY: Duration = Duration::from_secs(3600);

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
                take: Script::new(TAKE),
                refund: Script::new(REFUND),
                extend_cooldown: Script::new(EXTEND_COOLDOWN),
            }),
            address,
            prefix: Self::DEFAULT_PREFIX.into(),
            timeout: Self::DEFAULT_TIMEOUT,
            idle_expiry: Self::DEFAULT_IDLE_EXPIRY,
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

    /// Sets how long a bucket is kept after its last take or refund; an expired bucket is full.
    /// At least one millisecond.
    ///
    /// # Default
    ///
    /// One hour ([`DEFAULT_IDLE_EXPIRY`](Self::DEFAULT_IDLE_EXPIRY)).
    #[must_use]
    pub fn with_idle_expiry(mut self, idle_expiry: Duration) -> Self {
        self.idle_expiry = idle_expiry.max(Duration::from_millis(1));
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

    /// The key of the bucket of `scope`: `{prefix}:bucket:{scope}`.
    pub fn bucket_key(&self, scope: &str) -> String {
        format!("{}:bucket:{scope}", self.prefix)
    }

    /// The key of the cooldown of `scope`: `{prefix}:cooldown:{scope}`.
    pub fn cooldown_key(&self, scope: &str) -> String {
        format!("{}:cooldown:{scope}", self.prefix)
    }

    /// The tokens in the bucket of `scope` (a missing bucket holds `capacity`), for monitoring.
    ///
    /// # Errors
    ///
    /// A [`StoreError`] when Redis cannot answer within the timeout.
    pub async fn tokens(&self, scope: &str, capacity: u32) -> Result<u32, StoreError> {
        let key = self.bucket_key(scope);
        self.run("tokens", async move {
            let mut connection = self.connection().await?;
            let tokens: Option<u64> = redis::cmd("GET")
                .arg(key)
                .query_async(&mut connection)
                .await
                .map_err(|err| self.failed("tokens", &err))?;
            Ok(tokens.map_or(capacity, |tokens| u32::try_from(tokens).unwrap_or(u32::MAX).min(capacity)))
        })
        .await
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

    fn idle_ms(&self) -> u64 {
        u64::try_from(self.idle_expiry.as_millis()).unwrap_or(u64::MAX)
    }
}

impl SharedStore for RedisStore {
    fn try_take<'a>(&'a self, scope: &'a str, cost: u32, capacity: u32) -> StoreFuture<'a, bool> {
        Box::pin(self.run("try_take", async move {
            let mut connection = self.connection().await?;
            let taken: i64 = self
                .scripts
                .take
                .key(self.bucket_key(scope))
                .arg(cost)
                .arg(capacity)
                .arg(self.idle_ms())
                .invoke_async(&mut connection)
                .await
                .map_err(|err| self.failed("try_take", &err))?;
            Ok(taken == 1)
        }))
    }

    fn refund<'a>(&'a self, scope: &'a str, amount: u32, capacity: u32) -> StoreFuture<'a, ()> {
        Box::pin(self.run("refund", async move {
            let mut connection = self.connection().await?;
            let _tokens: i64 = self
                .scripts
                .refund
                .key(self.bucket_key(scope))
                .arg(amount)
                .arg(capacity)
                .arg(self.idle_ms())
                .invoke_async(&mut connection)
                .await
                .map_err(|err| self.failed("refund", &err))?;
            Ok(())
        }))
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
        Box::pin(self.run("extend_cooldown", async move {
            // Rounded up, so a cooldown is never shorter than asked for.
            let until_ms = millis_since_epoch(until);
            if until_ms <= millis_since_epoch(SystemTime::now()) {
                return Ok(());
            }
            let mut connection = self.connection().await?;
            let _until_ms: i64 = self
                .scripts
                .extend_cooldown
                .key(self.cooldown_key(scope))
                .arg(until_ms)
                .invoke_async(&mut connection)
                .await
                .map_err(|err| self.failed("extend_cooldown", &err))?;
            Ok(())
        }))
    }
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("address", &self.address)
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("idle_expiry", &self.idle_expiry)
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
