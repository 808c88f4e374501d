//! A fleet keeps each target's state (a model of a scope) apart, as one process does: providers
//! state limits and ask for waits per model, and a runtime keeps a governor per target.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use agentic_runtime::decision::Verdict;
use agentic_runtime::provider::{EventStream, Provider, Request};
use agentic_runtime::storm::pace::{Limit, LimitKind, RateLimits};
use agentic_runtime::storm::store::{SharedStore, StoreKey};
use agentic_runtime::{Runtime, Scripted, ScriptedProvider};

use crate::support::{FAST, pttl, redis_url, store};

/// The scope of both models: one endpoint and one API key.
const SCOPE: &str = "openai:3f9a0c";

/// A scripted model of [`SCOPE`], as an HTTP provider's models of one key are.
struct OfOneKey(ScriptedProvider);

impl Provider for OfOneKey {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn stream<'a>(&'a self, request: &'a Request<'a>) -> EventStream<'a> {
        self.0.stream(request)
    }
    fn model(&self) -> Option<&str> {
        self.0.model()
    }
    fn scope(&self) -> String {
        SCOPE.to_owned()
    }
}

/// `gpt-4o`'s statements (its requests all used for a minute, a wait of 20 s) hold `gpt-4o` only:
/// a runtime of `gpt-4o-mini` on the same key is neither paced nor cooled down, in a fleet as in
/// one process. On the old keys (per scope) the fleet's `gpt-4o-mini` waited for `gpt-4o`'s.
#[tokio::test]
async fn one_models_limits_and_cooldown_do_not_hold_another_model_of_the_key() {
    let Some(url) = redis_url("one_models_limits_and_cooldown_do_not_hold_another_model_of_the_key") else { return };
    let prefix = crate::support::prefix("models");
    let spent = RateLimits::new().with(LimitKind::Requests, Limit::new(2, 0, Duration::from_secs(60)));
    let big = ScriptedProvider::new([Scripted::ok("stated").with_rate_limits(spent)]).with_model("gpt-4o");
    let fleet_big =
        Runtime::builder(OfOneKey(big.clone())).with_shared_store(store(&url, &prefix).await).build().unwrap();
    fleet_big.request("learns gpt-4o's limits").policy(&FAST).send().await.unwrap();
    let a_store = store(&url, &prefix).await;
    let (big_key, mini_key) = (StoreKey::new(SCOPE, "gpt-4o"), StoreKey::new(SCOPE, "gpt-4o-mini"));
    a_store.extend_cooldown(big_key, SystemTime::now() + Duration::from_secs(20)).await.unwrap();
    assert!(pttl(&url, &a_store.pace_key(big_key)).await > 0, "gpt-4o's limits are in the store");

    let mini = || ScriptedProvider::new([]).otherwise(Scripted::ok("fine")).with_model("gpt-4o-mini");
    let in_fleet = Runtime::builder(OfOneKey(mini()))
        .with_shared_store(Arc::clone(&a_store) as Arc<dyn SharedStore>)
        .build()
        .unwrap();
    let alone = Runtime::new(OfOneKey(mini()));
    for (mode, runtime) in [("in the fleet", &in_fleet), ("in one process", &alone)] {
        for _ in 0..3 {
            let reply = runtime.request("hi").policy(&FAST).send().await.unwrap();
            let waits: Vec<_> = reply
                .decisions()
                .iter()
                .filter(|d| matches!(d.verdict(), Verdict::Paced | Verdict::CooledDown | Verdict::Refused))
                .collect();
            assert!(waits.is_empty(), "{mode}: gpt-4o-mini waited for gpt-4o: {waits:?}");
        }
    }
    assert_eq!(pttl(&url, &a_store.pace_key(mini_key)).await, -2, "gpt-4o-mini has no limits of its own");
    assert_eq!(pttl(&url, &a_store.cooldown_key(mini_key)).await, -2);
    assert!(a_store.cooldown_until(big_key).await.unwrap().is_some(), "gpt-4o's cooldown stands");
}
