//! The load example's rate-limit mode (`--rate-limit`): one warm call, then a burst of concurrent
//! execs against a chaos server that enforces a per-key rate limit, with the pacer on
//! (`Pacing::from_headers`, the default) and off (`Pacing::off`) side by side.
//!
//! Every run starts a fresh chaos server on 127.0.0.1 whose steps are all `ok` (an answer of 40
//! words, usage pinned at 80 input and 50 output tokens: a prompt of about 60 words and its
//! answer, as a tokenizer counts them) under a [`RateLimit`], and one `Runtime` on an
//! `OpenAiProvider` (Chat Completions; `--wire anthropic`: an `AnthropicProvider`) with one API
//! key, `max_tokens` 64 and the default policy otherwise (a 429's Retry-After is the wait). The runs:
//! - **requests**: 120 requests a window, no token limit.
//! - **tokens**: 16 000 tokens a window, the binding one (130 a call: 123 calls), and 10 000 requests.
//! - **redis** (with `--redis URL`): the requests limit, two processes sharing one `RedisStore`
//!   (`RuntimeBuilder::with_shared_store`) against one server and one key. This process starts the server
//!   and runs itself twice with `--child`; each child makes its warm call, then half the burst at
//!   the same instant, and prints one JSON line; this process sums them.
//!
//! The ideal is the time the limit itself allows for the burst: what the bucket held when the
//! burst's first request arrived goes at once, the rest at the refill rate,
//! `(demand - level) / rate`; the level is replayed from the journal (the bucket full at the
//! server's start, each warm call's charge, the refill until the burst).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agentic_chaos::{ChaosServer, JournalEntry, RateLimit, Scenario, Step, TokenUsage};
use agentic_runtime::decision::Verdict;
use agentic_runtime::exec::RuntimeBuilder;
use agentic_runtime::provider::{AnthropicProvider, OpenAiProvider};
use agentic_runtime::storm::pace::Pacing;
use agentic_runtime::storm::store::SharedStore;
use agentic_runtime::{ExecError, Reply, Runtime};
use serde_json::{Value, json};

use super::{milliseconds, on_off};

/// The values of `--only` in this mode.
pub(super) const KINDS: [&str; 3] = ["requests", "tokens", "redis"];

/// One demo key for every call of a run (the chaos server's buckets are per key): not a secret.
const KEY: &str = "sk-load-rate-limit-demo";

/// The requests limit of the requests and redis runs, per window.
const REQUESTS: u64 = 120;
/// The tokens limit of the tokens run, per window, and its requests limit (never reached).
const TOKENS: u64 = 16_000;
const TOKENS_RUN_REQUESTS: u64 = 10_000;

/// What the server charges each call (pinned usage): a prompt of about 60 words, an answer of 40.
const INPUT_TOKENS: u64 = 80;
const OUTPUT_TOKENS: u64 = 50;
/// The answer's `max_tokens`: the pacer's estimate of a call's output until the usage calibrates it.
const MAX_TOKENS: u32 = 64;

/// The prompt of every call, about 60 words (its index appended).
const PROMPT: &str = "Summarise the following support ticket in two sentences for the on-call engineer, naming \
     the customer's plan, the failing feature and what they already tried: the customer on the team plan reports \
     that exports to the shared drive fail with a timeout since this morning, they restarted the desktop client, \
     cleared its cache and tried a smaller folder, and the export still stops at ninety percent.";

/// The answer, 40 words.
const ANSWER: &str = "A team-plan customer cannot export to the shared drive: exports time out at ninety percent \
     since this morning. They restarted the desktop client, cleared its cache and tried a smaller folder without \
     success; the export service's timeouts are the likely cause here.";

/// The children of the redis run start their burst this long after they are spawned: time to
/// start and make their warm call.
const CHILD_LEAD: Duration = Duration::from_secs(3);

/// The processes of the redis run.
const CHILDREN: usize = 2;

/// The pacer's targets: at most this share of the requests get a 429 ...
const MAX_429_SHARE: f64 = 0.01;
/// ... and the burst within this multiple of the ideal.
const MAX_RATIO: f64 = 1.15;

/// The wire of the runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    OpenAi,
    Anthropic,
}

impl Wire {
    fn parse(text: &str) -> Result<Self, String> {
        match text {
            "openai" => Ok(Self::OpenAi),
            "anthropic" => Ok(Self::Anthropic),
            other => Err(format!("`--wire {other}`: use `openai` or `anthropic`")),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }

    fn base_url(self, server: &ChaosServer) -> String {
        match self {
            Self::OpenAi => server.openai_base_url(),
            Self::Anthropic => server.anthropic_base_url(),
        }
    }
}

/// What `--rate-limit` runs.
pub(super) struct RateLimitArgs {
    window: Duration,
    burst: usize,
    only: Option<&'static str>,
    wire: Wire,
    redis: Option<String>,
    json: bool,
}

/// A child of the redis run (`--child`, not in the usage: the parent passes everything).
pub(super) struct ChildArgs {
    base_url: String,
    redis: String,
    prefix: String,
    calls: usize,
    wire: Wire,
    pacing_on: bool,
    /// When the burst starts, in ms since the Unix epoch (the same for both children).
    start_at_ms: u64,
}

/// The two modes of this file.
pub(super) enum Mode {
    Runs(RateLimitArgs),
    Child(ChildArgs),
}

/// Parses the arguments of `--rate-limit` (or of a `--child`).
pub(super) fn parse(args: &[String]) -> Result<Mode, String> {
    let (mut window, mut burst, mut only, mut wire, mut redis, mut json) =
        (Duration::from_secs(60), 200, None, Wire::OpenAi, None, false);
    let (mut child, mut base_url, mut prefix, mut calls, mut pacing_on, mut start_at_ms) =
        (false, None, None, None, true, None);
    let positive = |flag: &str, text: &str| {
        text.parse::<usize>()
            .ok()
            .filter(|&n| (1..=100_000).contains(&n))
            .ok_or(format!("`{flag} {text}`: not a number from 1 to 100000"))
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().cloned().ok_or_else(|| format!("`{name}` needs a value"));
        match arg.as_str() {
            "--rate-limit" => {}
            "--child" => child = true,
            "--window-ms" => {
                window = Duration::from_millis(milliseconds("--window-ms", &value("--window-ms")?, 1_000)?)
            }
            "--burst" => burst = positive("--burst", &value("--burst")?)?,
            "--calls" => calls = Some(positive("--calls", &value("--calls")?)?),
            "--only" => {
                let text = value("--only")?;
                only = Some(
                    KINDS
                        .into_iter()
                        .find(|kind| *kind == text)
                        .ok_or(format!("`--only {text}`: use one of {}", KINDS.join(", ")))?,
                );
            }
            "--wire" => wire = Wire::parse(&value("--wire")?)?,
            "--redis" => redis = Some(value("--redis")?),
            "--base-url" => base_url = Some(value("--base-url")?),
            "--prefix" => prefix = Some(value("--prefix")?),
            "--pacing" => pacing_on = on_off("--pacing", &value("--pacing")?)?,
            "--start-at-ms" => {
                let text = value("--start-at-ms")?;
                start_at_ms = Some(text.parse::<u64>().map_err(|_| format!("`--start-at-ms {text}`: not a number"))?);
            }
            "--json" => json = true,
            other => return Err(format!("unknown argument `{other}` with `--rate-limit`")),
        }
    }
    if child {
        let missing = |flag: &str| format!("`--child` needs `{flag}`");
        return Ok(Mode::Child(ChildArgs {
            base_url: base_url.ok_or_else(|| missing("--base-url"))?,
            redis: redis.ok_or_else(|| missing("--redis"))?,
            prefix: prefix.ok_or_else(|| missing("--prefix"))?,
            calls: calls.ok_or_else(|| missing("--calls"))?,
            wire,
            pacing_on,
            start_at_ms: start_at_ms.ok_or_else(|| missing("--start-at-ms"))?,
        }));
    }
    if base_url.is_some() || prefix.is_some() || calls.is_some() || start_at_ms.is_some() {
        return Err("`--base-url`, `--prefix`, `--calls`, `--pacing` and `--start-at-ms` are for `--child`".to_owned());
    }
    if redis.is_some() && !cfg!(feature = "redis") {
        return Err("`--redis` needs the example built with it: `cargo run --release --example load --features redis \
                    -- --rate-limit --redis URL`"
            .to_owned());
    }
    if only == Some("redis") && redis.is_none() {
        return Err("`--only redis` needs `--redis URL`".to_owned());
    }
    Ok(Mode::Runs(RateLimitArgs { window, burst, only, wire, redis, json }))
}

/// Which limit binds in a run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Binding {
    Requests,
    Tokens,
}

impl Binding {
    fn limit(self, window: Duration) -> RateLimit {
        match self {
            Self::Requests => RateLimit::new().requests(REQUESTS),
            Self::Tokens => RateLimit::new().tokens(TOKENS).requests(TOKENS_RUN_REQUESTS),
        }
        .window(window)
    }

    /// The binding bucket's size, and what one call takes from it.
    fn bucket(self) -> (f64, f64) {
        match self {
            Self::Requests => (REQUESTS as f64, 1.0),
            Self::Tokens => (TOKENS as f64, (INPUT_TOKENS + OUTPUT_TOKENS) as f64),
        }
    }

    fn scenario(self, window: Duration) -> Scenario {
        let answer = Step::ok(ANSWER).usage(TokenUsage::new(INPUT_TOKENS, OUTPUT_TOKENS));
        Scenario::new().otherwise(answer).with_rate_limit(self.limit(window))
    }
}

fn runtime(wire: Wire, base_url: String, pacing_on: bool) -> RuntimeBuilder {
    let key = Some(KEY.to_owned());
    let builder = match wire {
        Wire::OpenAi => {
            Runtime::builder(OpenAiProvider::new(base_url, key).with_model("paced").with_max_tokens(MAX_TOKENS))
        }
        Wire::Anthropic => {
            Runtime::builder(AnthropicProvider::new(base_url, key).with_model("paced").with_max_tokens(MAX_TOKENS))
        }
    };
    builder.with_pacing(if pacing_on { Pacing::from_headers() } else { Pacing::off() })
}

/// What a burst's execs came to (summed over the processes of the redis run).
#[derive(Default)]
struct Tally {
    answered: usize,
    /// Failed execs by their error's kind.
    failed: BTreeMap<String, usize>,
    /// `Verdict::Paced` decisions, and their waits.
    paced: usize,
    paced_wait: Duration,
    /// From the burst's start to its last exec's end.
    burst: Duration,
}

impl Tally {
    fn add(&mut self, result: &Result<Reply, ExecError>) {
        let decisions = match result {
            Ok(reply) => {
                self.answered += 1;
                reply.decisions()
            }
            Err(error) => {
                *self.failed.entry(error.kind().name().to_owned()).or_default() += 1;
                error.decisions()
            }
        };
        for decision in decisions.iter().filter(|decision| decision.verdict() == Verdict::Paced) {
            self.paced += 1;
            self.paced_wait += decision.delay().unwrap_or_default();
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "answered": self.answered, "failed": self.failed, "paced": self.paced,
            "paced_wait_ms": self.paced_wait.as_secs_f64() * 1000.0, "burst_ms": self.burst.as_secs_f64() * 1000.0,
        })
    }

    fn from_json(line: &Value) -> Option<Self> {
        let failed = line["failed"].as_object()?.iter().map(|(kind, n)| Some((kind.clone(), n.as_u64()? as usize)));
        Some(Self {
            answered: line["answered"].as_u64()? as usize,
            failed: failed.collect::<Option<_>>()?,
            paced: line["paced"].as_u64()? as usize,
            paced_wait: Duration::from_secs_f64(line["paced_wait_ms"].as_f64()? / 1000.0),
            burst: Duration::from_secs_f64(line["burst_ms"].as_f64()? / 1000.0),
        })
    }

    fn merge(&mut self, other: Self) {
        self.answered += other.answered;
        for (kind, n) in other.failed {
            *self.failed.entry(kind).or_default() += n;
        }
        self.paced += other.paced;
        self.paced_wait += other.paced_wait;
        self.burst = self.burst.max(other.burst);
    }

    fn failed_text(&self) -> String {
        if self.failed.is_empty() {
            return "0".to_owned();
        }
        self.failed.iter().map(|(kind, n)| format!("{n} {kind}")).collect::<Vec<_>>().join(", ")
    }
}

/// The warm call: the headers are known after it.
async fn warm(runtime: &Runtime) -> Result<(), String> {
    runtime
        .exec(format!("{PROMPT} (warm call)"))
        .await
        .map(drop)
        .map_err(|error| format!("the warm call failed: {error}"))
}

/// `calls` execs at once; their tally, timed from now.
async fn burst(runtime: &Runtime, calls: usize, first: usize) -> Tally {
    let start = Instant::now();
    let handles: Vec<_> = (first..first + calls)
        .map(|index| {
            let runtime = runtime.clone();
            tokio::spawn(async move { runtime.exec(format!("{PROMPT} (call {index})")).await })
        })
        .collect();
    let mut tally = Tally::default();
    for handle in handles {
        match handle.await {
            Ok(result) => tally.add(&result),
            Err(_) => *tally.failed.entry("panicked".to_owned()).or_default() += 1,
        }
    }
    tally.burst = start.elapsed();
    tally
}

/// One run's figures.
struct Run {
    name: &'static str,
    wire: Wire,
    pacing_on: bool,
    calls: usize,
    tally: Tally,
    /// Model requests the server journaled, the warm calls' included, and its 429s.
    requests: usize,
    warm: usize,
    rate_limited: usize,
    ideal: Duration,
}

impl Run {
    fn burst_requests(&self) -> usize {
        self.requests.saturating_sub(self.warm)
    }

    fn share_429(&self) -> f64 {
        self.rate_limited as f64 / self.burst_requests().max(1) as f64
    }

    /// The burst's time over the ideal; `None` when the bucket held the whole burst (no wait to
    /// compare with).
    fn ratio(&self) -> Option<f64> {
        (self.ideal >= Duration::from_millis(1)).then(|| self.tally.burst.as_secs_f64() / self.ideal.as_secs_f64())
    }

    fn pacer(&self) -> &'static str {
        if self.pacing_on { "on" } else { "off" }
    }

    fn to_json(&self) -> Value {
        let mut line = self.tally.to_json();
        let fields = json!({
            "run": self.name, "wire": self.wire.name(), "pacer": self.pacer(), "calls": self.calls,
            "requests": self.requests, "warm_requests": self.warm, "rate_limited": self.rate_limited,
            "rate_limited_share": self.share_429(), "ideal_ms": self.ideal.as_secs_f64() * 1000.0, "ratio": self.ratio(),
        });
        if let (Some(line), Some(fields)) = (line.as_object_mut(), fields.as_object()) {
            line.extend(fields.clone());
        }
        line
    }
}

/// The time the limit allows for `calls` calls: the binding bucket's level when the burst's first
/// request arrived is replayed from the journal (full at the start, each of the first `warm`
/// requests' charge, the refill in between), and the rest comes at the refill rate.
fn ideal(journal: &[JournalEntry], warm: usize, calls: usize, binding: Binding, window: Duration) -> Duration {
    let (size, per_call) = binding.bucket();
    let rate = size / window.as_secs_f64();
    let (mut level, mut at) = (size, 0.0);
    let refill = |level: f64, to: f64, at: &mut f64| {
        let level = (level + rate * (to - *at).max(0.0)).min(size);
        *at = to;
        level
    };
    let mut entries: Vec<&JournalEntry> = journal.iter().collect();
    entries.sort_by_key(|entry| entry.seq);
    for entry in entries.iter().take(warm) {
        level = refill(level, entry.at_ms as f64 / 1000.0, &mut at) - per_call;
    }
    if let Some(first) = entries.get(warm) {
        level = refill(level, first.at_ms as f64 / 1000.0, &mut at);
    }
    Duration::from_secs_f64((calls as f64 * per_call - level).max(0.0) / rate)
}

/// One in-process run: a fresh server, a warm call, the burst.
async fn in_process(binding: Binding, args: &RateLimitArgs, pacing_on: bool) -> Result<Run, String> {
    let server = ChaosServer::start(binding.scenario(args.window)).await.map_err(|error| error.to_string())?;
    let runtime =
        runtime(args.wire, args.wire.base_url(&server), pacing_on).build().map_err(|error| error.to_string())?;
    warm(&runtime).await?;
    let tally = burst(&runtime, args.burst, 0).await;
    let journal = server.journal();
    server.shutdown().await;
    let name = if binding == Binding::Requests { "requests" } else { "tokens" };
    Ok(finish(name, args, pacing_on, tally, &journal, 1, binding))
}

fn finish(
    name: &'static str,
    args: &RateLimitArgs,
    pacing_on: bool,
    tally: Tally,
    journal: &[JournalEntry],
    warm: usize,
    binding: Binding,
) -> Run {
    Run {
        name,
        wire: args.wire,
        pacing_on,
        calls: args.burst,
        tally,
        requests: journal.len(),
        warm,
        rate_limited: journal.iter().filter(|entry| entry.rate_limited).count(),
        ideal: ideal(journal, warm, args.burst, binding, args.window),
    }
}

fn epoch_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis() as u64)
}

/// The redis run: two children of this process share one `RedisStore` against one server.
async fn fleet(args: &RateLimitArgs, redis: &str, pacing_on: bool) -> Result<Run, String> {
    let server =
        ChaosServer::start(Binding::Requests.scenario(args.window)).await.map_err(|error| error.to_string())?;
    let exe = std::env::current_exe().map_err(|error| format!("cannot find this program: {error}"))?;
    let start_at_ms = epoch_ms() + CHILD_LEAD.as_millis() as u64;
    // A fresh prefix per run: nothing of an earlier run's state in Redis.
    let prefix = format!("agentic-load-{}-{start_at_ms}", std::process::id());
    let children: Vec<_> = (0..CHILDREN)
        .map(|index| {
            let share = args.burst / CHILDREN + usize::from(index < args.burst % CHILDREN);
            std::process::Command::new(&exe)
                .args(["--child", "--base-url", &args.wire.base_url(&server), "--redis", redis, "--prefix", &prefix])
                .args(["--calls", &share.to_string(), "--wire", args.wire.name()])
                .args(["--pacing", if pacing_on { "on" } else { "off" }, "--start-at-ms", &start_at_ms.to_string()])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .map_err(|error| format!("cannot start a child: {error}"))
        })
        .collect::<Result<_, _>>()?;
    let mut tally = Tally::default();
    for child in children {
        let output = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .map_err(|error| error.to_string())?
            .map_err(|error| format!("a child failed: {error}"))?;
        let text = String::from_utf8_lossy(&output.stdout);
        let line = text.lines().last().and_then(|line| serde_json::from_str::<Value>(line).ok());
        let child = line
            .as_ref()
            .and_then(Tally::from_json)
            .ok_or(format!("a child ended ({}) without its JSON line: {text}", output.status))?;
        tally.merge(child);
    }
    let journal = server.journal();
    server.shutdown().await;
    Ok(finish("redis", args, pacing_on, tally, &journal, CHILDREN, Binding::Requests))
}

/// A child of the redis run: its warm call, then its share of the burst at the given instant;
/// one JSON line (its tally, the burst timed from that instant).
async fn child(args: ChildArgs) -> Result<(), String> {
    let store = redis_store(&args.redis, args.prefix).await?;
    let runtime = runtime(args.wire, args.base_url, args.pacing_on)
        .with_shared_store(store)
        .build()
        .map_err(|error| error.to_string())?;
    warm(&runtime).await?;
    let wait = Duration::from_millis(args.start_at_ms.saturating_sub(epoch_ms()));
    tokio::time::sleep(wait).await;
    let late = Duration::from_millis(epoch_ms().saturating_sub(args.start_at_ms));
    let mut tally = burst(&runtime, args.calls, 0).await;
    tally.burst += late;
    println!("{}", tally.to_json());
    Ok(())
}

/// The Redis at `url`, its keys under `prefix`.
#[cfg(feature = "redis")]
async fn redis_store(url: &str, prefix: String) -> Result<Arc<dyn SharedStore>, String> {
    let store = agentic_redis::RedisStore::connect(url).await.map_err(|error| error.to_string())?;
    Ok(Arc::new(store.with_prefix(prefix)))
}

/// Without the `redis` feature there is no Redis store (`parse` refuses `--redis` then).
#[cfg(not(feature = "redis"))]
async fn redis_store(_: &str, _: String) -> Result<Arc<dyn SharedStore>, String> {
    Err("built without the `redis` feature".to_owned())
}

/// Runs `--rate-limit` (or a `--child`) and prints the figures.
pub(super) async fn main(mode: Mode) -> Result<(), String> {
    let args = match mode {
        Mode::Child(args) => return child(args).await,
        Mode::Runs(args) => args,
    };
    let note = |line: &str| if args.json { eprintln!("{line}") } else { println!("{line}") };
    // Both ends of each connection are in this process.
    note(&super::open_files(2 * args.burst as u64 + 256, None).note);
    let window = args.window.as_secs_f64();
    note(&format!(
        "rate limit: {} wire, one warm call then {} execs at once; requests run: {REQUESTS} requests per {window} s; \
         tokens run: {TOKENS} tokens ({} a call) and {TOKENS_RUN_REQUESTS} requests per {window} s; redis run: the \
         requests limit, {CHILDREN} processes sharing one RedisStore; default policy; max_tokens {MAX_TOKENS}",
        args.wire.name(),
        args.burst,
        INPUT_TOKENS + OUTPUT_TOKENS
    ));
    let mut plan: Vec<&'static str> = vec![KINDS[0], KINDS[1]];
    if args.redis.is_some() {
        plan.push(KINDS[2]);
    }
    plan.retain(|kind| args.only.is_none_or(|only| only == *kind));
    let mut runs = Vec::new();
    for kind in plan {
        for pacing_on in [true, false] {
            eprintln!("rate-limit run: {kind}, pacer {} ...", if pacing_on { "on" } else { "off" });
            let run = match (kind, &args.redis) {
                ("redis", Some(redis)) => fleet(&args, redis, pacing_on).await?,
                ("tokens", _) => in_process(Binding::Tokens, &args, pacing_on).await?,
                _ => in_process(Binding::Requests, &args, pacing_on).await?,
            };
            if args.json {
                println!("{}", run.to_json());
            }
            runs.push(run);
        }
    }
    if args.json {
        return Ok(());
    }
    println!(
        "\n| run | wire | pacer | answered | failed | requests (warm) | 429s | 429 share | burst s | ideal s | ratio | \
         paced decisions | paced wait s (sum) |\n|:---|:---|:---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for run in &runs {
        println!(
            "| {} | {} | {} | {} | {} | {} ({}) | {} | {:.2} % | {:.1} | {:.1} | {} | {} | {:.0} |",
            run.name,
            run.wire.name(),
            run.pacer(),
            run.tally.answered,
            run.tally.failed_text(),
            run.requests,
            run.warm,
            run.rate_limited,
            100.0 * run.share_429(),
            run.tally.burst.as_secs_f64(),
            run.ideal.as_secs_f64(),
            run.ratio().map_or_else(|| "-".to_owned(), |ratio| format!("{ratio:.3}")),
            run.tally.paced,
            run.tally.paced_wait.as_secs_f64()
        );
    }
    println!(
        "\nideal: (demand - the binding bucket's level at the burst's first request) / refill rate; ratio: burst / ideal"
    );
    println!("the pacer's targets, pacer on:");
    for run in runs.iter().filter(|run| run.pacing_on) {
        let checks = [
            (
                format!("{:.2} % of the burst's requests got a 429 (at most 1 %)", 100.0 * run.share_429()),
                run.share_429() <= MAX_429_SHARE,
            ),
            (format!("{} of {} calls answered", run.tally.answered, run.calls), run.tally.answered == run.calls),
        ];
        let timing = match run.ratio() {
            Some(ratio) => (format!("burst {ratio:.3} x the ideal (at most {MAX_RATIO})"), ratio <= MAX_RATIO),
            // Nothing to wait for: the burst is as fast as the server answers.
            None => ("the bucket held the whole burst: no ideal wait to compare with".to_owned(), true),
        };
        for (text, passed) in checks.into_iter().chain([timing]) {
            println!("  {}: {}: {text}", if passed { "PASS" } else { "FAIL" }, run.name);
        }
    }
    Ok(())
}
