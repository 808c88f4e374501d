//! Load test: N concurrent agent calls through both layers against the in-process chaos server,
//! with a share of injected transient errors (HTTP 503), and what it costs.
//!
//! Each run starts a chaos server on 127.0.0.1 whose scenario is a seeded random sequence of
//! `503` and `ok` steps (calls x 12 of them, then `ok`), and one `Runtime` on an `OpenAiProvider`
//! pointed at it (one reqwest client, one retry quota for all calls). It spawns N
//! `exec_with` calls at once and reports: how they ended (answered, typed error by kind), the
//! requests the server journaled and requests per logical call, latency per logical call
//! (p50/p99/max from submission, and the difference to the 0 % run at the same N), the peak
//! memory of the process during the run (VmHWM), its peak of open file descriptors, the
//! connections the kernel dropped at the server's full accept queue, and whether nothing was lost:
//! every call ended in a reply or a typed error, each one's decisions account for each of its model
//! calls, the server's journal matches what the calls report (each injected 503 seen by one call,
//! each answer ending one call, call number by call number), and any failure that was not injected
//! is counted and shown.
//!
//! The policy has short delays (session 20/40/80 ms, exec 30/60 ms: up to 12 calls and 510 ms of
//! backoff per exec) so that a full outage ends in seconds, and a 10 s timeout per model call so
//! that a connection lost by the machine cannot hold a call for minutes.
//!
//! ```text
//! cargo run --release --example load                      # the whole matrix, as a table
//! cargo run --release --example load -- --calls 10000 --errors 100 --bucket off
//! cargo run --release --example load -- --repeat 3        # each row: the median run of 3 by p99
//! cargo run --release --example load -- --json            # one JSON line per run
//! ```
//!
//! Without `--calls`, `--errors` or `--bucket` it runs N in {1000, 10000} x errors in {0, 30, 100}
//! with the bucket on, and with the bucket off 30 % at both N and 100 % at N = 1000. Given ones
//! narrow that matrix; a 0 % run at each N is added when missing, as the latency baseline.
//! 10 000 concurrent connections need about 20 000 file descriptors (both ends are in this
//! process): the open-files limit is raised at start, and the output says when it could not be
//! raised enough. `--open-files LIMIT` sets it instead, to see what too low a limit does.
//!
//! `--fallback` runs another matrix instead: a primary in a full outage, in a 30 % wobble, and
//! recovering, with a healthy secondary (`RuntimeBuilder::with_fallback`), the circuit breaker on and off
//! (see `load/fallback.rs`):
//!
//! ```text
//! cargo run --release --example load -- --fallback                 # outage at 200 and 1 000, wobble, recovery
//! cargo run --release --example load -- --fallback --only outage   # the first run from a cold process
//! cargo run --release --example load -- --fallback --only outage --warm   # after one exec that met a 503
//! cargo run --release --example load -- --fallback --calls 1000 --spread-ms 500 --recovery-ms 5000 --json
//! ```
//!
//! `--rate-limit` runs against the chaos server's per-key rate limit instead: one warm call, then
//! a burst of 200 execs at once, under a requests limit (120 a minute) and under a tokens limit
//! that binds first, with the pacer on (`Pacing::from_headers`) and off side by side, and with
//! `--redis URL` two processes of this example sharing one `RedisStore` (see `load/rate_limit.rs`):
//! calls answered and failed, requests and 429s the server journaled, the burst's time against the
//! time the limit allows, and the paced decisions:
//!
//! ```text
//! cargo run --release --example load -- --rate-limit                  # requests and tokens, ~1 min a run
//! cargo run --release --example load -- --rate-limit --window-ms 6000 --wire anthropic --json
//! cargo run --release --example load --features redis -- --rate-limit --only redis --redis redis://127.0.0.1:6379
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agentic_chaos::{ChaosServer, Scenario, Step, StepKind};
use agentic_runtime::provider::OpenAiProvider;
use agentic_runtime::storm::RetryQuota;
use agentic_runtime::{ExecError, Reply, RetryPolicy, Runtime};
use serde_json::{Value, json};

#[path = "load/fallback.rs"]
mod fallback;
#[path = "load/rate_limit.rs"]
mod rate_limit;

const POLICY_SESSION_MS: u64 = 20;
const POLICY_EXEC_MS: u64 = 30;
const POLICY_TIMEOUT_MS: u64 = 10_000;

/// Short delays so that a full outage ends in seconds, and a timeout per model call so that a
/// connection the machine lost cannot hold a call for minutes.
const POLICY: RetryPolicy = RetryPolicy::new()
    .with_session_base_delay_ms(POLICY_SESSION_MS)
    .with_exec_base_delay_ms(POLICY_EXEC_MS)
    .with_timeout_ms(POLICY_TIMEOUT_MS);

/// Calls still running this long after the start of a run count as lost (a hang).
const RUN_LIMIT: Duration = Duration::from_secs(90);

/// How the runtime words the injected failure (the chaos server's 503 with OpenAI's body).
const INJECTED: &str = "ServiceUnavailableError: 503";

/// Under a full outage with the budget on, requests per logical call must stay at or below this
/// (N > 500).
const DRAINED_LIMIT: f64 = 1.1;

/// The retries the standard budget allows when nothing succeeds: its floor, 100 in its 60 s window.
/// A run longer than the window may be allowed another floor's worth.
const BUCKET_RETRIES: u64 = 100;

/// In a wobble, at least this share of the calls must be answered.
const WOBBLE_ANSWERED: f64 = 0.999;

const USAGE: &str = "usage: load [--calls N] [--errors PERCENT] [--bucket on|off] [--repeat R] [--json] [--open-files \
     LIMIT]\n       load --fallback [--only outage|wobble|recovery] [--calls N] [--spread-ms MS] \
     [--recovery-ms MS] [--warm] [--json]\n       load --rate-limit [--only requests|tokens|redis] [--window-ms MS] [--burst N] \
     [--wire openai|anthropic] [--redis URL] [--json]";

/// When the fallback mode's recovery run ends its outage, by default.
const RECOVERY_MS: u64 = 5_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Config {
    calls: usize,
    errors: u8,
    /// Stored as "off" so that the bucket-on run of a pair sorts first.
    bucket_off: bool,
}

impl Config {
    fn bucket(self) -> &'static str {
        if self.bucket_off { "off" } else { "on" }
    }
}

struct Args {
    runs: Vec<Config>,
    repeat: u32,
    json: bool,
    open_files: Option<u64>,
    /// `--fallback`: the fallback matrix instead.
    fallback: Option<fallback::FallbackArgs>,
}

/// A number of milliseconds from `least` to 60 000 (a minute: a run never waits longer).
fn milliseconds(flag: &str, text: &str, least: u64) -> Result<u64, String> {
    text.parse::<u64>()
        .ok()
        .filter(|ms| (least..=60_000).contains(ms))
        .ok_or(format!("`{flag} {text}`: not a number of ms from {least} to 60000"))
}

/// `on` or `off`, as true or false.
fn on_off(flag: &str, text: &str) -> Result<bool, String> {
    match text {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("`{flag} {other}`: use `on` or `off`")),
    }
}

fn parse_args() -> Result<Args, String> {
    let (mut calls, mut errors, mut bucket, mut json, mut open_files, mut repeat) = (None, None, None, false, None, 1);
    let (mut fallback, mut recovery_ms, mut spread_ms, mut only, mut warm) = (false, None, None, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("`{name}` needs a value\n{USAGE}"));
        match arg.as_str() {
            "--calls" => {
                let text = value("--calls")?;
                calls = Some(
                    text.parse::<usize>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or(format!("`--calls {text}`: not a positive number"))?,
                );
            }
            "--errors" => {
                let text = value("--errors")?;
                errors = Some(
                    text.parse::<u8>()
                        .ok()
                        .filter(|&p| p <= 100)
                        .ok_or(format!("`--errors {text}`: not a percentage (0 to 100)"))?,
                );
            }
            "--bucket" => bucket = Some(!on_off("--bucket", &value("--bucket")?)?),
            "--open-files" => {
                let text = value("--open-files")?;
                open_files = Some(text.parse::<u64>().map_err(|_| format!("`--open-files {text}`: not a number"))?);
            }
            "--repeat" => {
                let text = value("--repeat")?;
                repeat = text
                    .parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or(format!("`--repeat {text}`: not a positive number"))?;
            }
            "--json" => json = true,
            "--fallback" => fallback = true,
            "--only" => {
                let text = value("--only")?;
                let kinds = fallback::KINDS;
                only = Some(
                    kinds
                        .into_iter()
                        .find(|kind| *kind == text)
                        .ok_or(format!("`--only {text}`: use one of {}", kinds.join(", ")))?,
                );
            }
            "--warm" => warm = true,
            "--spread-ms" => spread_ms = Some(milliseconds("--spread-ms", &value("--spread-ms")?, 0)?),
            "--recovery-ms" => recovery_ms = Some(milliseconds("--recovery-ms", &value("--recovery-ms")?, 1)?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    if fallback {
        if errors.is_some() || bucket.is_some() || repeat > 1 {
            return Err(format!(
                "`--fallback` takes `--only`, `--calls`, `--spread-ms`, `--recovery-ms` and `--json`\n{USAGE}"
            ));
        }
        let recovery = Duration::from_millis(recovery_ms.unwrap_or(RECOVERY_MS));
        let spread = spread_ms.map_or(fallback::SPREAD, Duration::from_millis);
        let fallback = Some(fallback::FallbackArgs { calls, recovery, only, spread, json, warm });
        return Ok(Args { runs: Vec::new(), repeat, json, open_files, fallback });
    }
    if recovery_ms.is_some() || spread_ms.is_some() || only.is_some() || warm {
        return Err(format!("`--recovery-ms`, `--spread-ms`, `--only` and `--warm` need `--fallback`\n{USAGE}"));
    }
    let full = calls.is_none() && errors.is_none() && bucket.is_none();
    let sizes = calls.map_or(vec![1_000, 10_000], |n| vec![n]);
    let rates = errors.map_or(vec![0, 30, 100], |p| vec![p]);
    let mut runs = Vec::new();
    for &calls in &sizes {
        for &errors in &rates {
            runs.push(Config { calls, errors, bucket_off: bucket.unwrap_or(false) });
        }
        // The latency baseline of this N.
        if !rates.contains(&0) {
            runs.push(Config { calls, errors: 0, bucket_off: false });
        }
    }
    if full {
        runs.push(Config { calls: 1_000, errors: 30, bucket_off: true });
        runs.push(Config { calls: 1_000, errors: 100, bucket_off: true });
        runs.push(Config { calls: 10_000, errors: 30, bucket_off: true });
    }
    runs.sort();
    Ok(Args { runs, repeat, json, open_files, fallback: None })
}

/// The seeded scenario: `calls * 12` steps, each a 503 with probability `errors` %, then `ok`.
fn scenario(config: Config) -> Scenario {
    let mut rng = fastrand::Rng::with_seed(0x10AD ^ u64::from(config.errors));
    let mut scenario = Scenario::new().otherwise(Step::ok("fine"));
    let mut run: Option<(bool, u32)> = None;
    for _ in 0..config.calls * 12 {
        let fail = rng.u8(0..100) < config.errors;
        run = match run {
            Some((same, times)) if same == fail => Some((fail, times + 1)),
            Some((previous, times)) => {
                scenario = append(scenario, previous, times);
                Some((fail, 1))
            }
            None => Some((fail, 1)),
        };
    }
    match run {
        Some((fail, times)) => append(scenario, fail, times),
        None => scenario,
    }
}

fn append(scenario: Scenario, fail: bool, times: u32) -> Scenario {
    if fail { scenario.then_times(times, Step::http_error(503)) } else { scenario.then_times(times, Step::ok("fine")) }
}

/// What one logical call came to, kept small (10 000 of them are alive at once).
struct Outcome {
    latency: Duration,
    calls: u32,
    /// `None`: answered.
    error: Option<&'static str>,
    /// Distinct model calls that failed with the injected 503.
    injected: u32,
    /// Distinct model calls that failed otherwise (not injected: a problem of the client, the
    /// server or the machine).
    uninjected: u32,
    /// The first failure that was not injected, if any.
    uninjected_text: Option<String>,
    /// The backoff the layers decided on.
    backoff: Duration,
}

impl Outcome {
    fn new(result: &Result<Reply, ExecError>, latency: Duration) -> Self {
        let (calls, decisions, error) = match result {
            Ok(reply) => (reply.calls(), reply.decisions(), None),
            Err(error) => (error.calls(), error.decisions(), Some(error.kind().name())),
        };
        let (mut injected, mut uninjected, mut last_call, mut uninjected_text) = (0, 0, 0, None);
        for decision in decisions {
            // Both layers may decide about the same failed call: count each call once.
            if decision.call() == last_call {
                continue;
            }
            last_call = decision.call();
            if decision.error().starts_with(INJECTED) {
                injected += 1;
            } else {
                uninjected += 1;
                uninjected_text.get_or_insert_with(|| decision.error().to_owned());
            }
        }
        let backoff = decisions.iter().filter_map(|decision| decision.delay()).sum();
        Self { latency, calls, error, injected, uninjected, uninjected_text, backoff }
    }
}

/// One run's figures.
struct Report {
    config: Config,
    answered: usize,
    errors: BTreeMap<&'static str, usize>,
    lost: usize,
    /// Requests the server journaled.
    requests: usize,
    /// Requests the calls made that never reached the server (failed before it read them).
    unreached: u64,
    /// Requests that reached the server, whose answer the call never saw (it had timed out).
    unseen: u64,
    p50: Duration,
    p99: Duration,
    max: Duration,
    backoff_mean: Duration,
    /// VmHWM at the start of the run (reset to the RSS then) and at its end: the run's peak.
    hwm_before_kib: Option<u64>,
    hwm_peak_kib: Option<u64>,
    /// VmRSS after the run's server, runtime and results are dropped and the heap is trimmed.
    rss_end_kib: Option<u64>,
    peak_fds: usize,
    kernel: Kernel,
    /// The retries the budget allowed at the end of the run.
    tokens_left: Option<u64>,
    wall: Duration,
    /// Failed checks, in words; empty when every check passed.
    broken: Vec<String>,
    /// Failed model calls that were not the injected 503.
    uninjected: u64,
    /// How many calls met each failure that was not injected (their first one), by text.
    uninjected_texts: BTreeMap<String, usize>,
}

impl Report {
    fn per_call(&self) -> f64 {
        self.requests as f64 / self.config.calls as f64
    }

    fn errors_text(&self) -> String {
        if self.errors.is_empty() {
            return "0".to_owned();
        }
        self.errors.iter().map(|(kind, count)| format!("{count} {kind}")).collect::<Vec<_>>().join(", ")
    }

    /// Nothing lost and every request accounted for.
    fn consistent(&self) -> bool {
        self.lost == 0 && self.broken.is_empty()
    }
}

/// Nearest-rank percentile of sorted latencies.
fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (sorted.len() * percent).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// A field of `/proc/self/status`, in KiB.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()
}

/// The resident memory once the allocator has given back what it can: what a run left behind.
fn rss_after_trim() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of glibc's heap.
    unsafe {
        libc::malloc_trim(0);
    }
    status_kib("VmRSS:")
}

/// The kernel's TCP counters that show a listener overrun: connections dropped because the accept
/// queue was full, and SYNs sent again. They count for the whole network namespace, so other
/// programs' traffic adds to them (little, on loopback).
#[derive(Debug, Clone, Copy, Default)]
struct Kernel {
    listen_overflows: u64,
    syn_retransmits: u64,
}

impl Kernel {
    fn read() -> Self {
        let Ok(text) = std::fs::read_to_string("/proc/net/netstat") else { return Self::default() };
        let mut lines = text.lines().filter(|line| line.starts_with("TcpExt:"));
        let (Some(names), Some(values)) = (lines.next(), lines.next()) else { return Self::default() };
        let value = |wanted: &str| {
            names
                .split_whitespace()
                .zip(values.split_whitespace())
                .find(|(name, _)| *name == wanted)
                .and_then(|(_, value)| value.parse().ok())
                .unwrap_or(0)
        };
        Self { listen_overflows: value("ListenOverflows"), syn_retransmits: value("TCPSynRetrans") }
    }

    fn since(self, before: Self) -> Self {
        Self {
            listen_overflows: self.listen_overflows.saturating_sub(before.listen_overflows),
            syn_retransmits: self.syn_retransmits.saturating_sub(before.syn_retransmits),
        }
    }
}

/// Counts this process's open file descriptors every 20 ms on a thread of its own, until stopped;
/// returns the most it saw.
struct FdSampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<usize>,
}

impl FdSampler {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut peak = 0;
            while !stopped.load(Ordering::Relaxed) {
                if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
                    peak = peak.max(entries.count());
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            peak
        });
        Self { stop, thread }
    }

    fn peak(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or(0)
    }
}

async fn run(config: Config) -> std::io::Result<Report> {
    // Writing 5 to clear_refs resets VmHWM to the current RSS, so each run has its own peak.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let hwm_before_kib = status_kib("VmHWM:");
    let kernel_before = Kernel::read();
    let fds = FdSampler::start();
    let server = ChaosServer::start(scenario(config)).await?;
    let provider = OpenAiProvider::new(server.openai_base_url(), None);
    let quota = (!config.bucket_off).then(RetryQuota::standard);
    let runtime =
        Runtime::builder(provider).with_policy(POLICY).with_jitter_seed(7).with_retry_quota(quota).build().unwrap();

    let started = Instant::now();
    let mut handles = Vec::with_capacity(config.calls);
    for index in 0..config.calls {
        let runtime = runtime.clone();
        let submitted = Instant::now();
        handles.push(tokio::spawn(async move {
            let result = runtime.request(format!("load call {index}")).policy(&POLICY).send().await;
            Outcome::new(&result, submitted.elapsed())
        }));
    }
    let deadline = tokio::time::Instant::from_std(started + RUN_LIMIT);
    let mut outcomes = Vec::with_capacity(config.calls);
    let (mut panicked, mut hung) = (0, 0);
    for mut handle in handles {
        match tokio::time::timeout_at(deadline, &mut handle).await {
            Ok(Ok(outcome)) => outcomes.push(outcome),
            Ok(Err(_)) => panicked += 1,
            Err(_) => {
                hung += 1;
                handle.abort();
            }
        }
    }
    let wall = started.elapsed();
    let hwm_peak_kib = status_kib("VmHWM:");
    let kernel = Kernel::read().since(kernel_before);
    let tokens_left = runtime.retry_quota_left();
    let journal = server.journal();
    drop(runtime);
    server.shutdown().await;
    let peak_fds = fds.peak();

    // Nothing lost: every call ended, in a reply or a typed error.
    let answered = outcomes.iter().filter(|outcome| outcome.error.is_none()).count();
    let mut errors = BTreeMap::new();
    for kind in outcomes.iter().filter_map(|outcome| outcome.error) {
        *errors.entry(kind).or_insert(0) += 1;
    }
    let mut broken = Vec::new();
    if panicked > 0 {
        broken.push(format!("{panicked} calls panicked"));
    }
    if hung > 0 {
        broken.push(format!("{hung} calls did not end within {} s", RUN_LIMIT.as_secs()));
    }
    let lost = panicked + hung;
    let ended = answered + errors.values().sum::<usize>();
    if ended + lost != config.calls {
        broken.push(format!("{ended} calls ended and {lost} were lost, of {}", config.calls));
    }

    // Each call's history: the failed calls its decisions name are all its calls but the answer.
    let inconsistent = outcomes
        .iter()
        .filter(|outcome| outcome.injected + outcome.uninjected + u32::from(outcome.error.is_none()) != outcome.calls)
        .count();
    if inconsistent > 0 {
        broken.push(format!("{inconsistent} calls whose decisions do not account for their calls"));
    }

    // Every request accounted for. Each 503 a call saw was sent by the server, and each reply a call
    // got was an `ok` it sent. A failure that was not injected (a timeout, a reset) is a request
    // that either reached the server, whose answer (`ok` or 503) the call never saw, or never did
    // (the calls report more requests than the server journaled): the two add up to those failures.
    let total = |count: fn(&Outcome) -> u32| outcomes.iter().map(|outcome| u64::from(count(outcome))).sum::<u64>();
    let (reported, injected, uninjected) = (total(|o| o.calls), total(|o| o.injected), total(|o| o.uninjected));
    let requests = journal.len();
    let served =
        |kind: StepKind| journal.iter().filter(|entry| entry.step.is_some_and(|step| step.kind == kind)).count() as u64;
    let (ok_steps, error_steps) = (served(StepKind::Ok), served(StepKind::HttpError));
    let unreached = reported.checked_sub(requests as u64);
    let unseen_answers = ok_steps.checked_sub(answered as u64);
    let unseen_errors = error_steps.checked_sub(injected);
    let unseen = match (unreached, unseen_answers, unseen_errors) {
        (Some(unreached), Some(answers), Some(errors)) if unreached + answers + errors == uninjected => {
            answers + errors
        }
        _ => {
            broken.push(format!(
                "the calls report {reported} requests, {answered} replies, {injected} 503s and {uninjected} \
                 failures not injected; the server journaled {requests} requests, {ok_steps} answers and \
                 {error_steps} 503s"
            ));
            0
        }
    };
    let mut by_number: BTreeMap<u32, u64> = BTreeMap::new();
    for entry in &journal {
        let number = entry.agentic_call.as_deref().and_then(|call| call.parse().ok()).unwrap_or(0);
        *by_number.entry(number).or_insert(0) += 1;
    }
    let most = outcomes.iter().map(|outcome| outcome.calls).max().unwrap_or(0);
    for number in (1..=most).chain(by_number.contains_key(&0).then_some(0)) {
        let made = outcomes.iter().filter(|outcome| number >= 1 && outcome.calls >= number).count() as u64;
        let seen = by_number.get(&number).copied().unwrap_or(0);
        // Requests that never reached the server may be missing; none may be extra.
        if seen > made || (uninjected == 0 && seen != made) {
            broken.push(format!("the server saw {seen} requests with call number {number}, the calls made {made}"));
        }
    }

    let mut uninjected_texts = BTreeMap::new();
    for text in outcomes.iter().filter_map(|outcome| outcome.uninjected_text.as_deref()) {
        *uninjected_texts.entry(text.chars().take(240).collect()).or_insert(0) += 1;
    }
    let backoff_total: Duration = outcomes.iter().map(|outcome| outcome.backoff).sum();
    let backoff_mean = backoff_total / u32::try_from(outcomes.len().max(1)).unwrap_or(u32::MAX);
    let mut latencies: Vec<Duration> = outcomes.iter().map(|outcome| outcome.latency).collect();
    latencies.sort_unstable();
    drop(outcomes);
    drop(journal);
    let rss_end_kib = rss_after_trim();
    Ok(Report {
        config,
        answered,
        errors,
        lost,
        requests,
        unreached: unreached.unwrap_or(0),
        unseen,
        p50: percentile(&latencies, 50),
        p99: percentile(&latencies, 99),
        max: latencies.last().copied().unwrap_or_default(),
        backoff_mean,
        hwm_before_kib,
        hwm_peak_kib,
        rss_end_kib,
        peak_fds,
        kernel,
        tokens_left,
        wall,
        broken,
        uninjected,
        uninjected_texts,
    })
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "n/a".to_owned(), |kib| format!("{:.0}", kib as f64 / 1024.0))
}

/// The difference to the 0 % run at the same N, in ms.
fn overhead(report: &Report, baseline: Option<&Report>) -> Option<(f64, f64)> {
    let baseline = baseline.filter(|baseline| baseline.config.calls == report.config.calls)?;
    Some((ms(report.p50) - ms(baseline.p50), ms(report.p99) - ms(baseline.p99)))
}

/// The budget's promise under a full outage, checked: at most [`BUCKET_RETRIES`] retries in all
/// (another floor's worth for each further window the run lasted), so at most [`DRAINED_LIMIT`]
/// requests per call once N is large (N > 500). `None` when it does not apply.
fn drained_check(report: &Report) -> Option<bool> {
    let retries = (report.requests as u64).saturating_sub(report.config.calls as u64);
    let windows = 1 + report.wall.as_secs() / 60;
    let amortized = report.config.calls <= 500 || report.per_call() <= DRAINED_LIMIT;
    (report.config.errors == 100 && !report.config.bucket_off)
        .then_some(retries <= BUCKET_RETRIES * windows && amortized)
}

/// The budget's promise in a wobble (30 % errors or fewer), checked: it refuses no retry the
/// layers would make, so at least [`WOBBLE_ANSWERED`] of the calls are answered (all but those
/// whose 12 calls all failed). `None` when it does not apply.
fn wobble_check(report: &Report) -> Option<bool> {
    let refused = report.errors.get("refused").copied().unwrap_or(0);
    let share = report.answered as f64 / report.config.calls as f64;
    (report.config.errors > 0 && report.config.errors <= 30 && !report.config.bucket_off)
        .then_some(refused == 0 && share >= WOBBLE_ANSWERED)
}

fn to_json(report: &Report, baseline: Option<&Report>, open_files: &OpenFiles) -> Value {
    let (overhead_p50, overhead_p99) = overhead(report, baseline).unzip();
    json!({
        "calls": report.config.calls,
        "error_percent": report.config.errors,
        "bucket": report.config.bucket(),
        "answered": report.answered,
        "errors": report.errors,
        "lost": report.lost,
        "requests": report.requests,
        "requests_per_call": report.per_call(),
        "requests_unreached": report.unreached,
        "answers_unseen": report.unseen,
        "p50_ms": ms(report.p50),
        "p99_ms": ms(report.p99),
        "max_ms": ms(report.max),
        "overhead_p50_ms": overhead_p50,
        "overhead_p99_ms": overhead_p99,
        "backoff_mean_ms": ms(report.backoff_mean),
        "vm_hwm_before_kib": report.hwm_before_kib,
        "vm_hwm_peak_kib": report.hwm_peak_kib,
        "vm_rss_after_kib": report.rss_end_kib,
        "peak_open_fds": report.peak_fds,
        "listen_overflows": report.kernel.listen_overflows,
        "syn_retransmits": report.kernel.syn_retransmits,
        "budget_retries_left": report.tokens_left,
        "wall_ms": ms(report.wall),
        "uninjected_failures": report.uninjected,
        "uninjected_texts": report.uninjected_texts,
        "consistent": report.consistent(),
        "broken": report.broken,
        "drained_check": drained_check(report),
        "wobble_check": wobble_check(report),
        "open_files_limit": open_files.limit,
        "policy": {
            "session_base_delay_ms": POLICY_SESSION_MS,
            "exec_base_delay_ms": POLICY_EXEC_MS,
            "timeout_ms": POLICY_TIMEOUT_MS,
            "max_calls_per_exec": POLICY.worst_case_calls(),
        },
    })
}

const TABLE_HEADER: &str = "| N | errors | bucket | answered | typed errors | requests | req/call | p50 ms | p99 ms \
    | max ms | Δp50 ms | Δp99 ms | backoff ms | not injected | MiB before → peak → after | peak fds | listen drops | wall s | \
    nothing lost |\n|---:|---:|:---:|---:|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---|";

fn table_row(report: &Report, baseline: Option<&Report>) -> String {
    let (d50, d99) = overhead(report, baseline)
        .map_or_else(|| ("-".to_owned(), "-".to_owned()), |(a, b)| (format!("{a:+.1}"), format!("{b:+.1}")));
    let checks = if report.consistent() { "yes".to_owned() } else { format!("NO: {}", report.broken.join("; ")) };
    format!(
        "| {} | {} % | {} | {} | {} | {} | {:.2} | {:.1} | {:.1} | {:.1} | {d50} | {d99} | {:.0} | {} | {} → {} → {} | {} \
         | {} | {:.1} | {checks} |",
        report.config.calls,
        report.config.errors,
        report.config.bucket(),
        report.answered,
        report.errors_text(),
        report.requests,
        report.per_call(),
        ms(report.p50),
        ms(report.p99),
        ms(report.max),
        ms(report.backoff_mean),
        report.uninjected,
        mib(report.hwm_before_kib),
        mib(report.hwm_peak_kib),
        mib(report.rss_end_kib),
        report.peak_fds,
        report.kernel.listen_overflows,
        report.wall.as_secs_f64(),
    )
}

/// The open-files limit after raising it, and what happened.
struct OpenFiles {
    limit: Option<u64>,
    note: String,
}

/// Raises the soft open-files limit to the hard one, and both to `needed` when that is more and the
/// process may (CAP_SYS_RESOURCE). With `exact`, sets both to that instead, to see what too few does.
#[cfg(unix)]
fn open_files(needed: u64, exact: Option<u64>) -> OpenFiles {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit through a valid pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return OpenFiles { limit: None, note: "cannot read the open-files limit".to_owned() };
    }
    let set = |soft: libc::rlim_t, hard: libc::rlim_t| {
        let wanted = libc::rlimit { rlim_cur: soft, rlim_max: hard };
        // SAFETY: setrlimit reads one rlimit through a valid pointer.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) == 0 }
    };
    let (soft, hard) = (limit.rlim_cur, limit.rlim_max);
    if let Some(exact) = exact {
        return if set(exact, exact) {
            OpenFiles { limit: Some(exact), note: format!("open-files limit set to {exact} by --open-files") }
        } else {
            OpenFiles {
                limit: Some(soft),
                note: format!("could not set the open-files limit to {exact}: it stays {soft}"),
            }
        };
    }
    if hard < needed && set(needed, needed) {
        return OpenFiles {
            limit: Some(needed),
            note: format!("open-files limit raised to {needed} (soft was {soft}, hard {hard})"),
        };
    }
    let limit = if soft == hard || set(hard, hard) { hard } else { soft };
    let mut note = format!("open-files limit {limit} (soft was {soft}, hard {hard})");
    if limit < needed {
        let _ = write!(
            note,
            "; NOT ENOUGH for {needed}, 2 per connection with both ends in this process: if that many are open \
             at once, connects and accepts fail (EMFILE) and show as failures that were not injected"
        );
    }
    OpenFiles { limit: Some(limit), note }
}

#[cfg(not(unix))]
fn open_files(_needed: u64, _exact: Option<u64>) -> OpenFiles {
    OpenFiles { limit: None, note: "the open-files limit is not checked on this platform".to_owned() }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // `--rate-limit` (and its hidden `--child`) parses its own flags.
    let raw: Vec<String> = std::env::args().skip(1).collect();
    if raw.iter().any(|arg| arg == "--rate-limit" || arg == "--child") {
        let mode = rate_limit::parse(&raw).unwrap_or_else(|message| {
            eprintln!("{message}\n{USAGE}");
            std::process::exit(2);
        });
        return rate_limit::main(mode).await.map_err(std::io::Error::other);
    }
    let mut args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    if let Some(fallback) = args.fallback.take() {
        let largest = fallback.calls.unwrap_or(1_000) as u64;
        let open_files = open_files(4 * largest + 256, args.open_files);
        eprintln!("{}", open_files.note);
        return fallback::main(fallback).await;
    }
    let largest = args.runs.iter().map(|config| config.calls).max().unwrap_or(0) as u64;
    let open_files = open_files(2 * largest + 256, args.open_files);
    // In JSON mode stdout holds the JSON lines only.
    let note = |line: &str| if args.json { eprintln!("{line}") } else { println!("{line}") };
    note(&format!(
        "policy: 3 exec attempts ({POLICY_EXEC_MS}, {} ms apart) x 4 session calls ({POLICY_SESSION_MS}, {}, {} ms \
         apart), {POLICY_TIMEOUT_MS} ms timeout per model call: up to {} requests and 510 ms ± 25 % of backoff per call \
         (short delays, so that an outage ends in seconds); injected error: HTTP 503; bucket: \
         RetryQuota::standard (one retry per success over a 60 s window, plus 100)",
        2 * POLICY_EXEC_MS,
        2 * POLICY_SESSION_MS,
        4 * POLICY_SESSION_MS,
        POLICY.worst_case_calls()
    ));
    note(&open_files.note);

    // Every run of every repeat, in order; each repeat runs the 0 % baseline of an N before the rest.
    let mut reports: Vec<(u32, Report)> = Vec::new();
    for repeat in 1..=args.repeat {
        for &config in &args.runs {
            eprintln!(
                "run {repeat}/{}: N = {}, {} % errors, bucket {} ...",
                args.repeat,
                config.calls,
                config.errors,
                config.bucket()
            );
            let report = run(config).await?;
            let baseline = reports.iter().find(|(r, earlier)| {
                *r == repeat && earlier.config.calls == config.calls && earlier.config.errors == 0
            });
            if args.json {
                let mut line = to_json(&report, baseline.map(|(_, report)| report), &open_files);
                line["repeat"] = json!(repeat);
                println!("{line}");
            }
            reports.push((repeat, report));
            // Let the sockets of this run close before the next one starts.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    if args.json {
        return Ok(());
    }

    // Of several repeats of a configuration, the table shows the median run by p99 (whole, so that
    // its figures add up).
    let median = |config: Config| {
        let mut runs: Vec<&Report> =
            reports.iter().map(|(_, report)| report).filter(|report| report.config == config).collect();
        runs.sort_by_key(|report| report.p99);
        runs[(runs.len() - 1) / 2]
    };
    let shown: Vec<&Report> = args.runs.iter().map(|&config| median(config)).collect();
    if args.repeat > 1 {
        println!("\nthe median of {} runs by p99, for each row", args.repeat);
    }
    println!("\n{TABLE_HEADER}");
    for report in &shown {
        let baseline =
            shown.iter().copied().find(|other| other.config.calls == report.config.calls && other.config.errors == 0);
        println!("{}", table_row(report, baseline));
    }
    println!(
        "\nlatency: per logical call, from submission to its reply or error; Δ: against the 0 % run at the same N; \
         backoff: the mean delay the layers decided on per call; not injected: failed model calls whose error \
         was not the injected 503; after: RSS once the run is dropped and the heap trimmed; \
         listen drops: connections the kernel dropped \
         because the chaos server's accept queue was full (ListenOverflows, machine-wide)"
    );
    for (repeat, report) in &reports {
        let config = report.config;
        let run = format!("run {repeat}, N = {}, {} % errors, bucket {}", config.calls, config.errors, config.bucket());
        if let Some(passed) = drained_check(report) {
            println!(
                "{run}: {:.3} requests per call, {} retries (at most {BUCKET_RETRIES} a window, and at most \
                 {DRAINED_LIMIT} requests per call for N > 500): {}; the budget allowed {} more retries at the end",
                report.per_call(),
                (report.requests as u64).saturating_sub(config.calls as u64),
                if passed { "PASS" } else { "FAIL" },
                report.tokens_left.unwrap_or(0),
            );
        }
        if let Some(passed) = wobble_check(report) {
            println!(
                "{run}: {:.2} % answered, {} refused by the retry quota (none refused, and at least {:.1} % \
                 answered): {}",
                100.0 * report.answered as f64 / config.calls as f64,
                report.errors.get("refused").copied().unwrap_or(0),
                100.0 * WOBBLE_ANSWERED,
                if passed { "PASS" } else { "FAIL" },
            );
        }
        if report.uninjected > 0 {
            println!(
                "{run}: {} model calls failed with an error that was not injected ({} requests never reached the \
                 server, {} reached it but their answer was not seen; {} listen drops, {} SYN retransmits); \
                 calls by their first such failure:",
                report.uninjected,
                report.unreached,
                report.unseen,
                report.kernel.listen_overflows,
                report.kernel.syn_retransmits,
            );
            let mut texts: Vec<_> = report.uninjected_texts.iter().collect();
            texts.sort_by_key(|(_, count)| std::cmp::Reverse(**count));
            for (text, count) in texts.into_iter().take(3) {
                println!("    {count:>6}  {text}");
            }
        }
    }
    let all = reports.iter().all(|(_, report)| report.consistent());
    println!(
        "nothing lost: {}",
        if all {
            "every call ended in a reply or a typed error, and every request is accounted for"
        } else {
            "NO, see the last column"
        }
    );
    Ok(())
}
