//! One streamed chat completion through a reqwest-middleware client with `tower::RetryMiddleware`
//! on the default policy: the answer as it streams, every retry decision, and the tokens.
//!
//! Reads `OPENAI_BASE_URL` and `OPENAI_API_KEY` (and `OPENAI_MODEL`, default `gpt-4o-mini`). When
//! `OPENAI_BASE_URL` is unset it starts the embedded chaos server on 127.0.0.1 (no key, no network)
//! with a 429 carrying `Retry-After: 1`, then a 503, then an answer with its usage, so that the
//! retries show. Exits non-zero, with the error on stderr, when the call fails, the status is not a
//! success, or the stream ends before its `[DONE]`.
//!
//! ```text
//! cargo run -p agentic-examples --example reqwest_middleware --features reqwest-middleware
//! OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... \
//!     cargo run -p agentic-examples --example reqwest_middleware --features reqwest-middleware
//! ```

use std::error::Error;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, Step};
use agentic_runtime::Decision;
use agentic_runtime::tower::{RetryLayer, RetryMiddleware};

/// The longest a streamed answer may stay silent: a model that is thinking sends its first chunk
/// within seconds, and a stream silent for a minute is one that stalled.
const IDLE: Duration = Duration::from_secs(60);

/// The longest line of the event stream kept while it is incomplete: a chunk is a few hundred
/// bytes, so a longer line is no chat completion stream.
const MAX_LINE: usize = 1 << 20;

/// The most of an error response's body printed.
const MAX_ERROR_BODY: usize = 4096;

fn print_decision(decision: &Decision) {
    println!("retry decision: {decision}");
}

/// The server to ask (and the chaos server, kept running while it is asked).
async fn server() -> std::io::Result<(String, Option<ChaosServer>)> {
    if let Some(base_url) = std::env::var("OPENAI_BASE_URL").ok().filter(|url| !url.is_empty()) {
        println!("OPENAI_BASE_URL is set: asking {base_url}");
        return Ok((base_url, None));
    }
    let scenario = Scenario::new()
        .then(Step::http_error(429).retry_after_secs(1))
        .then(Step::http_error(503))
        .then(Step::ok("Retry what is transient, stop at once on what is permanent.").chunk_delay_ms(40));
    let server = ChaosServer::start(scenario).await?;
    println!("chaos server on {} (set OPENAI_BASE_URL to ask a real server)", server.addr());
    println!("scenario: a 429 with Retry-After: 1, a 503, then an answer with its usage\n");
    Ok((server.openai_base_url(), Some(server)))
}

/// What the event stream's `data:` lines said, as they came.
#[derive(Default)]
struct Streamed {
    usage: Option<serde_json::Value>,
    done: bool,
}

impl Streamed {
    /// Prints one `data:` line's text, and keeps its usage and the stream's end.
    fn line(&mut self, line: &str) -> Result<(), Box<dyn Error>> {
        let Some(data) = line.trim_end_matches('\r').strip_prefix("data:").map(str::trim) else { return Ok(()) };
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: serde_json::Value =
            serde_json::from_str(data).map_err(|error| format!("a chunk that is no JSON: {error}"))?;
        if let Some(error) = chunk.get("error") {
            return Err(format!("the stream carried an error: {error}").into());
        }
        if let Some(text) = chunk["choices"][0]["delta"]["content"].as_str() {
            print!("{text}");
            std::io::stdout().flush()?;
        }
        if chunk["usage"].is_object() {
            self.usage = Some(chunk["usage"].clone());
        }
        Ok(())
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    // reqwest 0.13's rustls without a provider of its own: ring, as the HTTP providers use.
    rustls::crypto::ring::default_provider()
        .install_default()
        .map_err(|_| "another rustls crypto provider is installed already")?;
    let (base_url, _chaos) = server().await?;
    let key = std::env::var("OPENAI_API_KEY").ok().filter(|key| !key.is_empty());
    let model = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".to_owned());

    let middleware = RetryMiddleware::new(RetryLayer::default().with_observer(print_decision));
    let client = reqwest_middleware::ClientBuilder::new(reqwest_013::Client::new()).with(middleware).build();
    let body = serde_json::json!({
        "model": model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "In one sentence: when should a client retry a model call?"}],
    });
    let mut request = client
        .post(format!("{}/chat/completions", base_url.trim_end_matches('/')))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(key) = &key {
        request = request.bearer_auth(key);
    }
    let mut response = request.send().await?;
    let status = response.status();
    if !status.is_success() {
        let body = response.bytes().await.unwrap_or_default();
        let shown = String::from_utf8_lossy(&body[..body.len().min(MAX_ERROR_BODY)]).into_owned();
        return Err(format!("the server answered {status}: {shown}").into());
    }

    print!("answer: ");
    let mut streamed = Streamed::default();
    let mut pending = Vec::new();
    while let Some(bytes) = tokio::time::timeout(IDLE, response.chunk())
        .await
        .map_err(|_| format!("the stream was silent for {} s", IDLE.as_secs()))??
    {
        pending.extend_from_slice(&bytes);
        while let Some(end) = pending.iter().position(|&byte| byte == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            streamed.line(std::str::from_utf8(&line)?)?;
        }
        if pending.len() > MAX_LINE {
            return Err(format!("a line of the stream is longer than {MAX_LINE} bytes").into());
        }
    }
    println!();
    if !streamed.done {
        return Err("the stream ended before its [DONE]".into());
    }
    match streamed.usage {
        Some(usage) => println!(
            "tokens: {} in, {} out, {} in all",
            usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]
        ),
        None => println!("tokens: the server sent no usage chunk"),
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
