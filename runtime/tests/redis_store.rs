//! The Redis fleet store against a real Redis at `AGENTIC_REDIS_URL` (`.ci/run` starts one).
//! With `AGENTIC_SKIP_REDIS=1` the tests that need a server skip; without it, a missing URL or an
//! unreachable server fails them.
#![cfg(feature = "redis")]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentic_runtime::budget::redis::RedisStore;
use agentic_runtime::budget::store::SharedStore;

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

#[tokio::test]
async fn takes_until_empty_then_refuses() {
    let Some((store, _)) = store("takes_until_empty_then_refuses").await else {
        return;
    };
    assert_eq!(store.tokens(SCOPE, 20).await.unwrap(), 20, "missing is full");
    for left in [15, 10, 5, 0] {
        assert!(store.try_take(SCOPE, 5, 20).await.unwrap());
        assert_eq!(store.tokens(SCOPE, 20).await.unwrap(), left);
    }
    assert!(!store.try_take(SCOPE, 5, 20).await.unwrap(), "empty");
    assert!(!store.try_take(SCOPE, 1, 20).await.unwrap(), "still empty");
    assert_eq!(store.tokens(SCOPE, 20).await.unwrap(), 0, "a refusal takes nothing");
    assert!(store.try_take(SCOPE, 0, 20).await.unwrap(), "a free take");

    // A cost above what is left is refused without taking the rest.
    store.refund(SCOPE, 3, 20).await.unwrap();
    assert!(!store.try_take(SCOPE, 5, 20).await.unwrap());
    assert_eq!(store.tokens(SCOPE, 20).await.unwrap(), 3);
}

#[tokio::test]
async fn refunds_never_exceed_capacity() {
    let Some((store, url)) = store("refunds_never_exceed_capacity").await else {
        return;
    };
    store.refund(SCOPE, 7, 20).await.unwrap();
    assert_eq!(store.tokens(SCOPE, 20).await.unwrap(), 20, "a refund to a full bucket");

    assert!(store.try_take(SCOPE, 10, 20).await.unwrap());
    store.refund(SCOPE, 4, 20).await.unwrap();
    assert_eq!(store.tokens(SCOPE, 20).await.unwrap(), 14);
    store.refund(SCOPE, 1_000, 20).await.unwrap();
    assert_eq!(store.tokens(SCOPE, 20).await.unwrap(), 20);

    // Full again: exactly capacity / cost takes go through.
    let mut taken = 0;
    while store.try_take(SCOPE, 5, 20).await.unwrap() {
        taken += 1;
        assert!(taken <= 4, "more than the capacity was taken");
    }
    assert_eq!(taken, 4);

    // A full bucket is not kept (missing means full); a partial one expires when idle.
    store.refund(SCOPE, 20, 20).await.unwrap();
    let mut raw = raw(&url).await;
    let exists: bool = redis::cmd("EXISTS").arg(store.bucket_key(SCOPE)).query_async(&mut raw).await.unwrap();
    assert!(!exists, "a full bucket is deleted");
    assert!(store.try_take(SCOPE, 5, 20).await.unwrap());
    let ttl_ms: i64 = redis::cmd("PTTL").arg(store.bucket_key(SCOPE)).query_async(&mut raw).await.unwrap();
    assert!(ttl_ms > 0 && ttl_ms <= 3_600_000, "bucket expiry {ttl_ms} ms");
}

#[tokio::test]
async fn the_bucket_shrinks_with_a_lower_capacity() {
    let Some((store, _)) = store("the_bucket_shrinks_with_a_lower_capacity").await else {
        return;
    };
    assert!(store.try_take(SCOPE, 1, 100).await.unwrap());
    assert_eq!(store.tokens(SCOPE, 100).await.unwrap(), 99);
    assert_eq!(store.tokens(SCOPE, 10).await.unwrap(), 10);
    assert!(store.try_take(SCOPE, 10, 10).await.unwrap());
    assert!(!store.try_take(SCOPE, 1, 10).await.unwrap());
}

#[tokio::test]
async fn two_processes_share_the_bucket_and_the_cooldown() {
    let Some((first, url)) = store("two_processes_share_the_bucket_and_the_cooldown").await else {
        return;
    };
    let second = other_process(&url, &first).await;

    assert!(first.try_take(SCOPE, 30, 50).await.unwrap());
    assert_eq!(second.tokens(SCOPE, 50).await.unwrap(), 20);
    assert!(second.try_take(SCOPE, 20, 50).await.unwrap());
    assert!(!first.try_take(SCOPE, 1, 50).await.unwrap(), "emptied by the other");
    first.refund(SCOPE, 5, 50).await.unwrap();
    assert!(second.try_take(SCOPE, 5, 50).await.unwrap(), "refunded by the other");

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
async fn fifty_concurrent_takes_are_atomic() {
    let Some((first, url)) = store("fifty_concurrent_takes_are_atomic").await else {
        return;
    };
    let second = other_process(&url, &first).await;
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let store = if i % 2 == 0 { first.clone() } else { second.clone() };
            tokio::spawn(async move { store.try_take(SCOPE, 5, 100).await.unwrap() })
        })
        .collect();
    let mut granted = 0;
    for task in tasks {
        granted += u32::from(task.await.unwrap());
    }
    assert_eq!(granted, 100 / 5);
    assert_eq!(first.tokens(SCOPE, 100).await.unwrap(), 0);
}

#[tokio::test]
async fn scopes_and_prefixes_are_independent() {
    let Some((store, url)) = store("scopes_and_prefixes_are_independent").await else {
        return;
    };
    let other_fleet = other_process(&url, &store).await.with_prefix(format!("{}-other", store.prefix()));

    assert!(store.try_take("openai:aaaa", 10, 10).await.unwrap());
    assert!(!store.try_take("openai:aaaa", 1, 10).await.unwrap());
    assert!(store.try_take("openai:bbbb", 10, 10).await.unwrap(), "another key");
    assert!(store.try_take("anthropic:aaaa", 10, 10).await.unwrap(), "another provider");
    assert!(other_fleet.try_take("openai:aaaa", 10, 10).await.unwrap(), "another prefix");

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
    let take = tokio::time::timeout(guard, store.try_take(SCOPE, 5, 500)).await.expect("try_take hung");
    assert!(take.is_err(), "{take:?}");
    let refund = tokio::time::timeout(guard, store.refund(SCOPE, 1, 500)).await.expect("refund hung");
    assert!(refund.is_err(), "{refund:?}");
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
    // Accepts connections (the kernel does, into the backlog) and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let store = RedisStore::lazy(&url).unwrap().with_timeout(Duration::from_millis(200));
    let take =
        tokio::time::timeout(Duration::from_secs(5), store.try_take(SCOPE, 5, 500)).await.expect("try_take hung");
    let err = take.expect_err("no answer");
    assert!(err.to_string().contains("timed out after 200 ms"), "{err}");

    let connected =
        tokio::time::timeout(Duration::from_secs(5), RedisStore::connect(&url)).await.expect("connect hung");
    let err = connected.expect_err("no answer");
    assert!(err.to_string().contains("timed out"), "{err}");
    drop(listener);
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
    assert!(down.try_take(SCOPE, 1, 10).await.is_err());
    assert!(down.try_take(SCOPE, 1, 10).await.is_err(), "tries again");

    let store = RedisStore::lazy(&url)
        .unwrap()
        .with_prefix(format!("agentic-test:a_store_made_while_redis_is_down_connects_later:{}", now_ms()))
        .with_timeout(Duration::from_secs(2));
    assert!(!format!("{store:?}").contains("connected: true"));
    assert!(store.try_take(SCOPE, 1, 10).await.unwrap());
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
    assert_eq!(store.bucket_key(SCOPE), "agentic:bucket:openai:3f9a0c");
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
    assert!(store.try_take(SCOPE, 1, 10).await.unwrap());

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
        match store.try_take(SCOPE, 1, 10).await {
            Ok(took) => taken += u32::from(took),
            Err(err) => {
                failures += 1;
                assert!(failures <= 1, "not connected again: {err}");
            }
        }
    }
    assert_eq!(store.tokens(SCOPE, 10).await.unwrap(), 7);
}
