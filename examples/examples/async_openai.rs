//! One streamed chat completion through async-openai, with `agentic_runtime::tower::RetryLayer` as
//! its HTTP service (`Client::with_http_service`) on the default policy.
//!
//! Reads `OPENAI_BASE_URL` and `OPENAI_API_KEY`; without `OPENAI_BASE_URL` it starts the embedded
//! chaos server on 127.0.0.1 (no key, no network), which answers with a 429 and its `Retry-After`,
//! then a 503, then the answer. Prints the answer as it streams, every retry decision and the
//! tokens; exits 1 when the call fails.
//!
//! ```text
//! cargo run -p agentic-examples --example async_openai --features async-openai
//! ```

#[path = "adapters/mod.rs"]
mod adapters;

use std::process::ExitCode;

use agentic_runtime::tower::RetryLayer;
use async_openai::config::OpenAIConfig;
use async_openai::middleware::ReqwestService;
use async_openai::types::chat::CreateChatCompletionRequest;
use futures_util::StreamExt as _;

#[tokio::main]
async fn main() -> ExitCode {
    let target = adapters::Target::from_env().await;
    let config = OpenAIConfig::new().with_api_base(target.base_url()).with_api_key(target.key());
    // The layer cannot see the key in a request async-openai builds after it: named here, no piece
    // of it shows in a decision when a server echoes it.
    let layer = RetryLayer::default()
        .with_name("async-openai example")
        .redacting(target.key())
        .with_observer(adapters::print_decision);
    let service = layer.around(ReqwestService::new(reqwest::Client::new()));
    let client = async_openai::Client::with_config(config).with_http_service(service);
    let request: CreateChatCompletionRequest = match serde_json::from_value(adapters::streamed_request(&target)) {
        Ok(request) => request,
        Err(error) => return adapters::failed(&format!("the request is not one async-openai takes: {error}")),
    };
    let mut chunks = match client.chat().create_stream(request).await {
        Ok(chunks) => chunks,
        Err(error) => return adapters::failed(&error.to_string()),
    };
    let mut stream = adapters::ChatStream::new();
    loop {
        let next = tokio::time::timeout(adapters::IDLE, chunks.next()).await.map(Ok);
        let chunk = match adapters::within_idle(next) {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(silent) => return adapters::failed(&silent),
        };
        match chunk.map(serde_json::to_value) {
            Ok(Ok(chunk)) => stream.chunk(&chunk),
            Ok(Err(error)) => return adapters::failed(&format!("a chunk does not serialize: {error}")),
            Err(error) => return adapters::failed(&format!("the stream failed: {error}")),
        }
    }
    // async-openai ends its stream at `[DONE]` and hands no event for it.
    stream.ended();
    stream.finish()
}
