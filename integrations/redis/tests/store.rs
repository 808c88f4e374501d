//! The Redis fleet store against a real Redis at `AGENTIC_REDIS_URL` (`.ci/run` starts one).
//! With `AGENTIC_SKIP_REDIS=1` the tests that need a server skip; without it, a missing URL or an
//! unreachable server fails them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentic_redis::RedisStore;
use agentic_runtime::storm::store::{SharedStore, StoreFuture, StoreKey, Withdrawal};
use agentic_runtime::storm::{
    BreakerSettings, BreakerState, CallOutcome, Opened, ProbeToken, Recorded, RetryQuota, SharedAdmission,
};

use crate::support::{HOW_TO_START, prefix, pttl, raw, redis_url};

/// A store on the test server with a prefix of its own, so tests never see each other's keys.
async fn store(test: &str) -> Option<(RedisStore, String)> {
    let url = redis_url(test)?;
    let prefix = prefix(test);
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
/// A target of [`SCOPE`]: its cooldown.
const TARGET: StoreKey<'static> = StoreKey::new(SCOPE, "gpt-4o");

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

    assert_eq!(second.cooldown_until(TARGET).await.unwrap(), None);
    let until = at_ms(now_ms() + 60_000);
    first.extend_cooldown(TARGET, until).await.unwrap();
    assert_eq!(second.cooldown_until(TARGET).await.unwrap(), Some(until));
    assert_eq!(first.cooldown_until(TARGET).await.unwrap(), Some(until));
}

#[tokio::test]
async fn extend_cooldown_never_shortens() {
    let Some((store, url)) = store("extend_cooldown_never_shortens").await else {
        return;
    };
    let now = now_ms();
    let long = at_ms(now + 60_000);
    store.extend_cooldown(TARGET, long).await.unwrap();
    store.extend_cooldown(TARGET, at_ms(now + 10_000)).await.unwrap();
    assert_eq!(store.cooldown_until(TARGET).await.unwrap(), Some(long), "kept");

    let longer = at_ms(now + 120_000);
    store.extend_cooldown(TARGET, longer).await.unwrap();
    assert_eq!(store.cooldown_until(TARGET).await.unwrap(), Some(longer), "extended");

    // The key expires when the cooldown ends.
    let mut raw = raw(&url).await;
    let ttl_ms: i64 = redis::cmd("PTTL").arg(store.cooldown_key(TARGET)).query_async(&mut raw).await.unwrap();
    assert!(ttl_ms > 100_000 && ttl_ms <= 120_000, "cooldown expiry in {ttl_ms} ms, not at its end");

    // A sub-millisecond end is rounded up, never down.
    let other = StoreKey::new("anthropic:77aa", "claude");
    let odd = at_ms(now + 30_000) + Duration::from_micros(300);
    store.extend_cooldown(other, odd).await.unwrap();
    assert_eq!(store.cooldown_until(other).await.unwrap(), Some(at_ms(now + 30_001)));

    // An end in the past sets nothing.
    let past = StoreKey::new("gemini:0001", "gemini-2.5-flash");
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

    let (mini, big) = (StoreKey::new("openai:aaaa", "gpt-4o-mini"), StoreKey::new("openai:aaaa", "gpt-4o"));
    store.extend_cooldown(mini, at_ms(now_ms() + 60_000)).await.unwrap();
    assert!(store.cooldown_until(mini).await.unwrap().is_some());
    assert_eq!(store.cooldown_until(big).await.unwrap(), None, "another model of the key");
    assert_eq!(store.cooldown_until(StoreKey::new("openai:bbbb", "gpt-4o-mini")).await.unwrap(), None);
    assert_eq!(other_fleet.cooldown_until(mini).await.unwrap(), None);
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
    let cooldown = tokio::time::timeout(guard, store.cooldown_until(TARGET)).await.expect("cooldown_until hung");
    assert!(cooldown.is_err(), "{cooldown:?}");
    let extend = tokio::time::timeout(guard, store.extend_cooldown(TARGET, at_ms(now_ms() + 60_000)))
        .await
        .expect("extend_cooldown hung");
    assert!(extend.is_err(), "{extend:?}");
    let settings = BreakerSettings::standard();
    let admit = tokio::time::timeout(guard, store.breaker_admit(BREAKER, &settings, ProbeToken::random()))
        .await
        .expect("breaker_admit hung");
    assert!(admit.is_err(), "{admit:?}");
    let record = tokio::time::timeout(guard, store.breaker_record(BREAKER, CallOutcome::Failed, true, &settings))
        .await
        .expect("breaker_record hung");
    assert!(record.is_err(), "{record:?}");
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
    // Every key of a scope shares its hash tag, `{<scope>}`: one slot in Redis Cluster.
    assert_eq!(store.budget_key(SCOPE), "agentic:{openai:3f9a0c}:budget");
    assert_eq!(store.cooldown_key(TARGET), "agentic:{openai:3f9a0c}:cooldown:gpt-4o");
    assert_eq!(store.breaker_key(TARGET), "agentic:{openai:3f9a0c}:breaker:gpt-4o");
    assert_eq!(store.breaker_window_key(TARGET), "agentic:{openai:3f9a0c}:breaker-window:gpt-4o");
    assert_eq!(store.breaker_probe_key(TARGET), "agentic:{openai:3f9a0c}:breaker-probe:gpt-4o");
    assert_eq!(store.pace_key(TARGET), "agentic:{openai:3f9a0c}:pace:gpt-4o");
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

/// The breaker of one target, under the standard settings.
const BREAKER: StoreKey<'static> = StoreKey::new("openai:3f9a0c", "gpt-4o-mini");
const STANDARD: BreakerSettings = BreakerSettings::standard();

fn opened(failures: u64, calls: u64) -> Opened {
    Opened { failures, calls, window: STANDARD.window() }
}

/// Records `failures` failed calls in `store`'s breaker and returns the last change.
async fn fail(store: &RedisStore, failures: u32) -> Recorded {
    let mut last = Recorded::Unchanged;
    for _ in 0..failures {
        last = store.breaker_record(BREAKER, CallOutcome::Failed, true, &STANDARD).await.unwrap().unwrap();
    }
    last
}

/// Ends the open period of `store`'s breaker now, on the server's clock, as waiting it out would.
async fn end_open_period(url: &str, store: &RedisStore) {
    let mut raw = raw(url).await;
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut raw).await.unwrap();
    let now_ms = secs * 1000 + micros / 1000;
    let _: () = redis::cmd("HSET")
        .arg(store.breaker_key(BREAKER))
        .arg("until")
        .arg(now_ms - 1)
        .query_async(&mut raw)
        .await
        .unwrap();
}

/// The fields and counts of hash `key`.
async fn hget_all(url: &str, key: &str) -> Vec<(String, u64)> {
    redis::cmd("HGETALL").arg(key).query_async(&mut raw(url).await).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_share_one_breaker_one_opens_it_the_other_skips_one_probe_closes_it_for_both() {
    let Some((first, url)) =
        store("two_stores_share_one_breaker_one_opens_it_the_other_skips_one_probe_closes_it_for_both").await
    else {
        return;
    };
    let second = other_process(&url, &first).await;
    assert_eq!(
        second.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await.unwrap(),
        Some(SharedAdmission::Call)
    );

    // 19 failures of the first: not yet 20 calls. The 20th opens the fleet's breaker.
    assert_eq!(fail(&first, 19).await, Recorded::Unchanged);
    assert_eq!(fail(&first, 1).await, Recorded::Opened(opened(20, 20)));
    let Some(SharedAdmission::Skip(BreakerState::Open { left, opened: why })) =
        second.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await.unwrap()
    else {
        panic!("the second store's calls are skipped");
    };
    assert_eq!(why, opened(20, 20));
    assert!(left > Duration::from_secs(25) && left <= STANDARD.open_for(), "{left:?}");
    let state_ttl = pttl(&url, &first.breaker_key(BREAKER)).await;
    assert!(state_ttl > 75_000 && state_ttl <= 80_000, "kept two windows and two open periods: {state_ttl} ms");
    assert_eq!(pttl(&url, &first.breaker_window_key(BREAKER)).await, -2, "the window is emptied when it opens");
    // Late outcomes of calls let through before it opened change nothing.
    let late = second.breaker_record(BREAKER, CallOutcome::Answered, false, &STANDARD).await.unwrap();
    assert_eq!(late, Some(Recorded::Unchanged));

    end_open_period(&url, &first).await;
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let store = if i % 2 == 0 { first.clone() } else { second.clone() };
            tokio::spawn(async move {
                (i, store.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await.unwrap().unwrap())
            })
        })
        .collect();
    let mut probes = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            (i, SharedAdmission::Probe(why)) => {
                assert_eq!(why, opened(20, 20));
                probes.push(i);
            }
            (_, skipped) => {
                assert_eq!(skipped, SharedAdmission::Skip(BreakerState::HalfOpen { opened: opened(20, 20) }));
            }
        }
    }
    assert_eq!(probes.len(), 1, "one probe for the fleet: {probes:?}");
    let probe_ttl = pttl(&url, &first.breaker_probe_key(BREAKER)).await;
    assert!(probe_ttl > 25_000 && probe_ttl <= 30_000, "a lost probe is forgotten after the open period: {probe_ttl}");

    let prober = if probes[0] % 2 == 0 { &first } else { &second };
    // A call let through before it opened answers while the probe is out: it decides nothing.
    let stale = prober.breaker_record(BREAKER, CallOutcome::Answered, false, &STANDARD).await.unwrap();
    assert_eq!(stale, Some(Recorded::Unchanged));
    let closed = prober.breaker_record(BREAKER, CallOutcome::Answered, true, &STANDARD).await.unwrap();
    assert_eq!(closed, Some(Recorded::Closed));
    for key in [first.breaker_key(BREAKER), first.breaker_window_key(BREAKER), first.breaker_probe_key(BREAKER)] {
        assert_eq!(pttl(&url, &key).await, -2, "{key} is gone: closed, with an empty window");
    }
    assert_eq!(
        first.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await.unwrap(),
        Some(SharedAdmission::Call)
    );
    assert_eq!(
        second.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await.unwrap(),
        Some(SharedAdmission::Call)
    );
    // Closed, each call let through is counted in the window (as not failed while it is out).
    let admitted = hget_all(&url, &first.breaker_window_key(BREAKER)).await;
    assert_eq!(admitted.iter().filter(|(field, _)| field.starts_with("a:")).map(|(_, n)| n).sum::<u64>(), 2);
    // The failures that opened it are forgotten: 19 more do not open it again.
    assert_eq!(fail(&second, 19).await, Recorded::Unchanged);
}

#[tokio::test]
async fn a_failed_probe_opens_the_shared_breaker_for_another_period() {
    let Some((store, url)) = store("a_failed_probe_opens_the_shared_breaker_for_another_period").await else {
        return;
    };
    fail(&store, 20).await;
    end_open_period(&url, &store).await;
    assert_eq!(
        store.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await.unwrap(),
        Some(SharedAdmission::Probe(opened(20, 20)))
    );
    assert_eq!(fail(&store, 1).await, Recorded::Reopened(opened(20, 20)));
    let Some(SharedAdmission::Skip(BreakerState::Open { left, opened: why })) =
        store.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await.unwrap()
    else {
        panic!("open again");
    };
    assert_eq!(why, opened(20, 20), "for the reason it first opened");
    assert!(left > Duration::from_secs(25) && left <= STANDARD.open_for(), "{left:?}");
    assert_eq!(pttl(&url, &store.breaker_probe_key(BREAKER)).await, -2, "the next period's probe is free");
}

#[tokio::test]
async fn a_probe_that_never_reports_lets_another_go_when_its_key_expires() {
    let Some((store, url)) = store("a_probe_that_never_reports_lets_another_go_when_its_key_expires").await else {
        return;
    };
    let other = other_process(&url, &store).await;
    fail(&store, 20).await;
    end_open_period(&url, &store).await;
    assert!(matches!(
        store.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await.unwrap(),
        Some(SharedAdmission::Probe(_))
    ));
    let half_open = Some(SharedAdmission::Skip(BreakerState::HalfOpen { opened: opened(20, 20) }));
    assert_eq!(other.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await.unwrap(), half_open);
    // Its exec was dropped: the probe's key expires (made to now, not waited for).
    let _: () =
        redis::cmd("DEL").arg(store.breaker_probe_key(BREAKER)).query_async(&mut raw(&url).await).await.unwrap();
    assert_eq!(
        other.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await.unwrap(),
        Some(SharedAdmission::Probe(opened(20, 20)))
    );
    assert_eq!(store.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await.unwrap(), half_open);
}

#[tokio::test]
async fn a_shared_breaker_counts_on_the_servers_window_and_a_wobble_stays_closed() {
    let Some((store, url)) = store("a_shared_breaker_counts_on_the_servers_window_and_a_wobble_stays_closed").await
    else {
        return;
    };
    // 30 % of 100 calls fail: closed.
    for call in 0..100 {
        let outcome = if call % 10 < 3 { CallOutcome::Failed } else { CallOutcome::Answered };
        let recorded = store.breaker_record(BREAKER, outcome, true, &STANDARD).await.unwrap();
        assert_eq!(recorded, Some(Recorded::Unchanged), "call {call}");
    }
    assert_eq!(
        store.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await.unwrap(),
        Some(SharedAdmission::Call)
    );

    // Failures older than the window are forgotten (and deleted); those in it count.
    let key = store.breaker_window_key(BREAKER);
    let _: () = redis::cmd("DEL").arg(&key).query_async(&mut raw(&url).await).await.unwrap();
    let slot = server_slot(&url, &RetryQuota::standard().with_window(STANDARD.window())).await;
    let mut raw = raw(&url).await;
    for (field, count) in [(format!("f:{}", slot - 10), 1_000), (format!("f:{}", slot - 3), 18)] {
        let _: () = redis::cmd("HSET").arg(&key).arg(field).arg(count).query_async(&mut raw).await.unwrap();
    }
    assert_eq!(fail(&store, 1).await, Recorded::Unchanged, "19 failures in the window");
    let fields: Vec<String> = redis::cmd("HKEYS").arg(&key).query_async(&mut raw).await.unwrap();
    assert!(!fields.contains(&format!("f:{}", slot - 10)), "{fields:?}");
    let window_ttl = pttl(&url, &key).await;
    assert!(window_ttl > 75_000 && window_ttl <= 80_000, "{window_ttl} ms");
    assert_eq!(fail(&store, 1).await, Recorded::Opened(opened(20, 20)));
}

#[tokio::test]
async fn a_store_without_breaker_methods_keeps_no_breakers() {
    struct BudgetOnly;
    impl SharedStore for BudgetOnly {
        fn deposit<'a>(&'a self, _: &'a str, _: &'a RetryQuota) -> StoreFuture<'a, ()> {
            Box::pin(async { Ok(()) })
        }
        fn try_withdraw<'a>(&'a self, _: &'a str, _: &'a RetryQuota) -> StoreFuture<'a, Withdrawal> {
            Box::pin(async { Ok(Withdrawal { granted: true, successes: 0, retries: 0 }) })
        }
        fn cooldown_until<'a>(&'a self, _: StoreKey<'a>) -> StoreFuture<'a, Option<SystemTime>> {
            Box::pin(async { Ok(None) })
        }
        fn extend_cooldown<'a>(&'a self, _: StoreKey<'a>, _: SystemTime) -> StoreFuture<'a, ()> {
            Box::pin(async { Ok(()) })
        }
    }
    assert_eq!(BudgetOnly.breaker_admit(BREAKER, &STANDARD, ProbeToken::random()).await, Ok(None));
    assert_eq!(BudgetOnly.breaker_record(BREAKER, CallOutcome::Failed, true, &STANDARD).await, Ok(None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_given_back_lets_the_next_caller_of_the_fleet_probe_at_once() {
    let Some((first, url)) = store("a_probe_given_back_lets_the_next_caller_of_the_fleet_probe_at_once").await else {
        return;
    };
    let second = other_process(&url, &first).await;
    let (mine, theirs) = (ProbeToken::new(1), ProbeToken::new(2));
    assert_eq!(fail(&first, 20).await, Recorded::Opened(opened(20, 20)));
    end_open_period(&url, &first).await;
    assert_eq!(
        first.breaker_admit(BREAKER, &STANDARD, mine).await.unwrap(),
        Some(SharedAdmission::Probe(opened(20, 20)))
    );
    let half_open = Some(SharedAdmission::Skip(BreakerState::HalfOpen { opened: opened(20, 20) }));
    assert_eq!(second.breaker_admit(BREAKER, &STANDARD, theirs).await.unwrap(), half_open, "one probe in the fleet");
    // Another admission's token gives nothing back.
    second.breaker_release(BREAKER, theirs).await.unwrap();
    assert_eq!(second.breaker_admit(BREAKER, &STANDARD, theirs).await.unwrap(), half_open);
    // The first's probe never went (its exec was dropped): given back, the second probes at once.
    first.breaker_release(BREAKER, mine).await.unwrap();
    assert_eq!(
        second.breaker_admit(BREAKER, &STANDARD, theirs).await.unwrap(),
        Some(SharedAdmission::Probe(opened(20, 20)))
    );
    assert_eq!(first.breaker_admit(BREAKER, &STANDARD, mine).await.unwrap(), half_open);
    // Its answer closes the breaker for both.
    let closed = second.breaker_record(BREAKER, CallOutcome::Answered, true, &STANDARD).await.unwrap();
    assert_eq!(closed, Some(Recorded::Closed));
    assert_eq!(first.breaker_admit(BREAKER, &STANDARD, mine).await.unwrap(), Some(SharedAdmission::Call));
}

/// A probe taken for lost (its key expired after the open period) and taken again by another
/// caller: the first caller's late give-back leaves the second's probe alone (compare and delete).
/// Before, it deleted the key, and a third caller probed while the second's probe was out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_give_back_of_a_lost_probe_leaves_the_next_callers_probe_alone() {
    let Some((first, url)) = store("a_late_give_back_of_a_lost_probe_leaves_the_next_callers_probe_alone").await else {
        return;
    };
    let (second, third) = (other_process(&url, &first).await, other_process(&url, &first).await);
    let (lost, next, late) = (ProbeToken::new(11), ProbeToken::new(12), ProbeToken::new(13));
    assert_eq!(fail(&first, 20).await, Recorded::Opened(opened(20, 20)));
    end_open_period(&url, &first).await;
    let probe = Some(SharedAdmission::Probe(opened(20, 20)));
    assert_eq!(first.breaker_admit(BREAKER, &STANDARD, lost).await.unwrap(), probe);
    // Its key expires an open period later (made now rather than waited for).
    let probe_key = first.breaker_probe_key(BREAKER);
    let _: () = redis::cmd("DEL").arg(&probe_key).query_async(&mut raw(&url).await).await.unwrap();
    assert_eq!(second.breaker_admit(BREAKER, &STANDARD, next).await.unwrap(), probe, "the lost probe is replaced");
    first.breaker_release(BREAKER, lost).await.unwrap();
    let held: Option<String> = redis::cmd("GET").arg(&probe_key).query_async(&mut raw(&url).await).await.unwrap();
    assert_eq!(held.as_deref(), Some("12"), "the second's probe is still out");
    let half_open = Some(SharedAdmission::Skip(BreakerState::HalfOpen { opened: opened(20, 20) }));
    assert_eq!(third.breaker_admit(BREAKER, &STANDARD, late).await.unwrap(), half_open, "one probe in the fleet");
    // The second's own give-back frees it.
    second.breaker_release(BREAKER, next).await.unwrap();
    assert_eq!(third.breaker_admit(BREAKER, &STANDARD, late).await.unwrap(), probe);
}
