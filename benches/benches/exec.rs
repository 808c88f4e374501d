//! The cost of the retry machinery on the success path: `exec` through both layers against one bare
//! model call on the same in-memory provider. Run with `cargo bench --manifest-path benches/Cargo.toml --bench exec`.

use criterion::{Criterion, criterion_group, criterion_main};

use agentic_benches::Instant;
use agentic_runtime::message::Message;
use agentic_runtime::provider::Request;
use agentic_runtime::{Runtime, exec};

fn success_path(c: &mut Criterion) {
    let tokio = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let runtime = Runtime::new(Instant);
    let mut group = c.benchmark_group("success_path");
    group.bench_function("exec_both_layers", |b| {
        b.to_async(&tokio).iter(|| async { runtime.exec("the question").await.unwrap() })
    });
    group.bench_function("bare_call", |b| {
        b.to_async(&tokio).iter(|| async {
            let history = vec![Message::user("the question")];
            exec::call_once(&Instant, &Request::new(&history), None).await.unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, success_path);
criterion_main!(benches);
