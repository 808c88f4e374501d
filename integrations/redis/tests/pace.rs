//! The fleet's pacer in Redis (`RedisStore`'s `pace_learn`, `pace_reserve`, `pace_settle`): two
//! stores on one prefix, as two processes would be, share one bucket per limit on the Redis
//! server's clock. The scripts' agreement with the in-process `Pacer` is checked by the unit tests
//! of the crate's `pace.rs`.
//!
//! Needs `AGENTIC_REDIS_URL` (`.ci/run` starts a server); `AGENTIC_SKIP_REDIS=1` skips. The Redis
//! clock runs in real time: each wait is checked against what the limit allows, less the little
//! time the test itself takes (`SLACK`), never more.

use std::sync::Arc;
use std::time::Duration;

use agentic_redis::RedisStore;
use agentic_runtime::storm::pace::{Demand, Limit, LimitKind, PaceRefused, RateLimits, Reserved};
use agentic_runtime::storm::store::{SharedStore, StoreKey};

use crate::support::{HOW_TO_START, prefix, raw, redis_url};

const TARGET: StoreKey<'static> = StoreKey::new("openai:3f9a0c", "gpt-4o");
const S: Duration = Duration::from_secs(1);
const MINUTE: Duration = Duration::from_secs(60);

/// How much shorter than the limit's own figure a wait may be: the real time the test took since
/// the limit was learnt refilled the bucket that much (a generous bound for a loaded machine).
const SLACK: Duration = Duration::from_secs(3);

/// One request, no tokens.
const ONE_REQUEST: Demand = Demand::new(0, 0);

/// A store on the test server with a prefix of its own, and a second store on the same prefix (as
/// another process would have), with a generous timeout; `None` when the tests are to skip.
async fn two_processes(test: &str) -> Option<(RedisStore, RedisStore, String)> {
    let url = redis_url(test)?;
    let prefix = prefix(test);
    let connect = || async {
        RedisStore::connect(&url)
            .await
            .unwrap_or_else(|err| panic!("{test} cannot reach Redis at {url}: {err}; {HOW_TO_START}"))
            .with_prefix(prefix.clone())
            .with_timeout(S * 5)
    };
    let first = connect().await;
    let second = connect().await;
    Some((first, second, url))
}

/// The key's remaining lifetime (it must have one).
async fn lifetime(url: &str, key: &str) -> Duration {
    let ms = crate::support::pttl(url, key).await;
    Duration::from_millis(u64::try_from(ms).unwrap_or_else(|_| panic!("{key} has no expiry: PTTL {ms}")))
}

async fn exists(url: &str, key: &str) -> bool {
    let count: i64 = redis::cmd("EXISTS").arg(key).query_async(&mut raw(url).await).await.unwrap();
    count == 1
}

/// A limit of `size` with `remaining` left that refills in a minute, full again after `reset`.
fn per_minute(kind: LimitKind, size: u64, remaining: u64, reset: Duration) -> RateLimits {
    RateLimits::new().with(kind, Limit::new(size, remaining, reset).with_window(MINUTE))
}

async fn reserve(store: &RedisStore, demand: &Demand, left: Option<Duration>) -> Result<Reserved, PaceRefused> {
    store.pace_reserve(TARGET, demand, left).await.unwrap().expect("the store knows the scope's limits")
}

/// A reservation granted after a wait of at most `most`, and less than `SLACK` shorter.
fn assert_waits(reserved: Result<Reserved, PaceRefused>, most: Duration, limit: LimitKind) {
    let reserved = reserved.unwrap_or_else(|refused| panic!("refused: {refused}"));
    assert_eq!(reserved.limit, Some(limit), "{reserved:?}");
    assert_near(reserved.wait, most);
}

fn assert_near(wait: Duration, most: Duration) {
    assert!(wait <= most && wait + SLACK > most, "a wait of {wait:?}, not {most:?} less the test's own time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_one_limit_in_arrival_order_and_a_refusal_takes_nothing() {
    let Some((a, b, _)) = two_processes("two_processes_share_one_limit_in_arrival_order").await else { return };
    assert!(a.pace_learn(TARGET, &per_minute(LimitKind::Requests, 5, 5, Duration::ZERO)).await.unwrap());
    // Alternately: the five the limit holds at once, then one every 12 s, in arrival order across both.
    let stores = [&a, &b];
    for call in 0..5 {
        assert_eq!(reserve(stores[call % 2], &ONE_REQUEST, Some(S)).await, Ok(Reserved::NOW), "call {call}");
    }
    for call in 5..9 {
        let owed = S * 12 * (call - 4);
        assert_waits(reserve(stores[call as usize % 2], &ONE_REQUEST, None).await, owed, LimitKind::Requests);
    }
    // The next would wait 60 s: past a deadline 30 s away, it is refused, and takes nothing.
    let refused = reserve(&a, &ONE_REQUEST, Some(S * 30)).await.expect_err("60 s does not fit in 30 s");
    assert_eq!((refused.limit, refused.size, refused.left), (LimitKind::Requests, 5, S * 30));
    assert_near(refused.wait, S * 60);
    // A stated window's limit is full again at its rate, the 4 reserved beyond it included: 9 at 5 a minute.
    assert_near(refused.resets_in.unwrap(), S * 108);
    assert_waits(reserve(&b, &ONE_REQUEST, None).await, S * 60, LimitKind::Requests);
    assert_waits(reserve(&a, &ONE_REQUEST, Some(S * 600)).await, S * 72, LimitKind::Requests);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_reservations_of_two_processes_each_get_their_own_place() {
    let Some((a, b, _)) = two_processes("concurrent_reservations_of_two_processes").await else { return };
    assert!(b.pace_learn(TARGET, &per_minute(LimitKind::Requests, 5, 5, Duration::ZERO)).await.unwrap());
    let (a, b) = (Arc::new(a), Arc::new(b));
    let calls: Vec<_> = (0..20)
        .map(|call| {
            let store = Arc::clone(if call % 2 == 0 { &a } else { &b });
            tokio::spawn(async move { reserve(&store, &ONE_REQUEST, None).await.unwrap().wait })
        })
        .collect();
    let mut waits = Vec::new();
    for call in calls {
        waits.push(call.await.unwrap());
    }
    waits.sort();
    assert_eq!(waits[..5], [Duration::ZERO; 5], "{waits:?}");
    for (place, &wait) in waits[5..].iter().enumerate() {
        // Atomic: every caller got a place of its own, 12 s after the one before.
        assert_near(wait, S * 12 * (place as u32 + 1));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settling_gives_back_the_tokens_a_call_did_not_use_and_takes_those_it_used_beyond() {
    let Some((a, b, _)) = two_processes("settling_gives_back_the_tokens").await else { return };
    // 1 000 tokens a minute: 16.7 a second.
    assert!(a.pace_learn(TARGET, &per_minute(LimitKind::Tokens, 1000, 1000, Duration::ZERO)).await.unwrap());
    let call = Demand::new(600, 300);
    assert_eq!(reserve(&a, &call, None).await, Ok(Reserved::NOW));
    // 100 left: 800 short, 48 s.
    let refused = reserve(&b, &call, Some(S)).await.expect_err("48 s does not fit in 1 s");
    assert_eq!((refused.limit, refused.size), (LimitKind::Tokens, 1000));
    assert_near(refused.wait, S * 48);
    // The first call used 200 of its 900: 700 back, 800 left, 100 short of the next: 6 s.
    a.pace_settle(TARGET, &call, &Demand::new(100, 100)).await.unwrap();
    assert_waits(reserve(&b, &call, None).await, S * 6, LimitKind::Tokens);
    // That one says it used 1 500, more than the limit holds in its window (a server refuses such a
    // request): it counts as 1 000, 100 more are taken, the level is -200; the next waits for
    // 1 100: 66 s.
    b.pace_settle(TARGET, &call, &Demand::new(1000, 500)).await.unwrap();
    assert_waits(reserve(&a, &call, None).await, S * 66, LimitKind::Tokens);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lower_level_wins_and_a_limit_that_shrinks_is_the_new_size() {
    let Some((a, b, _)) = two_processes("the_lower_level_wins_and_a_limit_that_shrinks").await else { return };
    assert!(a.pace_learn(TARGET, &per_minute(LimitKind::Requests, 10, 10, Duration::ZERO)).await.unwrap());
    for _ in 0..3 {
        assert_eq!(reserve(&a, &ONE_REQUEST, None).await, Ok(Reserved::NOW));
    }
    // The server has seen one of the three: the fleet's 7 stay, not the server's 9.
    assert!(b.pace_learn(TARGET, &per_minute(LimitKind::Requests, 10, 9, S * 6)).await.unwrap());
    for _ in 0..7 {
        assert_eq!(reserve(&b, &ONE_REQUEST, None).await, Ok(Reserved::NOW));
    }
    let next = reserve(&a, &ONE_REQUEST, None).await.unwrap();
    assert_eq!(next.limit, Some(LimitKind::Requests));
    assert!(next.wait <= S * 6 && next.resets_in.is_some_and(|reset| reset <= S * 60), "{next:?}");
    // The limit shrinks to 4 a minute: one owed, the next waits for two at 4 a minute, 30 s.
    assert!(b.pace_learn(TARGET, &per_minute(LimitKind::Requests, 4, 4, Duration::ZERO)).await.unwrap());
    let refused = reserve(&b, &ONE_REQUEST, Some(S * 10)).await.expect_err("30 s does not fit in 10 s");
    assert_eq!((refused.limit, refused.size), (LimitKind::Requests, 4));
    // Full again at its rate: 1 owed and 4 to refill at 4 a minute.
    assert_near(refused.resets_in.unwrap(), S * 75);
    assert_near(refused.wait, S * 30);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_holds_each_limit_expires_when_untouched_and_is_refreshed_on_use() {
    let Some((a, b, url)) = two_processes("the_key_holds_each_limit_expires_when_untouched").await else { return };
    let key = a.pace_key(TARGET);
    assert!(key.ends_with(":{openai:3f9a0c}:pace:gpt-4o") && key.starts_with(a.prefix()), "{key}");
    assert_eq!(
        a.pace_reserve(TARGET, &ONE_REQUEST, None).await.unwrap(),
        None,
        "never learnt: the process paces alone"
    );
    assert!(a.pace_learn(TARGET, &RateLimits::new()).await.unwrap(), "nothing stated, nothing learnt");
    let mut raw = raw(&url).await;
    assert!(!exists(&url, &key).await);

    let limits = RateLimits::new()
        .with(LimitKind::Requests, Limit::new(50, 49, S * 2))
        .with(LimitKind::Tokens, Limit::new(10_000, 10_000, Duration::ZERO).with_window(MINUTE));
    assert!(a.pace_learn(TARGET, &limits).await.unwrap());
    let mut fields: Vec<String> = redis::cmd("HKEYS").arg(&key).query_async(&mut raw).await.unwrap();
    fields.sort();
    let expected = [
        "requests:at",
        "requests:full_at",
        "requests:level",
        "requests:rate",
        "requests:size",
        "requests:taken",
        "tokens:at",
        "tokens:level",
        "tokens:rate",
        "tokens:size",
        "tokens:taken",
    ];
    assert_eq!(fields, expected, "a full limit has no reset to wait for");
    // Per-minute limits: twice a minute is less than the 5 minutes a key lives at least.
    let ttl = lifetime(&url, &key).await;
    assert!(ttl <= S * 300 && ttl > S * 290, "{ttl:?}");

    let _: i64 = redis::cmd("PEXPIRE").arg(&key).arg(10_000).query_async(&mut raw).await.unwrap();
    assert_eq!(reserve(&b, &Demand::new(10, 10), None).await, Ok(Reserved::NOW));
    assert!(lifetime(&url, &key).await > S * 290, "a reservation refreshes the expiry");
    let _: i64 = redis::cmd("PEXPIRE").arg(&key).arg(10_000).query_async(&mut raw).await.unwrap();
    b.pace_settle(TARGET, &Demand::new(10, 10), &Demand::new(5, 5)).await.unwrap();
    assert!(lifetime(&url, &key).await > S * 290, "a settlement refreshes the expiry");

    // A limit that takes 10 minutes to refill (all of it used, full in 10 minutes: a window of at
    // most 606 s, as a rounded-down remaining allows) keeps the key twice that.
    let slow = RateLimits::new().with(LimitKind::InputTokens, Limit::new(100, 0, S * 600));
    assert!(b.pace_learn(TARGET, &slow).await.unwrap());
    let ttl = lifetime(&url, &key).await;
    assert!(ttl <= S * 1213 && ttl > S * 1200, "{ttl:?}");

    // Expired (as Redis deletes it): the fleet knows no limit, and a late settlement writes none.
    let _: i64 = redis::cmd("DEL").arg(&key).query_async(&mut raw).await.unwrap();
    assert_eq!(b.pace_reserve(TARGET, &ONE_REQUEST, None).await.unwrap(), None);
    a.pace_settle(TARGET, &Demand::new(10, 10), &Demand::new(0, 0)).await.unwrap();
    assert!(!exists(&url, &key).await, "a settlement on a forgotten key leaves it forgotten");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_that_cannot_be_read_is_unknown_until_learnt_again() {
    let Some((a, b, url)) = two_processes("a_bucket_that_cannot_be_read_is_unknown").await else { return };
    let limits = per_minute(LimitKind::Requests, 1, 1, Duration::ZERO);
    assert!(a.pace_learn(TARGET, &limits).await.unwrap());
    assert_eq!(reserve(&a, &ONE_REQUEST, None).await, Ok(Reserved::NOW));
    let key = a.pace_key(TARGET);
    let _: i64 = redis::cmd("HSET")
        .arg(&key)
        .arg("requests:level")
        .arg("a lot")
        .query_async(&mut raw(&url).await)
        .await
        .unwrap();
    assert_eq!(b.pace_reserve(TARGET, &ONE_REQUEST, None).await.unwrap(), None, "no bucket it can read");
    assert!(b.pace_learn(TARGET, &limits).await.unwrap());
    assert_eq!(reserve(&a, &ONE_REQUEST, None).await, Ok(Reserved::NOW), "learnt afresh: full");
    assert_waits(reserve(&b, &ONE_REQUEST, None).await, S * 60, LimitKind::Requests);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_redis_fails_the_pacer_within_the_timeout() {
    if std::env::var("AGENTIC_SKIP_REDIS").is_ok_and(|skip| skip == "1") {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let store = RedisStore::lazy(&format!("redis://:secret@127.0.0.1:{port}")).unwrap().with_timeout(S * 2);
    let err = store.pace_reserve(TARGET, &ONE_REQUEST, None).await.expect_err("nothing listens");
    assert!(err.0.contains("connect") && !err.0.contains("secret"), "{err}");
    let limits = per_minute(LimitKind::Requests, 5, 5, Duration::ZERO);
    assert!(store.pace_learn(TARGET, &limits).await.is_err());
    assert!(store.pace_settle(TARGET, &ONE_REQUEST, &ONE_REQUEST).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_usage_costs_the_fleet_two_windows_at_most_and_a_refusal_keeps_the_expiry() {
    let Some((a, b, url)) = two_processes("a_hostile_usage_costs_the_fleet_two_windows_at_most").await else { return };
    // 1 000 tokens a minute; process A's calls of 100 report u64::MAX, 1e19 and Gemini's 2^64 - 1.
    assert!(a.pace_learn(TARGET, &per_minute(LimitKind::Tokens, 1000, 1000, Duration::ZERO)).await.unwrap());
    let call = Demand::new(100, 0);
    for used in [u64::MAX, 10_000_000_000_000_000_000, u64::MAX - 1] {
        reserve(&a, &call, None).await.unwrap();
        a.pace_settle(TARGET, &call, &Demand::new(10, used)).await.unwrap();
    }
    // Each answer costs a bucket at most, and a settle stops at minus the size (the last call's own
    // reservation of 100 waits below it): a fresh process (B) waits for 1 200 tokens, 72 s, not
    // a day, and its refusal says so truly.
    let refused = reserve(&b, &call, Some(S * 10)).await.expect_err("two windows owed");
    assert_near(refused.wait, S * 72);
    assert!(refused.resets_in.is_some_and(|reset| reset <= S * 126 && reset + SLACK > S * 126), "{refused:?}");
    let said = refused.to_string();
    assert!(said.starts_with("the tokens rate limit (1000) is used up: the wait of 7"), "{said}");
    assert!(said.contains("does not fit in the 10 s left; it is full again in 12"), "{said}");
    // A refusal writes nothing: the key's expiry is not pushed back by callers that keep being
    // refused (before, each refusal set it again, and a fleet that kept calling never forgot).
    let key = a.pace_key(TARGET);
    let _: () = redis::cmd("PEXPIRE").arg(&key).arg(30_000).query_async(&mut raw(&url).await).await.unwrap();
    for _ in 0..5 {
        reserve(&b, &call, Some(S)).await.expect_err("still owed");
    }
    assert!(lifetime(&url, &key).await <= S * 30, "refusals left the expiry alone");
    // A caller that may wait reserves behind the debt.
    assert_waits(reserve(&b, &call, None).await, S * 72, LimitKind::Tokens);
}
