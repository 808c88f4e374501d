//! One `exec` against the chaos server on loopback vs a bare streamed request with reqwest to the
//! same server, and the throughput of concurrent execs.
//! Run with `cargo bench -p agentic-runtime --bench wire`.

use std::sync::Arc;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::{OpenAiProvider, Runtime};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const BODY: &str = r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"the question"}],"stream":true}"#;

fn over_loopback(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server =
        tokio.block_on(ChaosServer::start(Scenario::new().otherwise(Step::ok("the answer is forty two")))).unwrap();
    let url = server.openai_base_url();
    let runtime = Runtime::new(OpenAiProvider::new(url.clone(), None));
    let client = reqwest::Client::new();
    let endpoint = format!("{url}/chat/completions");

    let mut group = c.benchmark_group("loopback");
    group.bench_function("exec_both_layers", |b| {
        b.to_async(&tokio).iter(|| async { runtime.exec("the question").await.unwrap() })
    });
    group.bench_function("bare_reqwest_stream", |b| {
        b.to_async(&tokio).iter(|| async {
            let response =
                client.post(&endpoint).header("content-type", "application/json").body(BODY).send().await.unwrap();
            let mut response = response.error_for_status().unwrap();
            let mut bytes = 0;
            while let Some(chunk) = response.chunk().await.unwrap() {
                bytes += chunk.len();
            }
            bytes
        })
    });
    group.finish();

    let mut group = c.benchmark_group("throughput");
    const CONCURRENT: usize = 64;
    group.throughput(Throughput::Elements(CONCURRENT as u64));
    let shared = Arc::new(runtime);
    group.bench_function("exec_64_concurrent", |b| {
        b.to_async(&tokio).iter(|| {
            let shared = Arc::clone(&shared);
            async move {
                let calls: Vec<_> = (0..CONCURRENT)
                    .map(|_| {
                        let runtime = Arc::clone(&shared);
                        tokio::spawn(async move { runtime.exec("the question").await.unwrap() })
                    })
                    .collect();
                for call in calls {
                    call.await.unwrap();
                }
            }
        })
    });
    group.finish();
}

criterion_group!(benches, over_loopback);
criterion_main!(benches);
