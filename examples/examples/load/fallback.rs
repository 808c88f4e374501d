//! The load example's fallback mode (`--fallback`): a primary that is down or wobbling, a healthy
//! secondary, and what the circuit breaker changes, side by side with the breaker off.
//!
//! Each run starts two chaos servers on 127.0.0.1, the primary on the Chat Completions wire and
//! the secondary on Anthropic Messages, and one `Runtime::builder(primary).with_fallback(secondary).build().unwrap()`
//! with the load example's policy. The breaker is on with its defaults
//! ([`BreakerSettings::standard`]) or off (the same settings with a `min_calls` no run reaches, so
//! that it never opens). The runs:
//! - **outage**: every request to the primary a 503; N execs started evenly over 50 ms, the first
//!   run from a cold process (no call made before it, as a user's first burst; `--warm` makes one
//!   exec that meets a 503 first, so that the classifier's tables are built before the burst). Then, the
//!   breaker being open (or not), the latency once open: one exec at a time through the fallback
//!   runtime, interleaved with one through a runtime on the secondary alone.
//! - **wobble**: 30 % of the primary's requests a 503 (the load example's seeded scenario).
//! - **recovery**: the primary down from the start until T, execs at a steady rate until T plus
//!   one open period and a few seconds: when the traffic came back to the primary.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agentic_chaos::{ChaosServer, JournalEntry, Outage, Scenario, Step};
use agentic_runtime::provider::{AnthropicProvider, OpenAiProvider};
use agentic_runtime::storm::{BreakerSettings, BreakerState};
use agentic_runtime::{ExecError, Reply, Runtime};
use serde_json::{Value, json};

use super::{Config, POLICY, percentile, scenario};

const PRIMARY: &str = "openai/primary";
const SECONDARY: &str = "anthropic/secondary";

/// A `min_calls` no run reaches: the breaker "off" keeps its window but never opens.
const NEVER: u32 = 1_000_000;

/// The execs of a run are started evenly over this by default: a burst faster than the first
/// answers come back (200 execs over 50 ms).
pub(super) const SPREAD: Duration = Duration::from_millis(50);

/// Execs of the latency-once-open phase, each alone (and as many on the secondary alone).
const SEQUENTIAL: usize = 500;

/// The recovery run's traffic: one exec every `RECOVERY_EVERY`.
const RECOVERY_EVERY: Duration = Duration::from_millis(10);

/// How long the recovery run goes on after one open period past the outage's end.
const RECOVERY_TAIL: Duration = Duration::from_secs(3);

/// What the fallback mode runs.
pub(super) struct FallbackArgs {
    /// The N of the outage and wobble runs; `None`: 200 and 1 000 (the wobble at 1 000).
    pub(super) calls: Option<usize>,
    /// When the recovery run's outage ends.
    pub(super) recovery: Duration,
    /// `--only outage|wobble|recovery`: that kind of run alone.
    pub(super) only: Option<&'static str>,
    /// The outage and wobble runs start their execs evenly over this.
    pub(super) spread: Duration,
    pub(super) json: bool,
    /// `--warm`: one exec that meets a 503 before the runs (the cold process's first burst otherwise).
    pub(super) warm: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Outage,
    Wobble,
    Recovery,
}

/// The values of `--only`.
pub(super) const KINDS: [&str; 3] = ["outage", "wobble", "recovery"];

impl Kind {
    /// Its value of `--only`.
    fn flag(self) -> &'static str {
        match self {
            Kind::Outage => KINDS[0],
            Kind::Wobble => KINDS[1],
            Kind::Recovery => KINDS[2],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Outage => "outage",
            Kind::Wobble => "wobble 30 %",
            Kind::Recovery => "recovery",
        }
    }
}

/// What one exec came to.
struct Ended {
    started: Duration,
    latency: Duration,
    /// Answered by the primary (`Some(true)`), the secondary (`Some(false)`), or not at all.
    on_primary: Option<bool>,
    error: Option<&'static str>,
    /// Answered by the secondary in one call: the primary was skipped at no cost.
    skipped: bool,
}

impl Ended {
    fn new(result: &Result<Reply, ExecError>, started: Duration, latency: Duration) -> Self {
        match result {
            Ok(reply) => {
                let on_primary = reply.target() == Some(PRIMARY);
                Self {
                    started,
                    latency,
                    on_primary: Some(on_primary),
                    error: None,
                    skipped: !on_primary && reply.calls() == 1,
                }
            }
            Err(error) => Self { started, latency, on_primary: None, error: Some(error.kind().name()), skipped: false },
        }
    }
}

/// The latency once the primary is skipped (or, breaker off, refused by its empty retry quota).
struct Sequential {
    p50: Duration,
    mean: Duration,
    alone_p50: Duration,
    alone_mean: Duration,
    primary_requests: usize,
}

/// One run's figures.
struct Run {
    kind: Kind,
    calls: usize,
    breaker_on: bool,
    answered: usize,
    errors: usize,
    on_primary: usize,
    on_secondary: usize,
    skipped: usize,
    primary_requests: usize,
    secondary_requests: usize,
    /// The primary's breaker: each change of state, with when (from the run's start).
    transitions: Vec<(Duration, String)>,
    p50: Duration,
    p99: Duration,
    wall: Duration,
    sequential: Option<Sequential>,
    /// Recovery: the first answer of the primary after its outage, from the outage's end; and the
    /// execs started after that answer that went to the secondary anyway.
    back_after: Option<Duration>,
    flapped: usize,
}

fn settings(breaker_on: bool) -> BreakerSettings {
    let standard = BreakerSettings::standard();
    if breaker_on {
        return standard;
    }
    BreakerSettings::new(standard.failure_percent(), NEVER, standard.window(), standard.open_for())
        .expect("the standard settings with a larger min_calls are valid")
}

/// Watches the primary's breaker every millisecond until `stop`, and returns its changes.
fn watch(runtime: Runtime, start: Instant, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<Vec<(Duration, String)>> {
    tokio::spawn(async move {
        let (mut last, mut changes) = ("closed", Vec::new());
        let mut tick = tokio::time::interval(Duration::from_millis(1));
        while !stop.load(Ordering::Relaxed) {
            tick.tick().await;
            let state = runtime.targets().first().and_then(|target| target.breaker);
            let name = state.map_or("none", |state| state.name());
            if name != last {
                last = name;
                let text = match state {
                    Some(BreakerState::Open { opened, .. }) => format!("open (after {opened})"),
                    _ => name.to_owned(),
                };
                changes.push((start.elapsed(), text));
            }
        }
        changes
    })
}

/// One exec that meets a 503, before the runs (`--warm`): what the example did before the runtime
/// built the classifier's tables with its first runtime with fallbacks, for the figures side by side.
async fn warm_up() -> std::io::Result<()> {
    let server = ChaosServer::start(Scenario::new().then(Step::http_error(503)).otherwise(Step::ok("fine"))).await?;
    let runtime =
        Runtime::builder(OpenAiProvider::new(server.openai_base_url(), None)).with_policy(POLICY).build().unwrap();
    let warmed = runtime.request("warm up").policy(&POLICY).send().await;
    server.shutdown().await;
    warmed.map(drop).map_err(|error| std::io::Error::other(format!("the warm-up exec failed: {error}")))
}

/// Starts `calls` execs evenly over `over` and waits for them all.
async fn drive(runtime: &Runtime, calls: usize, over: Duration, start: Instant) -> Vec<Ended> {
    let mut handles = Vec::with_capacity(calls);
    let begin = tokio::time::Instant::now();
    for index in 0..calls {
        tokio::time::sleep_until(begin + over.mul_f64(index as f64 / calls as f64)).await;
        let runtime = runtime.clone();
        handles.push(tokio::spawn(async move {
            let started = start.elapsed();
            let submitted = Instant::now();
            let result = runtime.request(format!("fallback call {index}")).policy(&POLICY).send().await;
            Ended::new(&result, started, submitted.elapsed())
        }));
    }
    let mut ended = Vec::with_capacity(calls);
    for handle in handles {
        ended.push(handle.await.unwrap_or(Ended {
            started: Duration::ZERO,
            latency: Duration::ZERO,
            on_primary: None,
            error: Some("panicked"),
            skipped: false,
        }));
    }
    ended
}

/// One exec at a time, through `runtime` and through `alone` in turn, `SEQUENTIAL` each.
async fn sequential(runtime: &Runtime, alone: &Runtime, primary: &ChaosServer) -> Sequential {
    let before = primary.requests_served();
    let (mut through, mut direct) = (Vec::with_capacity(SEQUENTIAL), Vec::with_capacity(SEQUENTIAL));
    for index in 0..SEQUENTIAL {
        for (runtime, latencies) in [(runtime, &mut through), (alone, &mut direct)] {
            let submitted = Instant::now();
            let result = runtime.request(format!("sequential call {index}")).policy(&POLICY).send().await;
            latencies.push(submitted.elapsed());
            if let Err(error) = result {
                eprintln!("sequential call {index}: {error}");
            }
        }
    }
    let mean = |latencies: &[Duration]| latencies.iter().sum::<Duration>() / latencies.len().max(1) as u32;
    let (p50_through, p50_direct) = {
        through.sort_unstable();
        direct.sort_unstable();
        (percentile(&through, 50), percentile(&direct, 50))
    };
    Sequential {
        p50: p50_through,
        mean: mean(&through),
        alone_p50: p50_direct,
        alone_mean: mean(&direct),
        primary_requests: primary.requests_served() - before,
    }
}

async fn run(kind: Kind, calls: usize, breaker_on: bool, recovery: Duration, spread: Duration) -> std::io::Result<Run> {
    let primary_scenario = match kind {
        Kind::Outage => Scenario::new().otherwise(Step::http_error(503)),
        Kind::Wobble => scenario(Config { calls, errors: 30, bucket_off: false }),
        Kind::Recovery => {
            Scenario::new().otherwise(Step::ok("fine")).with_outage(Outage::new(Duration::ZERO, recovery))
        }
    };
    let primary = ChaosServer::start(primary_scenario).await?;
    let secondary = ChaosServer::start(Scenario::new().otherwise(Step::ok("fine"))).await?;
    let secondary_provider = || AnthropicProvider::new(secondary.anthropic_base_url(), None).with_model("secondary");
    let runtime = Runtime::builder(OpenAiProvider::new(primary.openai_base_url(), None).with_model("primary"))
        .with_fallback(secondary_provider())
        .with_breaker(settings(breaker_on))
        .with_policy(POLICY)
        .with_jitter_seed(7)
        .build()
        .unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    primary.reset();
    secondary.reset();
    let start = Instant::now();
    let watcher = watch(runtime.clone(), start, stop.clone());
    let (calls, over) = match kind {
        Kind::Recovery => {
            let length = recovery + BreakerSettings::standard().open_for() + RECOVERY_TAIL;
            ((length.as_nanos() / RECOVERY_EVERY.as_nanos()) as usize, length)
        }
        _ => (calls, spread),
    };
    let ended = drive(&runtime, calls, over, start).await;
    let wall = start.elapsed();
    let (primary_journal, secondary_journal) = (primary.journal(), secondary.journal());
    let sequential = if kind == Kind::Outage {
        let alone = Runtime::builder(secondary_provider()).with_policy(POLICY).with_jitter_seed(7).build().unwrap();
        Some(sequential(&runtime, &alone, &primary).await)
    } else {
        None
    };
    stop.store(true, Ordering::Relaxed);
    let transitions = watcher.await.unwrap_or_default();
    primary.shutdown().await;
    secondary.shutdown().await;

    let mut latencies: Vec<Duration> = ended.iter().map(|exec| exec.latency).collect();
    latencies.sort_unstable();
    let count = |test: fn(&Ended) -> bool| ended.iter().filter(|exec| test(exec)).count();
    let back = first_answer_after(&primary_journal, recovery).filter(|_| kind == Kind::Recovery);
    let back_after = back.map(|at| at.saturating_sub(recovery));
    let flapped = back.map_or(0, |back| {
        ended
            .iter()
            .filter(|exec| exec.started > back + Duration::from_millis(1) && exec.on_primary == Some(false))
            .count()
    });
    Ok(Run {
        kind,
        calls,
        breaker_on,
        answered: count(|exec| exec.error.is_none()),
        errors: count(|exec| exec.error.is_some()),
        on_primary: count(|exec| exec.on_primary == Some(true)),
        on_secondary: count(|exec| exec.on_primary == Some(false)),
        skipped: count(|exec| exec.skipped),
        primary_requests: primary_journal.len(),
        secondary_requests: secondary_journal.len(),
        transitions,
        p50: percentile(&latencies, 50),
        p99: percentile(&latencies, 99),
        wall,
        sequential,
        back_after,
        flapped,
    })
}

/// When the primary first answered after `until` (its scenario's clock).
fn first_answer_after(journal: &[JournalEntry], until: Duration) -> Option<Duration> {
    journal
        .iter()
        .filter(|entry| !entry.outage && Duration::from_millis(entry.at_ms) >= until)
        .map(|entry| Duration::from_millis(entry.at_ms))
        .min()
}

fn us(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

fn transitions_text(run: &Run) -> String {
    if run.transitions.is_empty() {
        return "stayed closed".to_owned();
    }
    run.transitions.iter().map(|(at, state)| format!("{state} at {} ms", at.as_millis())).collect::<Vec<_>>().join(", ")
}

fn to_json(run: &Run) -> Value {
    let sequential = run.sequential.as_ref().map(|s| {
        json!({
            "calls": SEQUENTIAL,
            "p50_us": us(s.p50), "mean_us": us(s.mean),
            "secondary_alone_p50_us": us(s.alone_p50), "secondary_alone_mean_us": us(s.alone_mean),
            "added_p50_us": us(s.p50) - us(s.alone_p50), "added_mean_us": us(s.mean) - us(s.alone_mean),
            "primary_requests": s.primary_requests,
        })
    });
    json!({
        "run": run.kind.name(), "calls": run.calls, "breaker": if run.breaker_on { "on" } else { "off" },
        "answered": run.answered, "errors": run.errors, "on_primary": run.on_primary,
        "on_secondary": run.on_secondary, "skipped_at_no_cost": run.skipped,
        "primary_requests": run.primary_requests, "secondary_requests": run.secondary_requests,
        "breaker_transitions": run.transitions.iter().map(|(at, state)| json!({"at_ms": at.as_millis() as u64, "state": state})).collect::<Vec<_>>(),
        "p50_ms": run.p50.as_secs_f64() * 1000.0, "p99_ms": run.p99.as_secs_f64() * 1000.0,
        "wall_ms": run.wall.as_secs_f64() * 1000.0,
        "latency_once_open": sequential,
        "back_on_primary_after_ms": run.back_after.map(|at| at.as_millis() as u64),
        "on_secondary_after_back": run.flapped,
    })
}

/// Runs the fallback matrix and prints it (a table, or one JSON line per run).
pub(super) async fn main(args: FallbackArgs) -> std::io::Result<()> {
    let standard = BreakerSettings::standard();
    let note = |line: &str| if args.json { eprintln!("{line}") } else { println!("{line}") };
    note(&format!(
        "fallback: primary {PRIMARY} (Chat Completions), secondary {SECONDARY} (Anthropic Messages); breaker on: \
         BreakerSettings::standard() ({} % of at least {} calls in {} s, open {} s); off: min_calls {NEVER}; execs \
         started evenly over {} ms; {}",
        standard.failure_percent(),
        standard.min_calls(),
        standard.window().as_secs(),
        standard.open_for().as_secs(),
        args.spread.as_millis(),
        if args.warm {
            "after a warm-up exec that met a 503"
        } else {
            "the first run from a cold process (no warm-up)"
        }
    ));
    let sizes = args.calls.map_or(vec![200, 1_000], |n| vec![n]);
    let wobble = args.calls.unwrap_or(1_000);
    let mut plan: Vec<(Kind, usize)> = sizes.iter().map(|&n| (Kind::Outage, n)).collect();
    plan.push((Kind::Wobble, wobble));
    plan.push((Kind::Recovery, 0));
    plan.retain(|(kind, _)| args.only.is_none_or(|only| only == kind.flag()));
    if args.warm {
        warm_up().await?;
    }
    let mut runs = Vec::new();
    for (kind, calls) in plan {
        for breaker_on in [true, false] {
            eprintln!(
                "fallback run: {}, N = {calls}, breaker {} ...",
                kind.name(),
                if breaker_on { "on" } else { "off" }
            );
            let run = run(kind, calls, breaker_on, args.recovery, args.spread).await?;
            if args.json {
                println!("{}", to_json(&run));
            }
            runs.push(run);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    if args.json {
        return Ok(());
    }
    println!(
        "\n| run | N | breaker | answered | errors | primary requests | secondary requests | on primary | on secondary \
         | skipped at no cost | p50 ms | p99 ms | wall s | the primary's breaker |\n|:---|---:|:---:|---:|---:|---:|---:|---:\
         |---:|---:|---:|---:|---:|:---|"
    );
    for run in &runs {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {} |",
            run.kind.name(),
            run.calls,
            if run.breaker_on { "on" } else { "off" },
            run.answered,
            run.errors,
            run.primary_requests,
            run.secondary_requests,
            run.on_primary,
            run.on_secondary,
            run.skipped,
            run.p50.as_secs_f64() * 1000.0,
            run.p99.as_secs_f64() * 1000.0,
            run.wall.as_secs_f64(),
            transitions_text(run)
        );
    }
    println!(
        "\nlatency once open: {SEQUENTIAL} execs one at a time through the fallback runtime, each followed by one on a \
         runtime on the secondary alone\n\n| N before | breaker | p50 µs | mean µs | secondary alone p50 µs | mean µs | \
         added p50 µs | added mean µs | primary requests |\n|---:|:---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for run in &runs {
        let Some(s) = &run.sequential else { continue };
        println!(
            "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:+.0} | {:+.0} | {} |",
            run.calls,
            if run.breaker_on { "on" } else { "off" },
            us(s.p50),
            us(s.mean),
            us(s.alone_p50),
            us(s.alone_mean),
            us(s.p50) - us(s.alone_p50),
            us(s.mean) - us(s.alone_mean),
            s.primary_requests
        );
    }
    println!(
        "\nrecovery: the primary down until {} ms, one exec every {} ms until one open period ({} s) and {} s later",
        args.recovery.as_millis(),
        RECOVERY_EVERY.as_millis(),
        standard.open_for().as_secs(),
        RECOVERY_TAIL.as_secs()
    );
    for run in runs.iter().filter(|run| run.kind == Kind::Recovery) {
        println!(
            "  breaker {}: back on the primary {} after the outage ended; {} execs started after that went to the \
             secondary",
            if run.breaker_on { "on" } else { "off" },
            run.back_after.map_or_else(|| "NEVER".to_owned(), |at| format!("{} ms", at.as_millis())),
            run.flapped
        );
    }
    println!("\nthe breaker's goals, breaker on:");
    for (goal, passed) in goals(&runs) {
        println!("  {}: {goal}", if passed { "PASS" } else { "FAIL" });
    }
    Ok(())
}

/// Under a full outage at N = 200, the primary gets at most this many requests.
const OUTAGE_200_LIMIT: usize = 60;

/// At N = 1 000, at most this many more than at N = 200 ("a few dozen").
const OUTAGE_1000_MORE: usize = 60;

/// Once open, a fallback exec may take at most this much longer than one on the secondary alone.
const ADDED_LIMIT: Duration = Duration::from_millis(1);

/// The breaker's goals, checked on the runs made with it on (a goal whose runs were
/// not made is left out).
fn goals(runs: &[Run]) -> Vec<(String, bool)> {
    let on = |kind: Kind, calls: Option<usize>| {
        runs.iter().find(|run| run.breaker_on && run.kind == kind && calls.is_none_or(|calls| run.calls == calls))
    };
    let mut goals = Vec::new();
    let all = runs.iter().all(|run| run.errors == 0);
    goals.push((format!("every call of every run answered ({} runs)", runs.len()), all));
    let outage_200 = on(Kind::Outage, Some(200)).map(|run| run.primary_requests);
    if let Some(requests) = outage_200 {
        let text = format!("full outage, 200 execs: {requests} requests to the primary (at most {OUTAGE_200_LIMIT})");
        goals.push((text, requests <= OUTAGE_200_LIMIT));
    }
    if let (Some(base), Some(run)) = (outage_200, on(Kind::Outage, Some(1_000))) {
        let text = format!(
            "full outage, 1 000 execs: {} requests to the primary (at most {OUTAGE_1000_MORE} more than the {base} at 200)",
            run.primary_requests
        );
        goals.push((text, run.primary_requests <= base + OUTAGE_1000_MORE));
    }
    for run in runs.iter().filter(|run| run.breaker_on) {
        let Some(s) = &run.sequential else { continue };
        let added = s.p50.saturating_sub(s.alone_p50);
        let text = format!(
            "once open after {} execs, {:+.0} µs per call (p50) against the secondary alone (under {} µs)",
            run.calls,
            us(s.p50) - us(s.alone_p50),
            us(ADDED_LIMIT)
        );
        goals.push((text, added < ADDED_LIMIT && s.primary_requests == 0));
    }
    if let Some(run) = on(Kind::Wobble, None) {
        let text = format!(
            "30 % wobble, {} execs: the breaker {}; {} answered on the primary, {} on the secondary",
            run.calls,
            transitions_text(run),
            run.on_primary,
            run.on_secondary
        );
        goals.push((text, run.transitions.is_empty()));
    }
    if let Some(run) = on(Kind::Recovery, None) {
        // The probe: the next exec after the open period (one every 10 ms) and its answer, with
        // room for the machine's delays.
        let limit = BreakerSettings::standard().open_for() + RECOVERY_EVERY * 10;
        let text = format!(
            "recovery: back on the primary {} after the outage ended (within one open period plus a probe: {} ms)",
            run.back_after.map_or_else(|| "NEVER".to_owned(), |at| format!("{} ms", at.as_millis())),
            limit.as_millis()
        );
        goals.push((text, run.back_after.is_some_and(|after| after <= limit) && run.flapped == 0));
    }
    goals
}
