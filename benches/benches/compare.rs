//! The retry machinery alone on the success path, side by side in one group: the same in-memory
//! operation called directly, through `Resilient::call`, through backon and through tokio-retry2, each
//! with the default exec schedule (3 attempts, 1.5 s then 3 s); and `Runtime::exec` on an
//! in-memory provider against one bare model call on it (`exec::call_once`), and the same exec as a
//! durable run on a `MemoryLog` (`exec_durable`: its model call's start marker and record, written
//! and fingerprinted; what a durable run costs in the process, before the engine's round trips). Before the timings it prints the heap allocations of one call of each
//! and the size of its future. Run with `cargo bench --manifest-path benches/Cargo.toml --bench compare`;
//! `COMPARE_ROUNDS=<n>` on the bench binary runs the variants interleaved instead (see `interleaved`).

use std::hint::black_box;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use criterion::{Criterion, criterion_group};
use tokio_retry2::strategy::ExponentialFactorBackoff;
use tokio_retry2::{Retry, RetryError};

use agentic_benches::Instant;
use agentic_runtime::exec::durable::{self, MemoryLog};
use agentic_runtime::message::{AssistantMessage, Message};
use agentic_runtime::policy::Jitter;
use agentic_runtime::provider::Request;
use agentic_runtime::resilient::Resilient;
use agentic_runtime::{RetryPolicy, Runtime, exec};
use agentic_test_support::counting_alloc::{self, Counting};

// Counts this thread's allocations, for the one-off figures printed before the timings. It costs a
// thread-local increment per allocation, the same for every variant.
#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The operation every variant wraps: succeeds at once, allocates nothing.
async fn operation() -> Result<u64, std::io::Error> {
    Ok(black_box(42))
}

/// The default policy: 3 attempts, 1.5 s then 3 s, proportional jitter, the default time bounds
/// (set lazily: a call that succeeds at once reads no clock), no other cap.
const POLICY: RetryPolicy = RetryPolicy::new();
/// The same schedule with every cap on: jitter, a delay cap, a call cap, a per-attempt timeout
/// (a `tokio::time::timeout_at` around the attempt) and a deadline.
const CAPPED: RetryPolicy = RetryPolicy::new()
    .with_jitter(Jitter::Full)
    .with_max_delay_ms(Some(10_000))
    .with_max_calls(Some(3))
    .with_timeout_ms(5_000)
    .with_budget_ms(Some(60_000));
/// backon's equivalent: 2 retries, 1.5 s doubling, no cap, no jitter.
const BACKON: ExponentialBuilder = ExponentialBuilder::new()
    .with_min_delay(Duration::from_millis(1500))
    .with_factor(2.0)
    .without_max_delay()
    .with_max_times(2);

/// tokio-retry2's equivalent: 1.5 s doubling, 2 retries (an iterator, so built per call).
fn tokio_retry2_strategy() -> std::iter::Take<ExponentialFactorBackoff> {
    ExponentialFactorBackoff::from_millis(1500, 2.0).take(2)
}

/// `Runtime::exec` as a durable run of its own on a new in-memory journal: two steps (the call's
/// start marker, then its record).
async fn exec_durable(runtime: &Runtime) -> agentic_runtime::Reply {
    durable::scope(MemoryLog::new("bench"), runtime.exec("the question")).await.unwrap()
}

async fn direct() -> u64 {
    operation().await.unwrap()
}

async fn resilient(policy: &RetryPolicy) -> u64 {
    Resilient::new("op", policy).call(operation).await.unwrap()
}

async fn backon() -> u64 {
    operation.retry(BACKON).await.unwrap()
}

/// backon with the nearest it has to the capped policy: jitter, a delay cap and a per-attempt timeout.
async fn backon_capped() -> u64 {
    let attempt =
        || async { tokio::time::timeout(Duration::from_secs(5), operation()).await.map_err(std::io::Error::from)? };
    attempt.retry(BACKON.with_jitter().with_max_delay(Duration::from_secs(10))).await.unwrap()
}

async fn tokio_retry2() -> u64 {
    Retry::spawn(tokio_retry2_strategy(), || async { operation().await.map_err(RetryError::transient) }).await.unwrap()
}

/// One model call on the same in-memory provider, with no retry layer: what `exec` is measured against.
async fn bare_call() -> AssistantMessage {
    let history = vec![Message::user("the question")];
    exec::call_once(&Instant, &Request::new(&history), None).await.unwrap()
}

/// Allocations of one call of `work` on this thread (after a warm-up call).
fn allocations<F: Future>(tokio: &tokio::runtime::Runtime, mut work: impl FnMut() -> F) -> usize {
    tokio.block_on(work());
    counting_alloc::count(tokio, work()).0
}

fn print_allocations(tokio: &tokio::runtime::Runtime, runtime: &Runtime) {
    let figures = [
        ("direct", allocations(tokio, direct)),
        ("resilient (defaults)", allocations(tokio, || resilient(&POLICY))),
        ("resilient (every cap on)", allocations(tokio, || resilient(&CAPPED))),
        ("backon", allocations(tokio, backon)),
        ("backon (jitter, delay cap, timeout per attempt)", allocations(tokio, backon_capped)),
        ("tokio-retry2", allocations(tokio, tokio_retry2)),
        ("Runtime::exec (in-memory provider, both layers)", allocations(tokio, || runtime.exec("the question"))),
        ("agent::run (one bare call, same provider)", allocations(tokio, bare_call)),
    ];
    let sizes = [
        std::mem::size_of_val(&operation()),
        // `call` borrows its `Resilient`: both count.
        std::mem::size_of_val(&Resilient::new("op", &POLICY).call(operation)) + size_of::<Resilient<u64>>(),
        std::mem::size_of_val(&Resilient::new("op", &CAPPED).call(operation)) + size_of::<Resilient<u64>>(),
        std::mem::size_of_val(&operation.retry(BACKON)),
        std::mem::size_of_val(&backon_capped()),
        std::mem::size_of_val(&Retry::spawn(tokio_retry2_strategy(), || async {
            operation().await.map_err(RetryError::transient)
        })),
        std::mem::size_of_val(&runtime.exec("the question")),
        std::mem::size_of_val(&bare_call()),
    ];
    println!("one successful call: heap allocations, size of the future in bytes");
    for ((name, count), size) in figures.into_iter().zip(sizes) {
        println!("  {name:<48} {count:>3} {size:>6}");
    }
}

fn success_path(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let runtime = Runtime::new(Instant);
    print_allocations(&tokio, &runtime);

    let mut group = c.benchmark_group("retry_success_path");
    group.bench_function("direct", |b| b.to_async(&tokio).iter(direct));
    group.bench_function("resilient", |b| b.to_async(&tokio).iter(|| resilient(&POLICY)));
    group.bench_function("backon", |b| b.to_async(&tokio).iter(backon));
    group.bench_function("tokio_retry2", |b| b.to_async(&tokio).iter(tokio_retry2));
    group.bench_function("resilient_every_cap", |b| b.to_async(&tokio).iter(|| resilient(&CAPPED)));
    group.bench_function("backon_capped", |b| b.to_async(&tokio).iter(backon_capped));
    group.bench_function("exec_in_memory", |b| {
        b.to_async(&tokio).iter(|| async { runtime.exec("the question").await.unwrap() })
    });
    group.bench_function("bare_call", |b| b.to_async(&tokio).iter(bare_call));
    group.bench_function("exec_durable", |b| b.to_async(&tokio).iter(|| exec_durable(&runtime)));
    group.finish();

    // The runtime's dev-dependencies turn on tokio's `test-util`, which routes
    // `tokio::time::Instant::now()` through a mutex-guarded test clock; production builds read the
    // system clock directly. The difference, per read, inside a runtime:
    let mut group = c.benchmark_group("clock");
    group.bench_function("tokio_instant_now", |b| b.to_async(&tokio).iter(|| async { tokio::time::Instant::now() }));
    group.bench_function("std_instant_now", |b| b.to_async(&tokio).iter(|| async { std::time::Instant::now() }));
    group.finish();
}

/// `COMPARE_ROUNDS=<rounds>`: instead of the criterion run, interleaves the variants: each round times
/// a block of calls of every variant, one after the other, then prints each variant's median time per
/// call and the median of its per-round ratios to backon and to tokio-retry2. On a shared machine the
/// load drifts over the seconds criterion spends on each variant; within one round every variant sees
/// about the same load. `COMPARE_ONLY=<name>[,<name>..]` runs only those variants (e.g. under
/// callgrind, to count one variant's instructions).
fn interleaved(rounds: usize) {
    const CALLS: u32 = 100_000;
    let tokio = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let runtime = Runtime::new(Instant);
    async fn time<F: Future>(mut call: impl FnMut() -> F) -> f64 {
        let start = std::time::Instant::now();
        for _ in 0..CALLS {
            black_box(call().await);
        }
        start.elapsed().as_nanos() as f64 / f64::from(CALLS)
    }
    let names = [
        "direct",
        "resilient",
        "backon",
        "tokio_retry2",
        "resilient_every_cap",
        "backon_capped",
        "exec_in_memory",
        "bare_call",
        "exec_durable",
    ];
    let only = std::env::var("COMPARE_ONLY").ok();
    let wanted = |name: &str| only.as_deref().is_none_or(|only| only.split(',').any(|one| one == name));
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    tokio.block_on(async {
        for _ in 0..rounds {
            for (index, column) in times.iter_mut().enumerate() {
                if !wanted(names[index]) {
                    continue;
                }
                column.push(match index {
                    0 => time(direct).await,
                    1 => time(|| resilient(&POLICY)).await,
                    2 => time(backon).await,
                    3 => time(tokio_retry2).await,
                    4 => time(|| resilient(&CAPPED)).await,
                    5 => time(backon_capped).await,
                    6 => time(|| async { runtime.exec("the question").await.unwrap() }).await,
                    7 => time(bare_call).await,
                    _ => time(|| exec_durable(&runtime)).await,
                });
            }
        }
    });
    let median = |values: &[f64]| {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let ratio = |ours: &[f64], theirs: &[f64]| {
        median(&ours.iter().zip(theirs).map(|(ours, theirs)| ours / theirs).collect::<Vec<_>>())
    };
    let (backon, tokio_retry2) = (&times[2], &times[3]);
    println!(
        "{rounds} interleaved rounds of {CALLS} calls per variant: median ns per call, median ratio to backon, \
         to tokio-retry2"
    );
    for (name, column) in names.iter().zip(&times) {
        if column.is_empty() {
            continue;
        }
        println!(
            "  {name:<20} {:>8.1} ns {:>6.2} {:>6.2}",
            median(column),
            ratio(column, backon),
            ratio(column, tokio_retry2)
        );
    }
    if !times[6].is_empty() && !times[7].is_empty() {
        println!("  exec_in_memory / bare_call, median per-round ratio: {:.2}", ratio(&times[6], &times[7]));
    }
}

criterion_group!(benches, success_path);

fn main() {
    if let Ok(rounds) = std::env::var("COMPARE_ROUNDS") {
        return interleaved(rounds.parse().expect("COMPARE_ROUNDS=<number of rounds>"));
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
