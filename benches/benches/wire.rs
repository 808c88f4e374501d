//! One `exec` against the chaos server on loopback vs a bare streamed request with reqwest to the
//! same server, on every wire ([`WireKind::ALL`]), and the throughput of concurrent execs (on the
//! OpenAI wire). Run with `cargo bench --manifest-path benches/Cargo.toml --bench wire`.

use std::sync::Arc;

use agentic_chaos::{ChaosServer, Scenario, Step, WireFormat};
use agentic_runtime::exec::RuntimeBuilder;
use agentic_runtime::provider::WireKind;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// One request body every wire of the chaos server reads (each takes its own fields and ignores the
/// others'), so the bare request needs no table per wire.
const BODY: &str = r#"{"model":"m","max_tokens":256,"stream":true,
  "messages":[{"role":"user","content":"the question"}],
  "contents":[{"role":"user","parts":[{"text":"the question"}]}],
  "input":"the question"}"#;

fn over_loopback(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server =
        tokio.block_on(ChaosServer::start(Scenario::new().otherwise(Step::ok("the answer is forty two")))).unwrap();
    let client = agentic_test_support::http::client();

    let mut group = c.benchmark_group("loopback");
    for kind in WireKind::ALL {
        let wire = WireFormat::from_name(kind.name()).expect("the chaos server speaks every wire");
        let runtime = RuntimeBuilder::from_shared(kind.provider(server.base_url(wire), None, None)).build().unwrap();
        let endpoint = format!("http://{}{}", server.addr(), wire.request_path(kind.default_model(), true));
        group.bench_function(BenchmarkId::new("exec_both_layers", kind.name()), |b| {
            b.to_async(&tokio).iter(|| async { runtime.exec("the question").await.unwrap() })
        });
        group.bench_function(BenchmarkId::new("bare_reqwest_stream", kind.name()), |b| {
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
    }
    group.finish();

    let runtime =
        RuntimeBuilder::from_shared(WireKind::OpenAi.provider(server.base_url(WireFormat::OpenAi), None, None))
            .build()
            .unwrap();
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
