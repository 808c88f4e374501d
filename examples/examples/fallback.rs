//! A provider's bad hour, in under five seconds: fallback from one provider to another, and the
//! circuit breaker that spares the one that is down and brings the traffic back when it recovers
//! (no API key, no network).
//!
//! Two embedded chaos servers on 127.0.0.1: the primary speaks Chat Completions and has a scripted
//! outage (every request a 503 from 0.6 s to 2.6 s after the start), the secondary speaks
//! Anthropic Messages and is healthy. One runtime, `Runtime::builder(primary).with_fallback(secondary).build().unwrap()`,
//! with a short breaker for the demo (opens at 50 % failures of at least 4 calls in 10 s, open for
//! 1 s; the defaults are 20 calls, 10 s and 30 s), runs small concurrent waves of execs over the
//! outage and after it. The example prints each event as it happens: every decision of the layers
//! (a retry, a move to the next target), every answer with the target that gave it
//! (`Reply::target`), every transition of a breaker (the `agentic.breaker.transitions` metric,
//! a `tracing` event of target `agentic::metrics`). Then a summary: the requests each server got
//! before, during and after the outage (from the chaos servers' journals), the primary's breaker
//! over time (`Runtime::targets`, every 250 ms), and when the traffic came back to the primary.
//!
//! It exits non-zero if an exec failed, the breaker never opened, or the traffic did not come back
//! to the primary.
//!
//! ```text
//! cargo run --example fallback
//! ```

use std::fmt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use agentic_chaos::{ChaosServer, JournalEntry, Outage, Scenario, Step};
use agentic_runtime::decision::Decision;
use agentic_runtime::decision::Verdict;
use agentic_runtime::provider::{AnthropicProvider, OpenAiProvider};
use agentic_runtime::storm::BreakerSettings;
use agentic_runtime::{RetryPolicy, Runtime};
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};

/// The primary is down from `OUTAGE_FROM` (included) to `OUTAGE_UNTIL` (excluded), from the start.
const OUTAGE_FROM: Duration = Duration::from_millis(600);
const OUTAGE_UNTIL: Duration = Duration::from_millis(2_600);
/// The demo breaker's open period (the default is 30 s).
const OPEN_FOR: Duration = Duration::from_secs(1);
/// A wave of execs starts every `WAVE_EVERY`, until `RUN_FOR`: long enough after the outage for
/// the breaker's last open period (up to `OPEN_FOR` past the outage's end), its probe, and a few
/// waves on the primary again.
const WAVE_EVERY: Duration = Duration::from_millis(150);
const WAVE_SIZE: usize = 2;
const RUN_FOR: Duration = Duration::from_millis(4_500);
/// How often the summary's view of the breaker (`Runtime::targets`) is sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// Short delays, so that the demo runs in seconds: 4 session calls (20, 40, 80 ms apart) per
/// attempt, and a timeout per call so that nothing can hang the demo.
const POLICY: RetryPolicy =
    RetryPolicy::new().with_session_base_delay_ms(20).with_exec_base_delay_ms(30).with_timeout_ms(5_000);

const PRIMARY: &str = "openai/gpt-demo";
const SECONDARY: &str = "anthropic/claude-demo";

/// Seconds since the start, for the timeline.
fn at(start: Instant) -> f64 {
    start.elapsed().as_secs_f64()
}

/// What one exec came to.
struct Ended {
    started: Duration,
    target: Option<String>,
    failed: bool,
}

/// When the run began: the timeline's zero, set once before the first exec.
static START: OnceLock<Instant> = OnceLock::new();

/// Seconds since the run began.
fn since_start() -> f64 {
    START.get().map_or(0.0, |start| at(*start))
}

/// One line per decision, as the layers make it (before the sleep they announce), labelled with
/// the exec it belongs to: one observer hears every exec, and `Decision::exec_id` tells them apart.
fn print_decision(decision: &Decision) {
    let exec = decision.exec_id();
    let what = if decision.verdict() == Verdict::Fallback {
        decision.reason().to_string()
    } else {
        let delay = decision.delay().map_or_else(String::new, |delay| format!(", sleeping {} ms", delay.as_millis()));
        // The error's type and status ("ServiceUnavailableError: 503"), not the provider's sentence.
        let error = decision.error().split_whitespace().take(2).collect::<Vec<_>>().join(" ");
        format!("{} call {}: {error} -> {}{delay}", decision.layer().name(), decision.call(), decision.verdict())
    };
    println!("{:6.3} s  exec {exec:>2}  {what}", since_start());
}

/// Runs one exec (question `n`) on a clone of `runtime`.
async fn run_exec(runtime: Runtime, start: Instant, n: usize) -> Ended {
    let started = start.elapsed();
    match runtime.exec(format!("question {n}")).await {
        Ok(reply) => {
            let (exec, target) = (reply.exec_id(), reply.target().unwrap_or("?").to_owned());
            println!("{:6.3} s  exec {exec:>2}  answered by {target} after {} calls", at(start), reply.calls());
            Ended { started, target: Some(target), failed: false }
        }
        Err(error) => {
            let exec = error.exec_id().unwrap_or_default();
            println!("{:6.3} s  exec {exec:>2}  FAILED: {error}", at(start));
            Ended { started, target: error.target().map(str::to_owned), failed: true }
        }
    }
}

/// Samples the primary's breaker (`Runtime::targets`) every `every` until `stop`.
async fn sample_breaker(runtime: Runtime, every: Duration, stop: Arc<AtomicBool>) -> Vec<String> {
    let mut samples = Vec::new();
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let state = runtime.targets().into_iter().next().and_then(|target| target.breaker);
        samples.push(state.map_or_else(|| "none".to_owned(), |state| state.name().to_owned()));
    }
    samples
}

/// Prints each breaker transition as it happens and counts them: a `tracing` layer that reads the
/// `agentic.breaker.transitions` metric events (target `agentic::metrics`).
struct Transitions {
    start: Instant,
    seen: Arc<Mutex<Vec<String>>>,
}

/// The fields of one metric event that the example reads.
#[derive(Default)]
struct MetricFields {
    metric: Option<String>,
    target: Option<String>,
    state: Option<String>,
}

impl Visit for MetricFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        let slot = match field.name() {
            "metric" => &mut self.metric,
            "agentic.target" => &mut self.target,
            "agentic.breaker.state" => &mut self.state,
            _ => return,
        };
        *slot = Some(value.to_owned());
    }

    fn record_debug(&mut self, _field: &Field, _value: &dyn fmt::Debug) {}
}

impl<S: tracing::Subscriber> Layer<S> for Transitions {
    fn on_event(&self, event: &tracing::Event<'_>, _context: Context<'_, S>) {
        if event.metadata().target() != "agentic::metrics" {
            return;
        }
        let mut fields = MetricFields::default();
        event.record(&mut fields);
        let (Some("agentic.breaker.transitions"), Some(target), Some(state)) =
            (fields.metric.as_deref(), fields.target, fields.state)
        else {
            return;
        };
        println!("{:6.3} s  breaker of {target} -> {state}", at(self.start));
        let line = format!("{state} at {:.3} s", at(self.start));
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).push(line);
    }
}

/// Requests of `journal` before, during and after the outage, by the server's clock.
fn by_phase(journal: &[JournalEntry]) -> [usize; 3] {
    let mut counts = [0; 3];
    for entry in journal {
        let at = Duration::from_millis(entry.at_ms);
        let phase = if at < OUTAGE_FROM {
            0
        } else if entry.outage || at < OUTAGE_UNTIL {
            1
        } else {
            2
        };
        counts[phase] += 1;
    }
    counts
}

#[tokio::main]
async fn main() -> ExitCode {
    let outage = Outage::new(OUTAGE_FROM, OUTAGE_UNTIL);
    let primary_server =
        ChaosServer::start(Scenario::new().otherwise(Step::ok("Answered by the primary.")).with_outage(outage)).await;
    let secondary_server = ChaosServer::start(Scenario::new().otherwise(Step::ok("Answered by the secondary."))).await;
    let (primary_server, secondary_server) = match (primary_server, secondary_server) {
        (Ok(primary), Ok(secondary)) => (primary, secondary),
        (Err(error), _) | (_, Err(error)) => {
            eprintln!("cannot start a chaos server: {error}");
            return ExitCode::FAILURE;
        }
    };
    let breaker = match BreakerSettings::new(50, 4, Duration::from_secs(10), OPEN_FOR) {
        Ok(breaker) => breaker,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = Runtime::builder(OpenAiProvider::new(primary_server.openai_base_url(), None).with_model("gpt-demo"))
        .with_fallback(AnthropicProvider::new(secondary_server.anthropic_base_url(), None).with_model("claude-demo"))
        .with_breaker(breaker)
        .with_policy(POLICY)
        .with_jitter_seed(25)
        .with_observer(print_decision)
        .build()
        .expect("the demo's settings are valid");
    println!(
        "primary {PRIMARY} (Chat Completions): a 503 for every request from {:.1} s to {:.1} s; secondary {SECONDARY} \
         (Anthropic Messages): healthy",
        OUTAGE_FROM.as_secs_f64(),
        OUTAGE_UNTIL.as_secs_f64()
    );
    println!(
        "breaker for the demo: opens at {} % failures of at least {} calls in {} s, open for {} s (the defaults, \
         BreakerSettings::standard(): 50 %, 20 calls, 10 s, 30 s)",
        breaker.failure_percent(),
        breaker.min_calls(),
        breaker.window().as_secs(),
        breaker.open_for().as_secs_f64()
    );
    println!("{WAVE_SIZE} execs every {} ms for {:.1} s\n", WAVE_EVERY.as_millis(), RUN_FOR.as_secs_f64());

    // Both scenario clocks (the outage's) start now.
    primary_server.reset();
    secondary_server.reset();
    let start = *START.get_or_init(Instant::now);
    let transitions = Arc::new(Mutex::new(Vec::new()));
    let layer = Transitions { start, seen: transitions.clone() };
    if let Err(error) = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)) {
        eprintln!("cannot watch the breaker's metric: {error}");
        return ExitCode::FAILURE;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn(sample_breaker(runtime.clone(), SAMPLE_EVERY, stop.clone()));
    let mut execs = Vec::new();
    let mut waves = tokio::time::interval(WAVE_EVERY);
    while start.elapsed() < RUN_FOR {
        waves.tick().await;
        for _ in 0..WAVE_SIZE {
            execs.push(tokio::spawn(run_exec(runtime.clone(), start, execs.len())));
        }
    }
    let mut ended = Vec::new();
    for exec in execs {
        match exec.await {
            Ok(exec) => ended.push(exec),
            Err(error) => ended.push(Ended { started: Duration::ZERO, target: None, failed: !error.is_cancelled() }),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let samples = sampler.await.unwrap_or_default();
    let (primary, secondary) = (primary_server.journal(), secondary_server.journal());
    primary_server.shutdown().await;
    secondary_server.shutdown().await;

    println!("\nsummary");
    let failed = ended.iter().filter(|exec| exec.failed).count();
    println!("  execs: {} run, {} answered, {failed} failed", ended.len(), ended.len() - failed);
    let phases = ["before the outage", "during it", "after it"];
    let [p, s] = [by_phase(&primary), by_phase(&secondary)];
    println!("  requests        {:>20} {:>10} {:>10}", phases[0], phases[1], phases[2]);
    println!("    {PRIMARY:<22} {:>10} {:>10} {:>10}", p[0], p[1], p[2]);
    println!("    {SECONDARY:<22} {:>10} {:>10} {:>10}", s[0], s[1], s[2]);
    let answered = |target: &str, from: Duration, until: Duration| {
        ended
            .iter()
            .filter(|exec| exec.started >= from && exec.started < until && exec.target.as_deref() == Some(target))
            .count()
    };
    let windows = [(Duration::ZERO, OUTAGE_FROM), (OUTAGE_FROM, OUTAGE_UNTIL), (OUTAGE_UNTIL, Duration::MAX)];
    println!("  answers, by the exec's start");
    for target in [PRIMARY, SECONDARY] {
        let [a, b, c] = windows.map(|(from, until)| answered(target, from, until));
        println!("    {target:<22} {a:>10} {b:>10} {c:>10}");
    }
    let transitions = transitions.lock().unwrap_or_else(PoisonError::into_inner).join(", ");
    let opened = !transitions.is_empty();
    println!("  breaker transitions: {}", if opened { transitions.as_str() } else { "none (it never opened)" });
    println!("  breaker of {PRIMARY} every {} ms (Runtime::targets):", SAMPLE_EVERY.as_millis());
    for (row, chunk) in samples.chunks(4).enumerate() {
        let from = SAMPLE_EVERY * (4 * row as u32 + 1);
        println!("    from {:.2} s: {}", from.as_secs_f64(), chunk.join(", "));
    }

    // Back: the first answer the primary sent after the outage, and every exec of the last
    // `OPEN_FOR / 2` answered by it.
    let back = primary.iter().find(|entry| !entry.outage && Duration::from_millis(entry.at_ms) >= OUTAGE_UNTIL);
    let tail: Vec<&Ended> = ended.iter().filter(|exec| exec.started + OPEN_FOR / 2 >= RUN_FOR).collect();
    let stayed_back = !tail.is_empty() && tail.iter().all(|exec| exec.target.as_deref() == Some(PRIMARY));
    match back {
        Some(entry) => println!(
            "  traffic back on {PRIMARY} at {:.3} s, {} ms after the outage ended (at most one open period, {} ms, \
             plus a probe)",
            entry.at_ms as f64 / 1000.0,
            Duration::from_millis(entry.at_ms).saturating_sub(OUTAGE_UNTIL).as_millis(),
            OPEN_FOR.as_millis()
        ),
        None => println!("  traffic never came back to {PRIMARY}"),
    }
    if failed > 0 || back.is_none() || !stayed_back || !opened {
        eprintln!(
            "FAILED: {failed} execs failed; the breaker opened: {opened}; traffic back on the primary: {}; the last \
             execs all on it: {stayed_back}",
            back.is_some()
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
