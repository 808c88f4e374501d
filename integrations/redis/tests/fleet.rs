//! Fleet mode end to end: two `Runtime`s (as two processes would) sharing one Redis share the retry
//! budget and the cooldowns; with Redis down or silent, calls go on with local state, asking Redis
//! again once per back-off period, with one warning when it fails and one when it answers again;
//! the circuit breaker of a target is shared too.
//! Needs `AGENTIC_REDIS_URL` (`.ci/run` starts a server); `AGENTIC_SKIP_REDIS=1` skips.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use agentic_chaos::SilentServer;
use agentic_redis::RedisStore;
use agentic_runtime::decision::{MoveReason, Verdict, Why};
use agentic_runtime::storm::RetryQuota;
use agentic_runtime::storm::store::{SharedStore, StoreFuture, StoreKey, Withdrawal};
use agentic_runtime::storm::{BreakerSettings, BreakerState};
use agentic_runtime::{ExecErrorKind, RetryPolicy, Runtime, Scripted, ScriptedProvider};
use agentic_test_support::captured_log::capture;

use crate::support::{FAST, prefix, pttl, redis_url};

async fn shared_store(url: &str, test: &str) -> Arc<RedisStore> {
    Arc::new(RedisStore::connect(url).await.expect("Redis answers").with_prefix(prefix(test)))
}

/// Two runtimes on one prefix, as two processes would be: separate stores, the same keys.
async fn two_runtimes(
    url: &str,
    test: &str,
    quota: RetryQuota,
    providers: [&ScriptedProvider; 2],
) -> (Runtime, Runtime) {
    let store = shared_store(url, test).await;
    let other = Arc::new(RedisStore::connect(url).await.unwrap().with_prefix(store.prefix().to_owned()));
    let [first, second] = providers;
    let first = Runtime::builder(first.clone()).with_retry_quota(Some(quota)).with_shared_store(store).build().unwrap();
    let second =
        Runtime::builder(second.clone()).with_retry_quota(Some(quota)).with_shared_store(other).build().unwrap();
    (first, second)
}

/// One runtime's successes pay for the other's retries: the budget's window is the fleet's.
#[tokio::test]
async fn one_runtimes_successes_pay_for_the_others_retries() {
    let Some(url) = redis_url("one_runtimes_successes_pay_for_the_others_retries") else { return };
    let healthy = ScriptedProvider::new([]).otherwise(Scripted::ok("fine"));
    let failing = ScriptedProvider::new([]).otherwise(Scripted::error("overloaded"));
    let no_floor = RetryQuota::standard().with_min_retries(0);
    let (first, second) = two_runtimes(&url, "pays", no_floor, [&healthy, &failing]).await;

    for _ in 0..3 {
        first.request("answers").policy(&FAST).send().await.unwrap();
    }
    let error = second.request("fails").policy(&FAST).send().await.unwrap_err();
    assert_eq!(error.kind(), ExecErrorKind::Refused);
    assert_eq!(error.calls(), 4, "the first call and the 3 retries the other runtime's successes paid for");
    assert!(
        error.stopped_by().unwrap().starts_with("the retry quota is empty: 3 retries against 3 successful calls"),
        "{:?}",
        error.stopped_by()
    );
    assert_eq!(second.retry_quota_left(), Some(0), "this process's own window was not used");
}

/// In an outage the fleet shares one floor: two runtimes together get the retries one would.
#[tokio::test]
async fn an_outage_seen_by_two_runtimes_spends_one_floor() {
    let Some(url) = redis_url("an_outage_seen_by_two_runtimes_spends_one_floor") else { return };
    let failing = || ScriptedProvider::new([]).otherwise(Scripted::error("overloaded"));
    let (first_provider, second_provider) = (failing(), failing());
    // A floor of 10 retries in the window.
    let quota = RetryQuota::standard().with_min_retries(10);
    let (first, second) = two_runtimes(&url, "outage", quota, [&first_provider, &second_provider]).await;

    let error = first.request("spends the floor").policy(&FAST).send().await.unwrap_err();
    assert_eq!((error.kind(), error.calls()), (ExecErrorKind::Refused, 11), "10 retries, then refused");
    let error = second.request("refused").policy(&FAST).send().await.unwrap_err();
    assert_eq!((error.kind(), error.calls()), (ExecErrorKind::Refused, 1), "the floor is the fleet's");
    assert_eq!(first_provider.calls() + second_provider.calls(), 12, "24 without the budget");
}

#[tokio::test]
async fn a_cooldown_learned_by_one_runtime_delays_the_other() {
    let Some(url) = redis_url("a_cooldown_learned_by_one_runtime_delays_the_other") else { return };
    let store = shared_store(&url, "cooldown").await;
    let other = Arc::new(RedisStore::connect(&url).await.unwrap().with_prefix(store.prefix().to_owned()));
    let store_key = Arc::clone(&store);
    let first = Runtime::builder(
        ScriptedProvider::new([Scripted::http(429, "slow down").with_retry_after(Duration::from_millis(400))])
            .otherwise(Scripted::ok("fine")),
    )
    .with_shared_store(store)
    .build()
    .unwrap();
    let second_provider = ScriptedProvider::new([Scripted::ok("fine")]);
    let second = Runtime::builder(second_provider.clone()).with_shared_store(other).build().unwrap();

    let policy = RetryPolicy::new().with_max_retries(1).with_session_retries(0);
    first.request("learns the wait").policy(&policy).send().await.unwrap_err();
    // The key lives as long as the cooldown, no longer: its end is rounded up to the next
    // millisecond (no caller may come early), so Redis may read one more than 400 within that one.
    let ttl_ms = pttl(&url, &store_key.cooldown_key(StoreKey::new("scripted", ""))).await;
    assert!(ttl_ms > 0 && ttl_ms <= 401, "PTTL {ttl_ms}");
    let start = Instant::now();
    let reply = second.exec("waits").await.unwrap();
    assert_eq!(reply.calls(), 1, "the second runtime never saw the 429");
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(3), "{waited:?}");
    let [decision] = reply.decisions() else { panic!("{:?}", reply.decisions()) };
    assert_eq!(decision.verdict(), Verdict::CooledDown, "the wait is in the decisions");
}

/// One huge hint heard by one runtime (a day, or 1e12 s, or a permanent failure's "try again in
/// 86400s") sets no cooldown in Redis: another runtime, as a new process would be, is not slowed.
#[tokio::test]
async fn one_huge_hint_leaves_another_runtime_unslowed() {
    let Some(url) = redis_url("one_huge_hint_leaves_another_runtime_unslowed") else { return };
    let day = Duration::from_secs(86_400);
    for first in [
        Scripted::http(429, "Too Many Requests").with_retry_after(day),
        Scripted::http(429, "Too Many Requests").with_retry_after(Duration::from_secs(1_000_000_000_000)),
        Scripted::http(400, "Bad request: try again in 86400s"),
    ] {
        let store = shared_store(&url, "huge").await;
        let other = Arc::new(RedisStore::connect(&url).await.unwrap().with_prefix(store.prefix().to_owned()));
        let key = store.cooldown_key(StoreKey::new("scripted", ""));
        let first = Runtime::builder(ScriptedProvider::new([first]).otherwise(Scripted::ok("fine")))
            .with_shared_store(store)
            .build()
            .unwrap();
        let second = Runtime::builder(ScriptedProvider::new([]).otherwise(Scripted::ok("fine")))
            .with_shared_store(other)
            .build()
            .unwrap();
        let error = first.exec("hears the hint").await.unwrap_err();
        assert_eq!(error.calls(), 1, "stops at once");
        assert_eq!(pttl(&url, &key).await, -2, "no cooldown key");
        let start = Instant::now();
        let reply = second.exec("comes next").await.unwrap();
        assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
        assert!(reply.decisions().is_empty(), "{:?}", reply.decisions());
    }
}

#[test]
fn redis_down_means_local_state_and_one_warning_never_a_hang() {
    let (guard, captured) = capture(tracing::Level::INFO);
    {
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        tokio.block_on(async {
            // Nothing listens on port 9 of the loopback address.
            let store = Arc::new(RedisStore::lazy("redis://127.0.0.1:9").unwrap());
            let provider = ScriptedProvider::new([
                Scripted::http(429, "slow").with_retry_after(Duration::from_millis(5)),
                Scripted::error("overloaded"),
                Scripted::ok("fine"),
            ])
            .otherwise(Scripted::ok("fine"));
            let runtime = Runtime::builder(provider).with_shared_store(store).build().unwrap();
            let start = Instant::now();
            for _ in 0..3 {
                tokio::time::timeout(Duration::from_secs(10), runtime.request("hi").policy(&FAST).send())
                    .await
                    .expect("never hangs")
                    .unwrap();
            }
            assert!(start.elapsed() < Duration::from_secs(5));
            // This process's window did the work: the floor of 100, plus 3 successes, less 2 retries.
            assert_eq!(runtime.retry_quota_left(), Some(101));
        });
    }
    drop(guard);
    let log = captured.text();
    assert_eq!(log.matches("shared retry store unavailable").count(), 1, "{log}");
}

/// A store that counts the operations the runtime asks of it: to a Redis that never answers while
/// `answering` is false, and answered at once (nothing shared, nothing cooling down) once it is true.
struct Counting {
    silent: RedisStore,
    answering: AtomicBool,
    operations: AtomicUsize,
}

impl Counting {
    /// Counts one operation; `true` when it is to be answered.
    fn ask(&self) -> bool {
        self.operations.fetch_add(1, Ordering::Relaxed);
        self.answering.load(Ordering::Relaxed)
    }
}

impl SharedStore for Counting {
    fn deposit<'a>(&'a self, scope: &'a str, quota: &'a RetryQuota) -> StoreFuture<'a, ()> {
        if self.ask() { Box::pin(async { Ok(()) }) } else { self.silent.deposit(scope, quota) }
    }

    fn try_withdraw<'a>(&'a self, scope: &'a str, quota: &'a RetryQuota) -> StoreFuture<'a, Withdrawal> {
        if self.ask() {
            Box::pin(async { Ok(Withdrawal { granted: true, successes: 0, retries: 0 }) })
        } else {
            self.silent.try_withdraw(scope, quota)
        }
    }

    fn cooldown_until<'a>(&'a self, key: StoreKey<'a>) -> StoreFuture<'a, Option<SystemTime>> {
        if self.ask() { Box::pin(async { Ok(None) }) } else { self.silent.cooldown_until(key) }
    }

    fn extend_cooldown<'a>(&'a self, key: StoreKey<'a>, until: SystemTime) -> StoreFuture<'a, ()> {
        if self.ask() { Box::pin(async { Ok(()) }) } else { self.silent.extend_cooldown(key, until) }
    }

    fn offline_backoff(&self) -> Duration {
        self.silent.offline_backoff()
    }
}

/// A Redis that accepts and never answers costs one exec its timeout per back-off period, not
/// every exec: after the first timeout the runtime goes local, asks again once the back-off has
/// passed, and warns once when the store fails and once when it answers again. No Redis needed.
#[tokio::test(start_paused = true)]
async fn a_silent_store_is_asked_once_per_backoff_and_warned_about_at_failure_and_recovery() {
    let (_guard, captured) = capture(tracing::Level::INFO);
    let server = SilentServer::start().await.unwrap();
    let backoff = Duration::from_secs(10);
    let silent = RedisStore::lazy(&server.url()).unwrap().with_offline_backoff(backoff);
    assert_eq!(silent.offline_backoff(), backoff);
    let store = Arc::new(Counting { silent, answering: AtomicBool::new(false), operations: AtomicUsize::new(0) });
    let runtime = Runtime::builder(ScriptedProvider::new([]).otherwise(Scripted::ok("fine")))
        .with_shared_store(Arc::clone(&store) as Arc<dyn SharedStore>)
        .build()
        .unwrap();
    let execs = |count: usize| {
        let runtime = runtime.clone();
        async move {
            let start = tokio::time::Instant::now();
            for _ in 0..count {
                runtime.exec("hi").await.unwrap();
            }
            start.elapsed()
        }
    };

    let took = execs(100).await;
    assert_eq!(store.operations.load(Ordering::Relaxed), 1, "the first exec's cooldown read, then local");
    assert_eq!(took, RedisStore::DEFAULT_TIMEOUT, "one timeout for 100 execs, not 100");
    assert!(server.connections() >= 1, "the store did reach the silent server");

    tokio::time::advance(backoff).await;
    // 100 at once: one asks the store again, the others stay local meanwhile.
    let concurrent: Vec<_> = (0..100).map(|_| tokio::spawn(execs(1))).collect();
    for exec in concurrent {
        exec.await.unwrap();
    }
    assert_eq!(store.operations.load(Ordering::Relaxed), 2, "one more try per back-off period");

    store.answering.store(true, Ordering::Relaxed);
    execs(100).await;
    assert_eq!(store.operations.load(Ordering::Relaxed), 2, "not asked again within the back-off");
    tokio::time::advance(backoff).await;
    execs(100).await;
    // Each exec reads the cooldown and deposits its success: shared again.
    assert_eq!(store.operations.load(Ordering::Relaxed), 2 + 200);

    let log = captured.text();
    assert_eq!(log.matches("shared retry store unavailable").count(), 1, "{log}");
    assert!(log.contains("timed out after 250 ms"), "{log}");
    assert_eq!(log.matches("shared retry store answering again").count(), 1, "{log}");
}

/// The circuit breaker of a target is the fleet's: one runtime's failures open the primary's
/// breaker in Redis (its key is the scope and the model, the same in both), and another runtime,
/// as another process would be, then skips the primary without a request of its own.
#[tokio::test]
async fn a_breaker_opened_by_one_runtime_makes_the_other_skip_the_primary_without_a_request() {
    let Some(url) = redis_url("a_breaker_opened_by_one_runtime_makes_the_other_skip_the_primary_without_a_request")
    else {
        return;
    };
    let store = shared_store(&url, "breaker").await;
    let other = Arc::new(RedisStore::connect(&url).await.unwrap().with_prefix(store.prefix().to_owned()));
    // 30 s open: far longer than this test runs on the Redis server's clock.
    let settings = BreakerSettings::new(50, 3, Duration::from_secs(10), Duration::from_secs(30)).unwrap();
    let down = || ScriptedProvider::new([]).otherwise(Scripted::http(503, "Service Unavailable")).with_model("primary");
    let healthy = || ScriptedProvider::new([]).otherwise(Scripted::ok("from the secondary")).with_model("secondary");
    let runtime = |primary: &ScriptedProvider, secondary: &ScriptedProvider, store: Arc<RedisStore>| {
        Runtime::builder(primary.clone())
            .with_fallback(secondary.clone())
            .with_breaker(settings)
            .with_shared_store(store)
            .build()
            .unwrap()
    };
    let (first_primary, first_secondary, second_primary, second_secondary) = (down(), healthy(), down(), healthy());
    let first = runtime(&first_primary, &first_secondary, store);
    let second = runtime(&second_primary, &second_secondary, other);

    // Three failures of three calls open it: layer 1 stops retrying the primary, the secondary
    // answers.
    let reply = first.request("opens it").policy(&FAST).send().await.unwrap();
    assert_eq!(reply.target(), Some("scripted/secondary"));
    assert_eq!((first_primary.calls(), first_secondary.calls()), (3, 1));
    assert!(matches!(first.targets()[0].breaker, Some(BreakerState::Open { .. })), "{:?}", first.targets());

    let reply = second.request("skips it").policy(&FAST).send().await.unwrap();
    assert_eq!(reply.target(), Some("scripted/secondary"));
    assert_eq!(
        (second_primary.calls(), second_secondary.calls()),
        (0, 1),
        "the other runtime's primary saw no request"
    );
    let moved: Vec<_> = reply.decisions().iter().filter(|d| d.verdict() == Verdict::Fallback).collect();
    let [moved] = moved[..] else { panic!("{:?}", reply.decisions()) };
    let Why::Fallback(fallback) = &moved.reason() else { panic!("{:?}", moved.reason()) };
    let MoveReason::BreakerOpen(BreakerState::Open { opened, .. }) = fallback.because else {
        panic!("{:?}", fallback.because)
    };
    assert_eq!((opened.failures, opened.calls), (3, 3), "the first runtime's failures opened it: {moved:?}");
    assert_eq!(first_primary.calls(), 3, "and nobody called the primary since");
    assert!(
        matches!(second.targets()[0].breaker, Some(BreakerState::Open { .. })),
        "the other runtime reports the fleet's state: {:?}",
        second.targets()
    );
}

/// After the open period the fleet's breaker lets one probe through: the runtime whose call takes it
/// asks the primary, and the answer closes the breaker for the other runtime too, which calls the
/// primary again at once (its own breaker, open since it read the fleet's, follows the fleet's).
#[tokio::test]
async fn the_probe_one_runtime_sends_closes_the_fleets_breaker_for_the_other() {
    let Some(url) = redis_url("the_probe_one_runtime_sends_closes_the_fleets_breaker_for_the_other") else {
        return;
    };
    let store = shared_store(&url, "probe").await;
    let other = Arc::new(RedisStore::connect(&url).await.unwrap().with_prefix(store.prefix().to_owned()));
    // 30 s open: far longer than this test runs, so only the fleet's probe can close it.
    let settings = BreakerSettings::new(50, 3, Duration::from_secs(10), Duration::from_secs(30)).unwrap();
    let answers =
        |provider: ScriptedProvider| provider.otherwise(Scripted::ok("from the primary")).with_model("primary");
    let first_primary = answers(ScriptedProvider::new([
        Scripted::http(503, "Service Unavailable"),
        Scripted::http(503, "Service Unavailable"),
        Scripted::http(503, "Service Unavailable"),
    ]));
    let second_primary = answers(ScriptedProvider::new([]));
    let secondary = ScriptedProvider::new([]).otherwise(Scripted::ok("from the secondary")).with_model("secondary");
    let runtime = |primary: &ScriptedProvider, store: Arc<RedisStore>| {
        Runtime::builder(primary.clone())
            .with_fallback(secondary.clone())
            .with_breaker(settings)
            .with_shared_store(store)
            .build()
            .unwrap()
    };
    let (first, second) = (runtime(&first_primary, store.clone()), runtime(&second_primary, other));
    let primary = |runtime: &Runtime| runtime.targets()[0].breaker;

    assert_eq!(first.exec("opens it").await.unwrap().target(), Some("scripted/secondary"));
    assert_eq!(second.exec("skips it").await.unwrap().target(), Some("scripted/secondary"));
    assert_eq!((first_primary.calls(), second_primary.calls()), (3, 0));
    assert!(matches!(primary(&first), Some(BreakerState::Open { .. })), "{:?}", first.targets());

    // The open period ends (on the server's clock, made to now rather than waited for).
    let key = store.breaker_key(StoreKey::new("scripted/primary", "primary"));
    let mut raw = crate::support::raw(&url).await;
    let until = crate::support::server_ms(&url).await - 1;
    let _: () = redis::cmd("HSET").arg(&key).arg("until").arg(until).query_async(&mut raw).await.unwrap();

    let probe = second.exec("probes it").await.unwrap();
    assert_eq!((probe.target(), second_primary.calls()), (Some("scripted/primary"), 1), "the probe went");
    assert_eq!(primary(&second), Some(BreakerState::Closed));
    let after = first.exec("calls it again").await.unwrap();
    assert_eq!(
        (after.target(), first_primary.calls()),
        (Some("scripted/primary"), 4),
        "closed for the other runtime too, 30 s before its own open period would end"
    );
    assert_eq!(primary(&first), Some(BreakerState::Closed), "{:?}", first.targets());
}

/// The limits one runtime's answer stated pace the other's calls, which never saw a header: the
/// fleet has one pacer per key. 20 requests in 10 s, all used (a window the test's real time can
/// wait: the Redis server's clock cannot be paused): one call each half second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_runtimes_stated_limits_pace_the_others_calls() {
    use agentic_runtime::storm::pace::{Limit, LimitKind, RateLimits};
    let Some(url) = redis_url("one_runtimes_stated_limits_pace_the_others_calls") else { return };
    let limits = RateLimits::new().with(LimitKind::Requests, Limit::new(20, 0, Duration::from_secs(10)));
    let a = ScriptedProvider::new([Scripted::ok("first").with_rate_limits(limits)]).otherwise(Scripted::ok("a"));
    let b = ScriptedProvider::new([]).otherwise(Scripted::ok("b"));
    let (first, second) = two_runtimes(&url, "pace", RetryQuota::standard(), [&a, &b]).await;
    first.exec("warm").await.unwrap();
    // The bucket is empty: B's calls go one each 526 ms (20 used in 10 s may be 19 and a fraction,
    // as a rounded-down remaining allows: the longest window, 10.5 s), in turn, paced by what A heard.
    let started = Instant::now();
    let mut waits = Vec::new();
    for _ in 0..3 {
        let reply = second.exec("hi").await.unwrap();
        let paced: Vec<_> = reply.decisions().iter().filter(|d| d.verdict() == Verdict::Paced).collect();
        assert_eq!(paced.len(), 1, "{:?}", reply.decisions());
        waits.push(paced[0].delay().unwrap());
    }
    assert!(waits.iter().all(|wait| *wait <= Duration::from_millis(527)), "{waits:?}");
    assert!(waits[1..].iter().all(|wait| *wait >= Duration::from_millis(200)), "{waits:?}");
    assert!(started.elapsed() >= Duration::from_millis(1_000), "{:?}", started.elapsed());
    assert_eq!(b.calls(), 3);
}
