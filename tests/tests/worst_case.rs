//! The default policy's documented worst case holds whatever the provider does.
//!
//! `RetryPolicy::new()` promises "up to 12 model calls ...; a model turn ends within 15 min", and
//! with no tools an exec is one model turn. These properties play seeded random sequences of model
//! call outcomes (hangs, answers up to 20 minutes late, retryable errors with `Retry-After` up to
//! 2 minutes, permanent and programming errors, successes) through `Runtime::exec` on tokio's paused
//! clock and check that no sequence gets past the promise: not in time, not in calls. A failure
//! prints the seed and the outcomes; `WORST_CASE_SEED=<seed>` replays that one case.

use std::time::Duration;

use agentic_runtime::provider::TransportKind;
use agentic_runtime::{ExecError, Reply, RetryPolicy, Runtime, Scripted, ScriptedProvider};
use tokio::time::Instant;

/// Random cases per property: a few hundred execs on the paused clock take well under a second.
const CASES: u64 = 300;
/// The first seed; case `n` uses `FIRST_SEED + n`, for its outcomes and for the jitter alike.
const FIRST_SEED: u64 = 0x5AFE_DEF0_0000;

/// One generated case: the script, what plays once it runs out, and both in words.
struct Case {
    seed: u64,
    steps: Vec<Scripted>,
    fallback: Option<Scripted>,
    described: Vec<String>,
}

impl Case {
    /// 1 to 14 outcomes drawn from `seed`, and a fallback: none (the script running out is a
    /// programming error, which ends the exec), calls that hang, or calls that keep failing.
    fn generate(seed: u64) -> Case {
        let mut rng = fastrand::Rng::with_seed(seed);
        let count = rng.usize(1..=14);
        let (mut steps, mut described) = (Vec::with_capacity(count), Vec::with_capacity(count + 1));
        for _ in 0..count {
            let (step, words) = outcome(&mut rng);
            steps.push(step);
            described.push(words);
        }
        let fallback = match rng.u8(0..3) {
            0 => None,
            1 => Some((Scripted::hang(), "then every call hangs")),
            _ => Some((Scripted::error("overloaded"), "then every call is `overloaded`")),
        };
        described.push(fallback.as_ref().map_or("then the script runs out", |(_, words)| words).to_owned());
        Case { seed, steps, fallback: fallback.map(|(step, _)| step), described }
    }

    fn provider(&self) -> ScriptedProvider {
        let provider = ScriptedProvider::new(self.steps.iter().cloned());
        match &self.fallback {
            Some(step) => provider.otherwise(step.clone()),
            None => provider,
        }
    }
}

/// How long a call takes before its first event: often at once, sometimes a few seconds, sometimes
/// far past every bound (up to 20 minutes).
fn latency(rng: &mut fastrand::Rng) -> Duration {
    match rng.u8(0..4) {
        0 | 1 => Duration::ZERO,
        2 => Duration::from_millis(rng.u64(1..=5_000)),
        _ => Duration::from_millis(rng.u64(1..=20 * 60_000)),
    }
}

/// One model call's outcome and its description.
fn outcome(rng: &mut fastrand::Rng) -> (Scripted, String) {
    let delay = latency(rng);
    let after = |words: String| format!("{words} after {delay:?}");
    match rng.u8(0..20) {
        0..=3 => (Scripted::hang(), "hang".to_owned()),
        4..=6 => (Scripted::ok("done").with_latency(delay), after("ok".to_owned())),
        7..=9 => {
            let wait = Duration::from_millis(rng.u64(0..=120_000));
            let step = Scripted::http(429, "Too Many Requests").with_retry_after(wait).with_latency(delay);
            (step, after(format!("429 with Retry-After {wait:?}")))
        }
        10 | 11 => (Scripted::http(503, "Service Unavailable").with_latency(delay), after("503".to_owned())),
        12 => {
            let wait = Duration::from_millis(rng.u64(0..=120_000));
            let step = Scripted::error("overloaded").with_status(529).with_retry_after(wait).with_latency(delay);
            (step, after(format!("`overloaded` (529) with Retry-After {wait:?}")))
        }
        13 => (Scripted::error("").with_latency(delay), after("a dropped stream".to_owned())),
        14 => (
            Scripted::transport(TransportKind::Reset, "connection reset by peer").with_latency(delay),
            after("a connection reset".to_owned()),
        ),
        15 => (Scripted::error("The operation timed out").with_latency(delay), after("a timeout text".to_owned())),
        16 => (Scripted::http(401, "invalid api key").with_latency(delay), after("401 (permanent)".to_owned())),
        17 => (Scripted::http(400, "bad request").with_latency(delay), after("400 (permanent)".to_owned())),
        18 => (
            Scripted::error("prompt is too long: 250000 tokens > 200000 maximum").with_latency(delay),
            after("a context overflow".to_owned()),
        ),
        _ => (Scripted::programming("TypeError", "bad argument"), "a programming error".to_owned()),
    }
}

/// How one exec ended, for the failure messages and the coverage checks.
struct Run {
    elapsed: Duration,
    calls: u64,
    result: Result<Reply, ExecError>,
}

async fn run(case: &Case, policy: &RetryPolicy) -> Run {
    let provider = case.provider();
    let runtime = Runtime::builder(provider.clone()).with_policy(*policy).with_jitter_seed(case.seed).build().unwrap();
    let start = Instant::now();
    let result = runtime.exec("hi").await;
    Run { elapsed: start.elapsed(), calls: provider.calls() as u64, result }
}

fn explain(case: &Case, run: &Run) -> String {
    let ended = match &run.result {
        Ok(reply) => format!("answered {:?}", reply.text()),
        Err(error) => error.to_string(),
    };
    format!(
        "seed {:#x} (replay with WORST_CASE_SEED={}): {} calls in {:?}\noutcomes:\n  {}\nended: {ended}",
        case.seed,
        case.seed,
        run.calls,
        run.elapsed,
        case.described.join("\n  ")
    )
}

/// The seeds to try: `WORST_CASE_SEED` alone when set, else `CASES` seeds from `FIRST_SEED`.
fn seeds() -> Vec<u64> {
    match std::env::var("WORST_CASE_SEED") {
        Ok(seed) => {
            vec![seed.trim().parse().expect("WORST_CASE_SEED must be a decimal u64, as the failure printed it")]
        }
        Err(_) => (FIRST_SEED..FIRST_SEED + CASES).collect(),
    }
}

#[test]
fn the_default_worst_case_reads_as_documented() {
    let policy = RetryPolicy::new();
    assert_eq!(
        policy.describe_worst_case(),
        "up to 12 model calls and 46.5 s ± 25 % of backoff per exec; a model turn ends within 15 min"
    );
    assert_eq!(policy.worst_case_calls(), 12);
    assert_eq!(policy.worst_case_turn(), Duration::from_secs(15 * 60));
}

#[tokio::test(start_paused = true)]
async fn no_sequence_of_outcomes_outlasts_the_default_worst_case() {
    let policy = RetryPolicy::new();
    let (turn, max_calls) = (policy.worst_case_turn(), policy.worst_case_calls());
    let (mut at_the_bound, mut answered, mut longest) = (0, 0, Duration::ZERO);
    for seed in seeds() {
        let case = Case::generate(seed);
        let run = run(&case, &policy).await;
        assert!(run.elapsed <= turn, "the exec outlasted the turn's {turn:?}: {}", explain(&case, &run));
        assert!(run.calls <= max_calls, "the exec made more than {max_calls} calls: {}", explain(&case, &run));
        at_the_bound += usize::from(run.elapsed == turn);
        answered += usize::from(run.result.is_ok());
        longest = longest.max(run.elapsed);
    }
    if std::env::var_os("WORST_CASE_SEED").is_none() {
        // The cases must reach the bound for the property to mean something, and not only reach it.
        assert!(at_the_bound >= 10, "only {at_the_bound} cases ended at the turn's bound");
        assert!(answered >= 10, "only {answered} cases were answered");
        assert_eq!(longest, turn);
    }
}

#[tokio::test(start_paused = true)]
async fn no_sequence_of_outcomes_outlasts_a_budget() {
    let mut at_the_budget = 0;
    for seed in seeds() {
        // From the case's seed too, so that `WORST_CASE_SEED` replays the budget with the outcomes.
        let budget = fastrand::Rng::with_seed(!seed).u64(1_000..=600_000);
        let policy = RetryPolicy::new().with_budget_ms(Some(budget));
        let budget = Duration::from_millis(budget);
        assert_eq!(policy.worst_case_turn(), budget, "a budget under 15 min is the turn's bound");
        let case = Case::generate(seed);
        let run = run(&case, &policy).await;
        assert!(run.elapsed <= budget, "the exec outlasted its budget of {budget:?}: {}", explain(&case, &run));
        assert!(run.calls <= policy.worst_case_calls(), "too many calls: {}", explain(&case, &run));
        at_the_budget += usize::from(run.elapsed == budget);
    }
    if std::env::var_os("WORST_CASE_SEED").is_none() {
        assert!(at_the_budget >= 10, "only {at_the_budget} cases ended at their budget");
    }
}

#[tokio::test(start_paused = true)]
async fn an_exec_whose_calls_never_return_ends_at_the_turns_bound() {
    let provider = ScriptedProvider::new([]).otherwise(Scripted::hang());
    let policy = RetryPolicy::new();
    let start = Instant::now();
    let error = Runtime::builder(provider.clone()).with_jitter_seed(7).build().unwrap().exec("hi").await.unwrap_err();
    assert_eq!(start.elapsed(), policy.worst_case_turn());
    // Each hang is cut by the first-token bound (300 s), the third by the turn's deadline (at
    // 294 s and some ms: the jittered sleeps took the rest); no retry fits after it.
    assert_eq!(provider.calls(), 3);
    let first = error.decisions()[0].error();
    assert_eq!(first, "TimeoutError: model call timed out: no content after 300 s (`first_token_timeout_ms` = 300000)");
    let last = &error.attempt_errors()[0];
    assert!(last.starts_with("TimeoutError: model call timed out after 294."), "{last}");
    assert!(last.ends_with(" s, at the model turn's deadline (`turn_timeout_ms` = 900000)"), "{last}");
    let stopped_by = error.stopped_by().unwrap_or_default();
    assert!(stopped_by.starts_with("`turn_timeout_ms` (900000) would run out: the wait of "), "{stopped_by}");
    assert!(stopped_by.ends_with(" does not fit in the 0 s left"), "{stopped_by}");
}
