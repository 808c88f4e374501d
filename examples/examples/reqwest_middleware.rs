//! One streamed chat completion through a reqwest-middleware client (0.5, on reqwest 0.13), with
//! `agentic_runtime::tower::RetryMiddleware` on the default policy in its chain.
//!
//! Reads `OPENAI_BASE_URL` and `OPENAI_API_KEY`; without `OPENAI_BASE_URL` it starts the embedded
//! chaos server on 127.0.0.1 (no key, no network), which answers with a 429 and its `Retry-After`,
//! then a 503, then the answer. Prints the answer as it streams, every retry decision and the
//! tokens; exits 1 when the call fails or the server's status is no success.
//!
//! ```text
//! cargo run -p agentic-examples --example reqwest_middleware --features reqwest-middleware
//! ```

#[path = "adapters/mod.rs"]
mod adapters;

use std::process::ExitCode;

use agentic_runtime::tower::{RetryLayer, RetryMiddleware};

#[tokio::main]
async fn main() -> ExitCode {
    let target = adapters::Target::from_env().await;
    let layer = RetryLayer::default().with_name("reqwest-middleware example").with_observer(adapters::print_decision);
    let client =
        reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(RetryMiddleware::new(layer)).build();
    let sent = client
        .post(target.chat_completions_url())
        .bearer_auth(target.key())
        .header("content-type", "application/json")
        .body(adapters::streamed_request(&target).to_string())
        .send()
        .await;
    // The error is the client's last, or the failure (with its decisions) when no call left one.
    let mut response = match sent {
        Ok(response) => response,
        Err(error) => return adapters::failed(&error.to_string()),
    };
    let status = response.status().as_u16();
    adapters::read_answer(status, async || response.chunk().await.map_err(|error| error.to_string())).await
}
