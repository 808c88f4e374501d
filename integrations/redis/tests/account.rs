//! A spend account shared by two runtimes through Redis, as two processes would share it: 200
//! concurrent execs between them never spend more than it, because every call reserves its worst
//! case in one script before it is sent (docs/design.md §23, "A shared account").
//! Needs `AGENTIC_REDIS_URL` (`.ci/run` starts a server); `AGENTIC_SKIP_REDIS=1` skips.

use futures_util::future::join_all;

use agentic_runtime::message::Usage;
use agentic_runtime::spend::{Limit, SpendAccount};
use agentic_runtime::storm::Refusal;
use agentic_runtime::storm::store::SharedStore;
use agentic_runtime::{ExecErrorKind, Runtime, Scripted, ScriptedProvider};

use crate::support::{prefix, pttl, redis_url, store};

const LIMIT: u64 = 10_000;

fn account() -> SpendAccount {
    SpendAccount::per_day().named("daily").with_max_total_tokens(LIMIT).with_call_output_tokens(100)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runtimes_on_one_account_never_pass_it_together_under_200_concurrent_execs() {
    let Some(url) = redis_url("two_runtimes_on_one_account") else { return };
    let prefix = prefix("account");
    // Each answer reports one input token (at most any prompt's estimate) and the 100 output
    // tokens it was allowed.
    let answer = || ScriptedProvider::new([]).otherwise(Scripted::ok("done").with_usage(Usage::new(1, 100)));
    let (first_provider, second_provider) = (answer(), answer());
    let runtime = |provider: &ScriptedProvider, store| {
        Runtime::builder(provider.clone()).with_shared_store(store).with_spend_account(account()).build().unwrap()
    };
    let first = runtime(&first_provider, store(&url, &prefix).await);
    let second = runtime(&second_provider, store(&url, &prefix).await);
    // One exec each first: both connections are open before the burst. (Without it, one runtime's
    // reservations could reach Redis while the other still connects, and spend the whole account
    // alone: the limit held, and the test would not show two runtimes sharing it.)
    let warm = [first.exec("Summarize the invoice").await, second.exec("Summarize the invoice").await];
    let execs = (0..200)
        .map(|n| if n % 2 == 0 { first.exec("Summarize the invoice") } else { second.exec("Summarize the invoice") });
    let results = join_all(execs).await;

    let reported: u64 = warm.iter().chain(&results).flatten().map(|reply| reply.usage().unwrap().total_tokens()).sum();
    let sent = first_provider.calls() + second_provider.calls();
    assert!(reported <= LIMIT, "the fleet's calls reported {reported} tokens, over {LIMIT}");
    assert!(warm.iter().all(Result::is_ok), "each runtime's first exec fits the account: {warm:?}");
    assert!(sent > 2 && sent < 202, "{sent} calls sent");
    assert!(first_provider.calls() > 0 && second_provider.calls() > 0, "both runtimes spent");
    assert!(results.iter().any(Result::is_err), "the account refused some of the burst");
    for error in results.iter().filter_map(|result| result.as_ref().err()) {
        assert_eq!(error.kind(), ExecErrorKind::UsageLimit, "{error}");
        assert!(
            matches!(error.refusal(), Some(Refusal::UsageLimit { limit: Limit::MaxTotalTokens, account: Some(_), .. })),
            "{error}"
        );
    }
    // A third process finds the account nearly spent: its window is the fleet's. What the settles
    // gave back (each call reserved its input estimate and 100 tokens, and used 101) is all it gets.
    let third_provider = answer();
    let third = runtime(&third_provider, store(&url, &prefix).await);
    let mut more = 0;
    let error = loop {
        match third.exec("Summarize the invoice").await {
            Ok(reply) => more += reply.usage().unwrap().total_tokens(),
            Err(error) => break error,
        }
        assert!(third_provider.calls() < 200, "the third process was never refused");
    };
    assert_eq!(error.kind(), ExecErrorKind::UsageLimit, "{error}");
    assert!(reported + more <= LIMIT, "the fleet's calls reported {} tokens, over {LIMIT}", reported + more);
    assert!(third_provider.calls() < sent / 2, "{} calls of the third process", third_provider.calls());
    let key = store(&url, &prefix).await.account_key("daily");
    let ttl = pttl(&url, &key).await;
    assert!(ttl > 0 && ttl <= 2 * 24 * 3600 * 1000, "the account expires two windows after its last write: {ttl}");
}

#[tokio::test]
async fn a_settle_counts_at_most_four_times_its_reservation() {
    let Some(url) = redis_url("a_settle_counts_at_most_four_times") else { return };
    let store = store(&url, &prefix("account-bound")).await;
    let account = account();
    let needed = agentic_runtime::spend::Amounts { tokens: 1_000, micro_usd: 0 };
    let held = store.account_reserve(&account, needed).await.unwrap().unwrap().unwrap();
    let lie = agentic_runtime::spend::Amounts { tokens: u64::from(u32::MAX), micro_usd: 0 };
    store.account_settle(&account, held, lie).await.unwrap();
    // 4 000 counted: 6 000 left, so 6 000 fit and one more token does not.
    let rest = agentic_runtime::spend::Amounts { tokens: 6_000, micro_usd: 0 };
    assert!(store.account_reserve(&account, rest).await.unwrap().unwrap().is_ok());
    let one = agentic_runtime::spend::Amounts { tokens: 1, micro_usd: 0 };
    let refused = store.account_reserve(&account, one).await.unwrap().unwrap().unwrap_err();
    assert_eq!((refused.used, refused.needed, refused.max), (LIMIT, 1, LIMIT));
}
