//! What the adapter examples (`tower`, `reqwest_middleware`, `async_openai`) share: where the call
//! goes (the environment's server, or the embedded chaos server), the request, a chat-completions
//! event stream printed as it comes (`read_answer` for a client that hands its body's bytes), the
//! decisions printed, and the exit code.

#![allow(dead_code)]

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use agentic_chaos::{ChaosServer, Scenario, Step, TokenUsage};
use agentic_runtime::decision::Decision;
use agentic_runtime::provider::sse::{SseDecoder, SseEvent};

/// Where the chat completion goes.
pub struct Target {
    base_url: String,
    key: String,
    model: String,
    /// Kept for the call: the server stops when this drops.
    _chaos: Option<ChaosServer>,
}

impl Target {
    /// `OPENAI_BASE_URL` and `OPENAI_API_KEY` (`OPENAI_MODEL`, else `gpt-4o-mini`); without a base
    /// URL, the embedded chaos server playing a 429 with `Retry-After: 1`, a 503, then the answer.
    pub async fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let model = var("OPENAI_MODEL").unwrap_or_else(|| "gpt-4o-mini".to_owned());
        if let Some(base_url) = var("OPENAI_BASE_URL") {
            println!("calling {base_url} (OPENAI_BASE_URL)");
            return Self { base_url, key: var("OPENAI_API_KEY").unwrap_or_default(), model, _chaos: None };
        }
        let scenario =
            Scenario::new().then(Step::http_error(429).retry_after_secs(1)).then(Step::http_error(503)).otherwise(
                Step::ok("Retries are for transient failures; the server's Retry-After is the wait.")
                    .chunks(4)
                    .usage(TokenUsage::new(18, 14)),
            );
        let chaos = ChaosServer::start(scenario).await.expect("the embedded chaos server starts on 127.0.0.1");
        let base_url = chaos.openai_base_url();
        println!("calling the embedded chaos server at {base_url} (set OPENAI_BASE_URL to call a real one)");
        Self { base_url, key: "sk-chaos".to_owned(), model, _chaos: Some(chaos) }
    }

    /// The base URL (ends before `/chat/completions`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `{base}/chat/completions`.
    pub fn chat_completions_url(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }

    /// The API key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The model.
    pub fn model(&self) -> &str {
        &self.model
    }
}

/// A streamed chat completion that reports its usage.
pub fn streamed_request(target: &Target) -> serde_json::Value {
    serde_json::json!({
        "model": target.model(),
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "In one sentence: when should a client retry a model call?"}],
    })
}

/// Prints a decision of either retry layer as it is made.
pub fn print_decision(decision: &Decision) {
    let wait =
        decision.delay().map_or_else(|| "no retry".to_owned(), |delay| format!("retry in {} ms", delay.as_millis()));
    println!(
        "  [{} layer, call {}] {} -> {} ({}): {wait}",
        decision.layer().name(),
        decision.call(),
        decision.error(),
        decision.verdict(),
        decision.reason()
    );
}

/// Prints `why` on stderr; the exit code of a failed call.
pub fn failed(why: &str) -> ExitCode {
    eprintln!("\nthe call failed: {why}");
    ExitCode::FAILURE
}

/// The most of an error response's body printed.
const MAX_ERROR_BODY: usize = 16 * 1024;

/// Reads a response of status `status` whose body's bytes `next` gives (`None` at its end): the
/// answer printed as it streams, and the exit code; an error response's body (its first 16 KiB) on
/// stderr.
/// The longest wait for a body's next bytes: the policy's default `idle_timeout_ms`, for its reason
/// (a stream silent this long is dead; the server's own keep-alives come far more often).
pub const IDLE: Duration = Duration::from_millis(agentic_runtime::policy::rules::DEFAULT_IDLE_TIMEOUT_MS);

/// The next bytes, or why none came within [`IDLE`].
pub fn within_idle<T>(next: Result<Result<T, String>, tokio::time::error::Elapsed>) -> Result<T, String> {
    next.unwrap_or_else(|_| Err(format!("no bytes for {} s: the stream went silent", IDLE.as_secs())))
}

pub async fn read_answer<B: AsRef<[u8]>>(
    status: u16,
    mut next: impl AsyncFnMut() -> Result<Option<B>, String>,
) -> ExitCode {
    if !(200..300).contains(&status) {
        let mut body = Vec::new();
        while let Ok(Some(bytes)) = within_idle(tokio::time::timeout(IDLE, next()).await) {
            body.extend_from_slice(bytes.as_ref());
            if body.len() >= MAX_ERROR_BODY {
                body.truncate(MAX_ERROR_BODY);
                break;
            }
        }
        return failed(&format!("the server answered {status}: {}", String::from_utf8_lossy(&body).trim()));
    }
    let mut stream = ChatStream::new();
    loop {
        match within_idle(tokio::time::timeout(IDLE, next()).await) {
            Ok(Some(bytes)) => {
                if let Err(error) = stream.feed(bytes.as_ref()) {
                    return failed(&error);
                }
            }
            Ok(None) => return stream.finish(),
            Err(error) => return failed(&format!("the stream failed: {error}")),
        }
    }
}

/// A chat-completions event stream, printed as it comes.
pub struct ChatStream {
    decoder: SseDecoder,
    events: Vec<SseEvent>,
    answer: String,
    usage: Option<(u64, u64)>,
    done: bool,
}

impl ChatStream {
    pub fn new() -> Self {
        print!("answer: ");
        Self { decoder: SseDecoder::new(), events: Vec::new(), answer: String::new(), usage: None, done: false }
    }

    /// Feeds the next bytes of the body; `Err` when the stream is not one.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.decoder
            .feed(bytes, &mut self.events)
            .map_err(|error| format!("the event stream is malformed: {error}"))?;
        for event in std::mem::take(&mut self.events) {
            if event.data == "[DONE]" {
                self.done = true;
                continue;
            }
            let chunk: serde_json::Value = serde_json::from_str(&event.data)
                .map_err(|error| format!("a chunk is not JSON ({error}): {}", event.data))?;
            self.chunk(&chunk);
        }
        Ok(())
    }

    /// Takes in one chunk: its text delta and, in the last one, the usage.
    pub fn chunk(&mut self, chunk: &serde_json::Value) {
        if let Some(text) = chunk["choices"][0]["delta"]["content"].as_str() {
            print!("{text}");
            let _ = std::io::stdout().flush();
            self.answer.push_str(text);
        }
        let usage = &chunk["usage"];
        if let (Some(input), Some(output)) = (usage["prompt_tokens"].as_u64(), usage["completion_tokens"].as_u64()) {
            self.usage = Some((input, output));
        }
    }

    /// Marks the stream's end as seen (a client that reads typed chunks sees no `[DONE]`).
    pub fn ended(&mut self) {
        self.done = true;
    }

    /// The outcome: the tokens, or why the stream is no answer.
    pub fn finish(self) -> ExitCode {
        println!();
        if self.answer.is_empty() {
            return failed("the stream held no text");
        }
        if !self.done {
            return failed("the stream ended before its end (`[DONE]`)");
        }
        match self.usage {
            Some((input, output)) => println!("tokens: {input} in, {output} out"),
            None => println!("tokens: the server reported none"),
        }
        ExitCode::SUCCESS
    }
}
