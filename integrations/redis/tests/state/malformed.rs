//! State in Redis that this runtime did not write, or could not have: each value is read as
//! absent (a closed breaker, no cooldown, no count) or bounded (an open period no longer than the
//! settings'), repaired in Redis, and given an expiry, so that one bad key costs the fleet nothing
//! it would not have paid without it, and never outlives its expiry.

use agentic_runtime::decision::Verdict;
use agentic_runtime::storm::BreakerState;
use agentic_runtime::storm::store::StoreKey;
use agentic_test_support::captured_log::capture;

use crate::support::{FAST, hgetall, hset, pttl, raw, redis_url, server_ms, store, two_targets, with_fallback};

/// The primary's breaker in the store (the scripted provider's scope is `scripted/<model>`).
const PRIMARY: StoreKey<'static> = StoreKey::new("scripted/primary", "primary");

/// `until = 9e18` (285 million years): the primary is skipped for one open period (30 s), not for
/// ever, and the message says so; the stored period is cut to it, and the key expires.
#[tokio::test]
async fn an_open_period_beyond_the_settings_is_one_open_period() {
    let Some(url) = redis_url("an_open_period_beyond_the_settings_is_one_open_period") else { return };
    let store = store(&url, &crate::support::prefix("until-huge")).await;
    let key = store.breaker_key(PRIMARY);
    hset(&url, &key, &[("state", "open"), ("until", "9e18"), ("failures", "20"), ("calls", "20")]).await;
    let (primary, secondary) = two_targets();
    let runtime = with_fallback(&primary, &secondary, store);

    let reply = runtime.request("hi").policy(&FAST).send().await.unwrap();
    assert_eq!((primary.calls(), secondary.calls()), (0, 1), "open: skipped");
    let [moved] = reply.decisions() else { panic!("{:?}", reply.decisions()) };
    assert_eq!(moved.verdict(), Verdict::Fallback);
    assert_eq!(
        moved.error(),
        "CircuitOpen: `scripted/primary` is open for 30 s more, after 20 failures of 20 calls in 10 s",
        "the message a user reads"
    );
    let Some(BreakerState::Open { left, .. }) = runtime.targets()[0].breaker else { panic!("{:?}", runtime.targets()) };
    assert!(left <= std::time::Duration::from_secs(30), "{left:?}");
    let until: u64 = hgetall(&url, &key).await.into_iter().find(|(f, _)| f == "until").unwrap().1.parse().unwrap();
    assert!(until <= server_ms(&url).await + 30_000, "the stored period is cut to one: {until}");
    assert!(pttl(&url, &key).await > 0, "and the key expires");
}

/// `until = inf`, `until = nan`, an unknown `state`, counts that are not numbers: a breaker this
/// runtime cannot have written is closed. The primary answers every exec (on the old scripts:
/// "open for 0 s more" on every exec for ever, or every exec skipped as half-open, or the store
/// taken for down), and the state is deleted.
#[tokio::test]
async fn a_breaker_state_this_runtime_cannot_have_written_is_closed_and_deleted() {
    let Some(url) = redis_url("a_breaker_state_this_runtime_cannot_have_written_is_closed_and_deleted") else {
        return;
    };
    let (_guard, log) = capture(tracing::Level::WARN);
    for fields in [
        &[("state", "open"), ("until", "inf"), ("failures", "20"), ("calls", "20")][..],
        &[("state", "open"), ("until", "nan"), ("failures", "20"), ("calls", "20")],
        &[("state", "open"), ("failures", "20"), ("calls", "20")],
        &[("state", "opened"), ("until", "0"), ("failures", "20"), ("calls", "20")],
        &[("state", "half_open"), ("failures", "twenty"), ("calls", "20")],
        &[("state", "open"), ("until", "1"), ("failures", "-3"), ("calls", "2.5")],
    ] {
        let store = store(&url, &crate::support::prefix("state-bad")).await;
        let key = store.breaker_key(PRIMARY);
        hset(&url, &key, fields).await;
        let (primary, secondary) = two_targets();
        let runtime = with_fallback(&primary, &secondary, store);
        for _ in 0..3 {
            let reply = runtime.request("hi").policy(&FAST).send().await.unwrap();
            assert_eq!(reply.target(), Some("scripted/primary"), "{fields:?}: {:?}", reply.decisions());
            assert!(reply.decisions().is_empty(), "{fields:?}: {:?}", reply.decisions());
        }
        assert_eq!((primary.calls(), secondary.calls()), (3, 0), "{fields:?}");
        assert_eq!(pttl(&url, &key).await, -2, "{fields:?}: repaired (deleted)");
        assert_eq!(runtime.targets()[0].breaker, Some(BreakerState::Closed), "{fields:?}");
    }
    assert!(
        !log.text().contains("shared retry store unavailable"),
        "the store was never taken for down: {}",
        log.text()
    );
}

/// A probe key without an expiry (which this runtime never writes) holds the breaker half-open
/// for one open period at most: it is given one.
#[tokio::test]
async fn a_probe_key_without_an_expiry_is_given_one() {
    let Some(url) = redis_url("a_probe_key_without_an_expiry_is_given_one") else { return };
    let store = store(&url, &crate::support::prefix("probe")).await;
    hset(&url, &store.breaker_key(PRIMARY), &[("state", "half_open"), ("failures", "20"), ("calls", "20")]).await;
    let probe = store.breaker_probe_key(PRIMARY);
    let _: () = redis::cmd("SET").arg(&probe).arg("1").query_async(&mut raw(&url).await).await.unwrap();
    let (primary, secondary) = two_targets();
    let runtime = with_fallback(&primary, &secondary, store);
    runtime.request("hi").policy(&FAST).send().await.unwrap();
    assert_eq!((primary.calls(), secondary.calls()), (0, 1), "another's probe is out: skipped");
    let ttl = pttl(&url, &probe).await;
    assert!(ttl > 0 && ttl <= 30_000, "the probe is forgotten after an open period: PTTL {ttl}");
}

/// A cooldown that is not a number (on the old code: every read an error, the store taken for down
/// and the fleet's state lost for 10 s at a time), or ends past any cooldown this runtime sets (100
/// years), is deleted: the call goes at once. A valid one found without an expiry expires when it
/// ends.
#[tokio::test]
async fn a_cooldown_this_runtime_cannot_have_written_is_deleted_and_a_valid_one_expires() {
    let Some(url) = redis_url("a_cooldown_this_runtime_cannot_have_written_is_deleted_and_a_valid_one_expires") else {
        return;
    };
    let (_guard, log) = capture(tracing::Level::WARN);
    for value in ["soon", "-5", "1e400", "99999999999999999999"] {
        let store = store(&url, &crate::support::prefix("cooldown-bad")).await;
        let key = store.cooldown_key(StoreKey::new("scripted", ""));
        let _: () = redis::cmd("SET").arg(&key).arg(value).query_async(&mut raw(&url).await).await.unwrap();
        let provider = agentic_runtime::ScriptedProvider::new([]).otherwise(agentic_runtime::Scripted::ok("fine"));
        let runtime = agentic_runtime::Runtime::builder(provider.clone()).with_shared_store(store).build().unwrap();
        let reply = runtime.request("hi").policy(&FAST).send().await.unwrap();
        assert!(reply.decisions().is_empty(), "{value}: no wait: {:?}", reply.decisions());
        assert_eq!(provider.calls(), 1);
        assert_eq!(pttl(&url, &key).await, -2, "{value}: deleted");
    }
    assert!(!log.text().contains("shared retry store unavailable"), "{}", log.text());

    let store = store(&url, &crate::support::prefix("cooldown-no-ttl")).await;
    let key = store.cooldown_key(StoreKey::new("scripted", ""));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let _: () = redis::cmd("SET").arg(&key).arg(now + 50).query_async(&mut raw(&url).await).await.unwrap();
    let runtime = agentic_runtime::Runtime::builder(
        agentic_runtime::ScriptedProvider::new([]).otherwise(agentic_runtime::Scripted::ok("fine")),
    )
    .with_shared_store(store)
    .build()
    .unwrap();
    runtime.request("hi").policy(&FAST).send().await.unwrap();
    let ttl = pttl(&url, &key).await;
    assert!(ttl == -2 || (0..=50).contains(&ttl), "it expires when it ends: PTTL {ttl}");
}

/// Window fields this runtime does not write (a slot or a count that is not a whole number, a kind
/// it does not count, a slot in the far future) are deleted, and count nothing: on the old scripts
/// each was a Lua error on every outcome, and the store was taken for down.
#[tokio::test]
async fn malformed_window_fields_are_deleted_and_count_nothing() {
    let Some(url) = redis_url("malformed_window_fields_are_deleted_and_count_nothing") else { return };
    let (_guard, log) = capture(tracing::Level::WARN);
    let store = store(&url, &crate::support::prefix("window-bad")).await;
    let window = store.breaker_window_key(PRIMARY);
    let budget = store.budget_key(PRIMARY.scope);
    let far = format!("f:{}", server_ms(&url).await);
    let junk = [("f:abc", "30"), ("f:12", "x"), ("x:1", "5"), ("f", "9"), (far.as_str(), "1000")];
    hset(&url, &window, &junk).await;
    hset(&url, &budget, &[("s:abc", "30"), ("r:1", "-4"), ("r:2", "1e9")]).await;
    let (primary, secondary) = two_targets();
    let runtime = with_fallback(&primary, &secondary, store);
    for _ in 0..3 {
        assert_eq!(runtime.request("hi").policy(&FAST).send().await.unwrap().target(), Some("scripted/primary"));
    }
    for (key, fields) in [(&window, hgetall(&url, &window).await), (&budget, hgetall(&url, &budget).await)] {
        assert!(fields.iter().all(|(name, _)| name.len() > 2 && !name.contains("abc")), "{key}: {fields:?}");
        assert!(fields.iter().all(|(_, count)| count.parse::<u64>().is_ok_and(|n| n <= 3)), "{key}: {fields:?}");
        assert!(pttl(&url, key).await > 0, "{key} expires");
    }
    assert_eq!(runtime.targets()[0].breaker, Some(BreakerState::Closed));
    assert!(!log.text().contains("shared retry store unavailable"), "{}", log.text());
}

/// Every key a runtime writes expires: after execs that open a breaker, take a probe, set a
/// cooldown, learn limits and count successes and retries, no key of the prefix is without an
/// expiry, including one a person wrote without it that the runtime then read.
#[tokio::test]
async fn every_key_the_runtime_touches_expires() {
    use agentic_runtime::storm::BreakerSettings;
    use agentic_runtime::storm::pace::{Limit, LimitKind, RateLimits};
    use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
    let Some(url) = redis_url("every_key_the_runtime_touches_expires") else { return };
    let prefix = crate::support::prefix("ttl");
    let store = store(&url, &prefix).await;
    // A valid open state written without an expiry, for a target of its own.
    let other = StoreKey::new("scripted/other", "other");
    let until = (server_ms(&url).await + 20_000).to_string();
    hset(&url, &store.breaker_key(other), &[("state", "open"), ("until", &until), ("failures", "3"), ("calls", "3")])
        .await;
    let limits =
        RateLimits::new().with(LimitKind::Requests, Limit::new(1_000, 999, std::time::Duration::from_secs(60)));
    let primary = ScriptedProvider::new([
        Scripted::http(503, "Service Unavailable"),
        Scripted::http(429, "slow down").with_retry_after(std::time::Duration::from_millis(20)),
    ])
    .otherwise(Scripted::http(503, "Service Unavailable"))
    .with_model("primary");
    let secondary =
        ScriptedProvider::new([]).otherwise(Scripted::ok("fine").with_rate_limits(limits)).with_model("secondary");
    let third = ScriptedProvider::new([]).otherwise(Scripted::ok("fine")).with_model("other");
    let settings =
        BreakerSettings::new(50, 3, std::time::Duration::from_secs(10), std::time::Duration::from_secs(30)).unwrap();
    let runtime = Runtime::builder(primary.clone())
        .with_fallback(third.clone())
        .with_fallback(secondary.clone())
        .with_breaker(settings)
        .with_shared_store(store)
        .build()
        .unwrap();
    for _ in 0..3 {
        runtime.request("hi").policy(&FAST).send().await.unwrap();
    }
    let keys: Vec<String> =
        redis::cmd("KEYS").arg(format!("{prefix}:*")).query_async(&mut raw(&url).await).await.unwrap();
    assert!(keys.len() >= 5, "{keys:?}");
    for key in &keys {
        assert!(pttl(&url, key).await > 0, "{key} never expires (of {keys:?})");
    }
}
