//! The Redis fleet store against a real Redis at `AGENTIC_REDIS_URL` (`.ci/run` starts one).
//! With `AGENTIC_SKIP_REDIS=1` the tests that need a server skip; without it, a missing URL or an
//! unreachable server fails them.
#![cfg(feature = "redis")]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentic_runtime::budget::RetryQuota;
use agentic_runtime::budget::redis::RedisStore;
use agentic_runtime::budget::store::{SharedStore, Withdrawal};

const HOW_TO_START: &str = "start one with `redis-server --port 6390 --save '' --appendonly no` \
     and set AGENTIC_REDIS_URL=redis://127.0.0.1:6390 (`.ci/run` does this), or set \
     AGENTIC_SKIP_REDIS=1 to skip the tests that need it";

/// The URL of the test server, or `None` (after saying so) when the tests are to skip.
fn redis_url(test: &str) -> Option<String> {
    if std::env::var("AGENTIC_SKIP_REDIS").is_ok_and(|skip| skip == "1") {
        println!("skipping {test}: AGENTIC_SKIP_REDIS=1");
        return None;
    }
    match std::env::var("AGENTIC_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => panic!("{test} needs a Redis server and AGENTIC_REDIS_URL is not set: {HOW_TO_START}"),
    }
}

/// A store on the test server with a prefix of its own, so tests never see each other's keys.
async fn store(test: &str) -> Option<(RedisStore, String)> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let url = redis_url(test)?;
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    let prefix = format!("agentic-test:{test}:{}:{nanos}:{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let store = RedisStore::connect(&url)
        .await
        .unwrap_or_else(|err| panic!("{test} cannot reach Redis at {url}: {err}; {HOW_TO_START}"))
        .with_prefix(prefix.clone())
        .with_timeout(Duration::from_secs(2));
    Some((store, url))
}

/// A second store on the same server and prefix, as another process would have.
async fn other_process(url: &str, first: &RedisStore) -> RedisStore {
    RedisStore::connect(url).await.unwrap().with_prefix(first.prefix()).with_timeout(first.timeout())
}

/// A raw connection, to look at keys as Redis holds them.
async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap()
}

fn at_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

fn now_ms() -> u64 {
    u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// An address on which nothing listens: a port the OS just handed out and took back.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

const SCOPE: &str = "openai:3f9a0c";

/// Only what successes pay for: no floor.
const NO_FLOOR: RetryQuota = RetryQuota::standard().with_min_retries(0);

/// The slot of now on the server's clock, for a window of `quota`.
async fn server_slot(url: &str, quota: &RetryQuota) -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut raw(url).await).await.unwrap();
    let slot_ms = u64::try_from(quota.window().as_millis()).unwrap() / 10;
    (secs * 1000 + micros / 1000) / slot_ms
}

#[tokio::test]
async fn withdraws_up_to_the_floor_then_refuses_until_a_success_pays() {
    let Some((store, _)) = store("withdraws_up_to_the_floor_then_refuses_until_a_success_pays").await else {
        return;
    };
    // A floor of 10 retries in the window.
    let quota = RetryQuota::standard().with_min_retries(10);
    let empty = Withdrawal { granted: true, successes: 0, retries: 0 };
    assert_eq!(store.counts(SCOPE, &quota).await.unwrap(), empty, "a missing budget is an empty window");
    for retries in 0..10 {
        let withdrawal = store.try_withdraw(SCOPE, &quota).await.unwrap();
        assert_eq!(withdrawal, Withdrawal { granted: true, successes: 0, retries });
    }
    let refused = store.try_withdraw(SCOPE, &quota).await.unwrap();
    assert_eq!(refused, Withdrawal { granted: false, successes: 0, retries: 10 });
    assert!(!store.try_withdraw(SCOPE, &quota).await.unwrap().granted, "a refusal counts nothing");

    store.deposit(SCOPE, &quota).await.unwrap();
    assert_eq!(
        store.try_withdraw(SCOPE, &quota).await.unwrap(),
        Withdrawal { granted: true, successes: 1, retries: 10 }
    );
    assert!(!store.try_withdraw(SCOPE, &quota).await.unwrap().granted);
    assert_eq!(store.counts(SCOPE, &quota).await.unwrap(), Withdrawal { granted: false, successes: 1, retries: 11 });
}

#[tokio::test]
async fn successes_pay_at_the_quotas_ratio() {
    let Some((store, _)) = store("successes_pay_at_the_quotas_ratio").await else {
        return;
    };
    let half = NO_FLOOR.with_retry_percent(50);
    assert!(!store.try_withdraw(SCOPE, &half).await.unwrap().granted, "no floor, no success: no retry");
    for _ in 0..4 {
        store.deposit(SCOPE, &half).await.unwrap();
    }
    assert!(store.try_withdraw(SCOPE, &half).await.unwrap().granted);
    assert!(store.try_withdraw(SCOPE, &half).await.unwrap().granted);
    assert!(!store.try_withdraw(SCOPE, &half).await.unwrap().granted, "4 successes pay for 2 retries at 50 %");
}

#[tokio::test]
async fn slots_that_left_the_window_are_forgotten_and_deleted() {
    let Some((store, url)) = store("slots_that_left_the_window_are_forgotten_and_deleted").await else {
        return;
    };
    let key = store.budget_key(SCOPE);
    let slot = server_slot(&url, &NO_FLOOR).await;
    let mut raw = raw(&url).await;
    // Written as an earlier window would have left them: 1 000 successes and retries, 10 and more
    // slots ago (out of the window), and 3 successes a few slots ago (in it).
    for old in [slot - 10, slot - 11, slot - 500] {
        let _: () = redis::cmd("HSET")
            .arg(&key)
            .arg(format!("s:{old}"))
            .arg(1_000)
            .arg(format!("r:{old}"))
            .arg(1_000)
            .query_async(&mut raw)
            .await
            .unwrap();
    }
    let _: () = redis::cmd("HSET").arg(&key).arg(format!("s:{}", slot - 3)).arg(3).query_async(&mut raw).await.unwrap();

    let counts = store.counts(SCOPE, &NO_FLOOR).await.unwrap();
    assert_eq!((counts.successes, counts.retries), (3, 0));
    let fields: Vec<String> = redis::cmd("HKEYS").arg(&key).query_async(&mut raw).await.unwrap();
    assert_eq!(fields, [format!("s:{}", slot - 3)], "the old slots are deleted");

    // A write keeps the budget for two windows, then it expires (an empty window).
    store.deposit(SCOPE, &NO_FLOOR).await.unwrap();
    let ttl_ms: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut raw).await.unwrap();
    assert!(ttl_ms > 119_000 && ttl_ms <= 120_000, "budget expiry {ttl_ms} ms");
}

#[tokio::test]
async fn two_processes_share_the_budget_and_the_cooldown() {
    let Some((first, url)) = store("two_processes_share_the_budget_and_the_cooldown").await else {
        return;
    };
    let second = other_process(&url, &first).await;

    for _ in 0..3 {
        first.deposit(SCOPE, &NO_FLOOR).await.unwrap();
    }
    for _ in 0..3 {
        assert!(second.try_withdraw(SCOPE, &NO_FLOOR).await.unwrap().granted, "paid by the other's successes");
    }
    assert_eq!(
        first.try_withdraw(SCOPE, &NO_FLOOR).await.unwrap(),
        Withdrawal { granted: false, successes: 3, retries: 3 }
    );

    assert_eq!(second.cooldown_until(SCOPE).await.unwrap(), None);
    let until = at_ms(now_ms() + 60_000);
    first.extend_cooldown(SCOPE, until).await.unwrap();
    assert_eq!(second.cooldown_until(SCOPE).await.unwrap(), Some(until));
    assert_eq!(first.cooldown_until(SCOPE).await.unwrap(), Some(until));
}

#[tokio::test]
async fn extend_cooldown_never_shortens() {
    let Some((store, url)) = store("extend_cooldown_never_shortens").await else {
        return;
    };
    let now = now_ms();
    let long = at_ms(now + 60_000);
    store.extend_cooldown(SCOPE, long).await.unwrap();
    store.extend_cooldown(SCOPE, at_ms(now + 10_000)).await.unwrap();
    assert_eq!(store.cooldown_until(SCOPE).await.unwrap(), Some(long), "kept");

    let longer = at_ms(now + 120_000);
    store.extend_cooldown(SCOPE, longer).await.unwrap();
    assert_eq!(store.cooldown_until(SCOPE).await.unwrap(), Some(longer), "extended");

    // The key expires when the cooldown ends.
    let mut raw = raw(&url).await;
    let ttl_ms: i64 = redis::cmd("PTTL").arg(store.cooldown_key(SCOPE)).query_async(&mut raw).await.unwrap();
    assert!(ttl_ms > 100_000 && ttl_ms <= 120_000, "cooldown expiry in {ttl_ms} ms, not at its end");

    // A sub-millisecond end is rounded up, never down.
    let other = "anthropic:77aa";
    let odd = at_ms(now + 30_000) + Duration::from_micros(300);
    store.extend_cooldown(other, odd).await.unwrap();
    assert_eq!(store.cooldown_until(other).await.unwrap(), Some(at_ms(now + 30_001)));

    // An end in the past sets nothing.
    let past = "gemini:0001";
    store.extend_cooldown(past, at_ms(now - 1_000)).await.unwrap();
    assert_eq!(store.cooldown_until(past).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_withdrawals_are_atomic() {
    let Some((first, url)) = store("fifty_concurrent_withdrawals_are_atomic").await else {
        return;
    };
    let second = other_process(&url, &first).await;
    for _ in 0..20 {
        first.deposit(SCOPE, &NO_FLOOR).await.unwrap();
    }
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let store = if i % 2 == 0 { first.clone() } else { second.clone() };
            tokio::spawn(async move { store.try_withdraw(SCOPE, &NO_FLOOR).await.unwrap().granted })
        })
        .collect();
    let mut granted = 0;
    for task in tasks {
        granted += u32::from(task.await.unwrap());
    }
    assert_eq!(granted, 20, "one retry per success, never more");
    assert_eq!(first.counts(SCOPE, &NO_FLOOR).await.unwrap().retries, 20);
}

#[tokio::test]
async fn scopes_and_prefixes_are_independent() {
    let Some((store, url)) = store("scopes_and_prefixes_are_independent").await else {
        return;
    };
    let other_fleet = other_process(&url, &store).await.with_prefix(format!("{}-other", store.prefix()));
    let one = RetryQuota::standard().with_min_retries(0).with_retry_percent(100);

    store.deposit("openai:aaaa", &one).await.unwrap();
    assert!(store.try_withdraw("openai:aaaa", &one).await.unwrap().granted);
    assert!(!store.try_withdraw("openai:bbbb", &one).await.unwrap().granted, "another key");
    assert!(!store.try_withdraw("anthropic:aaaa", &one).await.unwrap().granted, "another provider");
    assert!(!other_fleet.try_withdraw("openai:aaaa", &one).await.unwrap().granted, "another prefix");

    store.extend_cooldown("openai:aaaa", at_ms(now_ms() + 60_000)).await.unwrap();
    assert_eq!(store.cooldown_until("openai:bbbb").await.unwrap(), None);
    assert_eq!(other_fleet.cooldown_until("openai:aaaa").await.unwrap(), None);
}

#[tokio::test]
async fn an_unreachable_redis_fails_within_the_timeout() {
    let url = format!("redis://127.0.0.1:{}", closed_port());
    let guard = Duration::from_secs(5);

    let connected = tokio::time::timeout(guard, RedisStore::connect(&url)).await.expect("connect hung");
    let err = connected.expect_err("nothing listens there");
    assert!(err.0.contains(&url), "{err}");

    let store = RedisStore::lazy(&url).unwrap().with_timeout(Duration::from_millis(500));
    let quota = RetryQuota::standard();
    let take = tokio::time::timeout(guard, store.try_withdraw(SCOPE, &quota)).await.expect("try_withdraw hung");
    assert!(take.is_err(), "{take:?}");
    let deposit = tokio::time::timeout(guard, store.deposit(SCOPE, &quota)).await.expect("deposit hung");
    assert!(deposit.is_err(), "{deposit:?}");
    let cooldown = tokio::time::timeout(guard, store.cooldown_until(SCOPE)).await.expect("cooldown_until hung");
    assert!(cooldown.is_err(), "{cooldown:?}");
    let extend = tokio::time::timeout(guard, store.extend_cooldown(SCOPE, at_ms(now_ms() + 60_000)))
        .await
        .expect("extend_cooldown hung");
    assert!(extend.is_err(), "{extend:?}");
}

// Paused time: nothing ever answers, so the runtime goes idle and the clock jumps to each timeout.
#[tokio::test(start_paused = true)]
async fn a_silent_server_times_out() {
    // Accepts connections, reads what is sent, and never answers.
    let server = agentic_chaos::SilentServer::start().await.unwrap();
    let url = server.url();
    let store = RedisStore::lazy(&url).unwrap().with_timeout(Duration::from_millis(200));
    let quota = RetryQuota::standard();
    let take = tokio::time::timeout(Duration::from_secs(5), store.try_withdraw(SCOPE, &quota))
        .await
        .expect("try_withdraw hung");
    let err = take.expect_err("no answer");
    assert!(err.to_string().contains("timed out after 200 ms"), "{err}");

    let connected =
        tokio::time::timeout(Duration::from_secs(5), RedisStore::connect(&url)).await.expect("connect hung");
    let err = connected.expect_err("no answer");
    assert!(err.to_string().contains("timed out"), "{err}");
    assert!(server.connections() >= 1, "the store reached the server");
}

#[tokio::test]
async fn a_store_made_while_redis_is_down_connects_later() {
    let Some(url) = redis_url("a_store_made_while_redis_is_down_connects_later") else {
        return;
    };
    // Down: a lazy store errs, then the same store works against a live server (its
    // connection is made on first success). Two stores stand for "before" and "after", as the
    // address of the test server cannot move.
    let down = RedisStore::lazy(&format!("redis://127.0.0.1:{}", closed_port())).unwrap();
    let quota = RetryQuota::standard();
    assert!(down.try_withdraw(SCOPE, &quota).await.is_err());
    assert!(down.try_withdraw(SCOPE, &quota).await.is_err(), "tries again");

    let store = RedisStore::lazy(&url)
        .unwrap()
        .with_prefix(format!("agentic-test:a_store_made_while_redis_is_down_connects_later:{}", now_ms()))
        .with_timeout(Duration::from_secs(2));
    assert!(!format!("{store:?}").contains("connected: true"));
    assert!(store.try_withdraw(SCOPE, &quota).await.unwrap().granted);
    assert!(format!("{store:?}").contains("connected: true"));
}

#[test]
fn debug_never_shows_a_password() {
    let store = RedisStore::lazy("redis://:hunter2@127.0.0.1:6379/0").unwrap();
    let shown = format!("{store:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("redis://:***@127.0.0.1:6379/0"), "{shown}");

    let store = RedisStore::lazy("redis://worker:hunter2@cache.internal:6380").unwrap();
    let shown = format!("{store:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("worker:***@cache.internal"), "{shown}");
}

#[test]
fn rejects_what_is_not_a_redis_url() {
    let err = RedisStore::lazy("http://:hunter2@127.0.0.1:6379").unwrap_err();
    assert!(err.0.contains("invalid URL"), "{err}");
    assert!(!err.0.contains("hunter2"), "{err}");
}

#[test]
fn defaults() {
    let store = RedisStore::lazy("redis://127.0.0.1:6379").unwrap();
    assert_eq!(store.prefix(), "agentic");
    assert_eq!(store.timeout(), Duration::from_millis(250));
    assert_eq!(store.budget_key(SCOPE), "agentic:budget:openai:3f9a0c");
    assert_eq!(store.cooldown_key(SCOPE), "agentic:cooldown:openai:3f9a0c");
}

#[tokio::test]
async fn a_dropped_connection_is_made_again() {
    let Some(url) = redis_url("a_dropped_connection_is_made_again") else {
        return;
    };
    // A database of its own, so its connections can be told from the other tests'.
    let url_db = format!("{}/9", url.trim_end_matches('/'));
    let store = RedisStore::connect(&url_db)
        .await
        .unwrap()
        .with_prefix(format!("agentic-test:a_dropped_connection_is_made_again:{}", now_ms()))
        .with_timeout(Duration::from_secs(2));
    let quota = RetryQuota::standard();
    assert!(store.try_withdraw(SCOPE, &quota).await.unwrap().granted);

    let mut raw = raw(&url).await;
    let clients: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut raw).await.unwrap();
    let ids: Vec<&str> = clients
        .lines()
        .filter(|line| line.split(' ').any(|field| field == "db=9"))
        .filter_map(|line| line.split(' ').find_map(|field| field.strip_prefix("id=")))
        .collect();
    assert!(!ids.is_empty(), "the store's connection is not listed: {clients}");
    for id in ids {
        let _: i64 = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).query_async(&mut raw).await.unwrap();
    }

    // The call that finds the connection dead may fail; the next ones go through.
    let mut failures = 0;
    let mut taken = 0;
    while taken < 2 {
        match store.try_withdraw(SCOPE, &quota).await {
            Ok(withdrawal) => taken += u32::from(withdrawal.granted),
            Err(err) => {
                failures += 1;
                assert!(failures <= 1, "not connected again: {err}");
            }
        }
    }
    assert_eq!(store.counts(SCOPE, &quota).await.unwrap().retries, 3);
}
