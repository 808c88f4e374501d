//! Both layers' verdicts over a corpus of realistic error texts (`runtime/corpus/errors.txt`, one per line:
//! OpenAI, Anthropic, Gemini, vLLM, Ollama, OpenRouter and other providers, gateways, proxies' HTML
//! pages, transport errors, empty texts), in time per message: each layer's verdict alone, and
//! both from one scan (`classify::verdicts`, what the exec loop does). Before the timings it prints the
//! verdicts' distribution, as a sanity check of the corpus.
//! Run with `cargo bench --manifest-path benches/Cargo.toml --bench classify`;
//! `CLASSIFY_ROUNDS=<n>` on the bench binary classifies instead (see `rounds`), for callgrind.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group};

use agentic_runtime::classify::{exec_verdict, session_verdict, verdicts};
use agentic_runtime::message::{AssistantMessage, StopReason};

const CORPUS: &str = include_str!("../../runtime/corpus/errors.txt");

/// The rule's name without its data: `RetryPattern("overloaded")` -> `RetryPattern`.
fn rule(reason: &impl std::fmt::Debug) -> String {
    let debug = format!("{reason:?}");
    debug.split('(').next().unwrap_or_default().to_owned()
}

fn print_distribution(corpus: &[&str]) {
    let mut session: BTreeMap<(bool, String), usize> = BTreeMap::new();
    let mut exec: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for text in corpus {
        let verdict = session_verdict(StopReason::Error, text, None);
        *session.entry((verdict.retryable, rule(&verdict.reason))).or_default() += 1;
        let verdict = exec_verdict(text, None);
        *exec.entry((verdict.action.name(), rule(&verdict.reason))).or_default() += 1;
    }
    let bytes: usize = corpus.iter().map(|text| text.len()).sum();
    let longest = corpus.iter().map(|text| text.len()).max().unwrap_or(0);
    println!("corpus: {} messages, {bytes} bytes, the longest {longest} bytes", corpus.len());
    let retryable: usize = session.iter().filter(|((retry, _), _)| *retry).map(|(_, n)| n).sum();
    println!("layer 1 (session_verdict): {retryable} retryable, {} not", corpus.len() - retryable);
    for ((retryable, rule), count) in &session {
        println!("  {:<14} {rule:<18} {count:>4}", if *retryable { "retryable" } else { "not retryable" });
    }
    println!("layer 2 (exec_verdict):");
    for ((action, rule), count) in &exec {
        println!("  {action:<16} {rule:<18} {count:>4}");
    }
}

/// The whole corpus, and its proxies' HTML pages: the longest texts, the worst case per message.
fn sets() -> [(&'static str, Vec<&'static str>); 2] {
    let corpus: Vec<&str> = CORPUS.lines().collect();
    let pages = corpus.iter().copied().filter(|text| text.len() > 1000).collect();
    [("classify_corpus", corpus), ("classify_long_pages", pages)]
}

fn classify(c: &mut Criterion) {
    let sets = sets();
    print_distribution(&sets[0].1);
    for (name, texts) in &sets {
        let mut group = c.benchmark_group(*name);
        group.throughput(Throughput::Elements(texts.len() as u64));
        // What the exec loop does with a failed call that layer 1 hands up: both verdicts, from one
        // scan of the text (layer 2 reads it as "ModelError: <text>", an error event's failure text).
        let messages: Vec<AssistantMessage> =
            texts.iter().map(|text| AssistantMessage::error_event(*text, None)).collect();
        group.bench_function("both_layers", |b| {
            b.iter(|| {
                for message in &messages {
                    black_box(verdicts(black_box(message)));
                }
            })
        });
        group.bench_function("session_verdict", |b| {
            b.iter(|| {
                for text in texts.iter() {
                    black_box(session_verdict(StopReason::Error, black_box(text), None));
                }
            })
        });
        group.bench_function("exec_verdict", |b| {
            b.iter(|| {
                for text in texts.iter() {
                    black_box(exec_verdict(black_box(text), None));
                }
            })
        });
        group.finish();
    }
}

/// `CLASSIFY_ROUNDS=<n>`: instead of the criterion run, both layers' verdicts (`verdicts`, as the
/// exec loop asks them) of every message of one set, `CLASSIFY_ONLY=classify_corpus` (the default)
/// or `classify_long_pages`, `n` times; prints the set's size. Under callgrind, two runs with
/// different `n` give the instructions per message without the start-up
/// (`benches/instructions.sh`).
fn rounds(rounds: usize) {
    let only = std::env::var("CLASSIFY_ONLY").unwrap_or_else(|_| "classify_corpus".to_owned());
    let Some((name, texts)) = sets().into_iter().find(|(name, _)| *name == only) else {
        panic!("CLASSIFY_ONLY={only}: the sets are classify_corpus and classify_long_pages");
    };
    let messages: Vec<AssistantMessage> = texts.iter().map(|text| AssistantMessage::error_event(*text, None)).collect();
    for _ in 0..rounds {
        for message in &messages {
            black_box(verdicts(black_box(message)));
        }
    }
    println!("{name}: {} messages, {rounds} rounds", messages.len());
}

criterion_group!(benches, classify);

fn main() {
    if let Ok(count) = std::env::var("CLASSIFY_ROUNDS") {
        return rounds(count.parse().expect("CLASSIFY_ROUNDS=<number of rounds>"));
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
