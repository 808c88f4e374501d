//! One tool call through a `Toolbox`: a direct async fn tool, and the same `echo` through MCP, to
//! the test server as a child process over stdio and in this process over streamable HTTP on
//! loopback. The difference is what MCP costs a call: JSON-RPC framing both ways, rmcp's service
//! loop, and the pipe or the HTTP round trip.
//! Run with `cargo bench --manifest-path benches/Cargo.toml --features mcp --bench mcp`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

use agentic_mcp::McpServer;
use agentic_runtime::tool::Toolbox;
use agentic_test_support::mcp::{serve_http, server_binary};

fn echo_schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
}

fn one_call(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let direct = Toolbox::new().with_fn("echo", "Repeats `text`.", echo_schema(), |input| async move {
        Ok(input["text"].as_str().unwrap_or_default().to_owned())
    });
    let (stdio, http, _server) = runtime.block_on(async {
        let stdio = McpServer::stdio(server_binary()).connect().await.expect("the test server starts");
        let server = serve_http(Default::default()).await;
        let http = McpServer::http(server.url()).connect().await.expect("the test server answers");
        (Toolbox::new().with_source(stdio), Toolbox::new().with_source(http), server)
    });
    let input = json!({"text": "hello"});
    let mut group = c.benchmark_group("mcp_call");
    group.measurement_time(Duration::from_secs(5));
    for (name, toolbox) in [("direct_fn", &direct), ("mcp_stdio", &stdio), ("mcp_http", &http)] {
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter(|| async {
                let text = toolbox.call("echo", input.clone()).await.expect("echo works");
                black_box(text)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, one_call);
criterion_main!(benches);
