//! Time to first delta: from starting a call to its first text delta, through
//! `Runtime::exec_stream` (both layers, the stream's tap) and through the bare provider
//! (`Provider::stream`), on every wire ([`WireKind::ALL`]), against the chaos server on loopback
//! answering in several chunks. Run with
//! `cargo bench --manifest-path benches/Cargo.toml --bench first_delta`.
//!
//! Only the wait for the first delta is timed; the rest of each answer is read outside the clock,
//! so that both variants end their responses and reuse their pooled connection alike.

use std::time::{Duration, Instant};

use agentic_chaos::{ChaosServer, Scenario, Step, WireFormat};
use agentic_runtime::exec::{ExecEvent, RuntimeBuilder};
use agentic_runtime::message::Message;
use agentic_runtime::provider::{Request, StreamEvent, WireKind};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures_util::StreamExt as _;

const ANSWER: &str = "the answer is forty two, said in a dozen words over the wire";

fn first_delta(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = tokio.block_on(ChaosServer::start(Scenario::new().otherwise(Step::ok(ANSWER).chunks(12)))).unwrap();

    let mut group = c.benchmark_group("first_delta");
    for kind in WireKind::ALL {
        let wire = WireFormat::from_name(kind.name()).expect("the chaos server speaks every wire");
        let provider = kind.provider(server.base_url(wire), None, None);
        let runtime = RuntimeBuilder::from_shared(provider.clone()).build().unwrap();
        group.bench_function(BenchmarkId::new("exec_stream", kind.name()), |b| {
            b.to_async(&tokio).iter_custom(|iters| {
                let runtime = &runtime;
                async move {
                    let mut waited = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        let mut stream = runtime.exec_stream("the question");
                        loop {
                            match stream.next().await.expect("the stream ends with Done") {
                                ExecEvent::TextDelta(_) => break,
                                ExecEvent::Done(outcome) => panic!("no delta before Done: {outcome:?}"),
                                _ => {}
                            }
                        }
                        waited += start.elapsed();
                        while stream.next().await.is_some() {}
                    }
                    waited
                }
            })
        });
        group.bench_function(BenchmarkId::new("bare_provider", kind.name()), |b| {
            b.to_async(&tokio).iter_custom(|iters| {
                let provider = &provider;
                async move {
                    let history = vec![Message::user("the question")];
                    let request = Request::new(&history);
                    let mut waited = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        let mut stream = provider.stream(&request);
                        loop {
                            match stream.next().await.expect("a delta before the end").unwrap() {
                                StreamEvent::TextDelta(_) => break,
                                StreamEvent::Done { .. } => panic!("no delta before Done"),
                                _ => {}
                            }
                        }
                        waited += start.elapsed();
                        while stream.next().await.is_some() {}
                    }
                    waited
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, first_delta);
criterion_main!(benches);
