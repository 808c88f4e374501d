//! One streamed chat completion through a team's own tower stack: reqwest's client as a tower
//! `Service`, with `agentic_runtime::tower::RetryLayer` on the default policy around it.
//!
//! Reads `OPENAI_BASE_URL` (`https://api.openai.com/v1`, or any Chat Completions server) and
//! `OPENAI_API_KEY`. Without `OPENAI_BASE_URL` it starts the embedded chaos server on 127.0.0.1
//! (no key, no network), which answers with a 429 and its `Retry-After`, then a 503, then the
//! answer. Prints the answer as it streams, every retry decision and the tokens; exits 1 when the
//! call fails.
//!
//! ```text
//! cargo run -p agentic-examples --example tower --features tower
//! ```

#[path = "adapters/mod.rs"]
mod adapters;

use std::process::ExitCode;

use agentic_runtime::tower::RetryLayer;
use tower::{ServiceBuilder, ServiceExt as _};

#[tokio::main]
async fn main() -> ExitCode {
    let target = adapters::Target::from_env().await;
    let layer = RetryLayer::default().with_name("tower example").with_observer(adapters::print_decision);
    let service = ServiceBuilder::new().layer(layer).service(reqwest::Client::new());
    let request = reqwest::Client::new()
        .post(target.chat_completions_url())
        .bearer_auth(target.key())
        .header("content-type", "application/json")
        .body(adapters::streamed_request(&target).to_string())
        .build();
    let request = match request {
        Ok(request) => request,
        Err(error) => return adapters::failed(&format!("the request cannot be built: {error}")),
    };
    let mut response = match service.oneshot(request).await {
        Ok(response) => response,
        Err(failure) => return adapters::failed(&failure.to_string()),
    };
    let status = response.status().as_u16();
    adapters::read_answer(status, async || response.chunk().await.map_err(|error| error.to_string())).await
}
