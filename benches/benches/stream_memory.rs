//! The memory a streamed exec holds, whatever its consumer's speed: a long answer (1 and 3 MiB,
//! 64-byte chunks) from the chaos server on loopback, read by `Runtime::exec` (the reference: the
//! reply alone), by a consumer of `Runtime::exec_stream` that takes each event at once, and by one
//! that pauses 1 ms every 16 events (the wall clock: a program, not a test). The figure is the
//! peak of live heap bytes over those live before the exec (both ends, the server being in this
//! process), the least of [`RUNS`] runs, and at the end the process's peak resident set (Linux's
//! `VmHWM`). It exits non-zero if a streamed exec held more than `exec` by over [`SLACK`]: a
//! stream that buffered what its reader had not read yet. Run with
//! `cargo bench --manifest-path benches/Cargo.toml --bench stream_memory`.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::Runtime;
use agentic_runtime::exec::{ExecEvent, ExecStream};
use agentic_runtime::provider::OpenAiProvider;
use agentic_test_support::peak_alloc::{PeakBytes, live, peak, reset_peak};
use futures_util::StreamExt as _;

#[global_allocator]
static ALLOCATOR: PeakBytes = PeakBytes;

const MIB: usize = 1 << 20;
/// Runs of each reader; the figure is the least peak.
const RUNS: usize = 3;
/// Each delta's bytes.
const CHUNK_BYTES: usize = 64;
/// What a streamed exec may hold over `exec`. The 32 deltas the stream keeps for its reader are
/// 2 KiB here; without that cap, one poll of the exec queues what one read of the socket brings
/// (110 to 220 KiB when measured), and a stream fed by a task of its own would queue the answer.
const SLACK: usize = 64 * 1024;

/// How a consumer reads the stream.
#[derive(Clone, Copy)]
enum Consumer {
    /// `Runtime::exec`: no stream, the reply alone.
    Exec,
    /// Each event as soon as it comes.
    Fast,
    /// A 1 ms pause every 16 events.
    Slow,
}

/// Reads `stream` to its end as `consumer` does; the text the consumer kept, in bytes.
async fn read(mut stream: ExecStream<'_>, consumer: Consumer) -> usize {
    let (mut kept, mut events) = (0, 0usize);
    while let Some(event) = stream.next().await {
        match event {
            ExecEvent::TextDelta(text) => kept += text.len(),
            ExecEvent::Rewind { .. } => kept = 0,
            ExecEvent::Done(outcome) => assert_eq!(outcome.expect("the exec answers").text().len(), kept),
            _ => {}
        }
        events += 1;
        if matches!(consumer, Consumer::Slow) && events % 16 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    kept
}

/// The peak heap bytes over those live before, while `consumer` reads one answer, and its time.
async fn held(runtime: &Runtime, consumer: Consumer) -> (usize, Duration) {
    let start = Instant::now();
    reset_peak();
    let before = live();
    let bytes = match consumer {
        Consumer::Exec => runtime.exec("the question").await.expect("the exec answers").text().len(),
        Consumer::Fast | Consumer::Slow => read(runtime.exec_stream("the question"), consumer).await,
    };
    std::hint::black_box(bytes);
    (peak().saturating_sub(before), start.elapsed())
}

fn vm_hwm_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<f64>().ok()? / 1024.0)
}

fn main() -> ExitCode {
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let mut bounded = true;
    println!("answer  reader                   peak heap over before  x answer   time");
    for mib in [1, 3] {
        let text = "word ".repeat(mib * MIB / 5);
        let chunks = u32::try_from(text.len() / CHUNK_BYTES).unwrap();
        let server = tokio.block_on(ChaosServer::start(Scenario::new().otherwise(Step::ok(text).chunks(chunks))));
        let server = server.expect("the chaos server starts");
        let runtime = Runtime::new(OpenAiProvider::new(server.openai_base_url(), None));
        // Warm: the connection pool, the runtime's lazily built state.
        tokio.block_on(held(&runtime, Consumer::Exec));
        let mut reference = 0;
        for (name, consumer) in [
            ("exec (the reply alone)", Consumer::Exec),
            ("exec_stream, fast", Consumer::Fast),
            ("exec_stream, slow", Consumer::Slow),
        ] {
            // The least of a few runs: how much one read of the socket brings varies from run to
            // run (by up to 140 KiB when measured), in either reader.
            let runs: Vec<_> = (0..RUNS).map(|_| tokio.block_on(held(&runtime, consumer))).collect();
            let (bytes, time) = runs.into_iter().min().expect("at least one run");
            let (held_mib, ratio) = (bytes as f64 / MIB as f64, bytes as f64 / (mib * MIB) as f64);
            println!("{mib} MiB   {name:<24} {held_mib:>10.2} MiB {ratio:>14.2} {:>7.2} s", time.as_secs_f64());
            match consumer {
                Consumer::Exec => reference = bytes,
                Consumer::Fast | Consumer::Slow => {
                    let over = (bytes as f64 - reference as f64) / 1024.0;
                    println!("        over the reply alone: {over:+.1} KiB");
                    bounded &= bytes <= reference + SLACK;
                }
            }
        }
    }
    if let Some(mib) = vm_hwm_mib() {
        println!("peak resident set of the process (VmHWM): {mib:.1} MiB");
    }
    if bounded {
        ExitCode::SUCCESS
    } else {
        println!("a streamed exec held more than `exec` by over {} KiB", SLACK / 1024);
        ExitCode::FAILURE
    }
}
