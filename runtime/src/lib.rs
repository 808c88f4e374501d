//! Resilient model calls for LLM agents.
//!
//! `agentic-runtime` runs every model call through two retry layers: the session retry (layer 1)
//! retries transient model errors — rate limits, overloaded servers, dropped streams — after 2 s,
//! 4 s and 8 s; [`Runtime::exec`] (layer 2) retries failed attempts after 1.5 s and 3 s and fails
//! fast on permanent errors (a bad key, a 4xx, an exhausted quota), programming errors and context
//! overflow. One deadline, one call cap and the server's Retry-After bound both layers together.
//! Every decision carries the rule that made it.
//!
//! ```
//! use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), agentic_runtime::ExecError> {
//! let provider = ScriptedProvider::new([
//!     Scripted::http(429, "Too Many Requests"),
//!     Scripted::error(""), // a dropped stream
//!     Scripted::ok("The answer is 42."),
//! ]);
//! let runtime = Runtime::new(provider.clone());
//! let reply = runtime.exec("What is the answer?").await?;
//! assert_eq!(reply.text(), "The answer is 42.");
//! assert_eq!(reply.calls(), 3);
//! for decision in reply.decisions() {
//!     println!("{decision}"); // layer, call, error, verdict, reason and delay of each failure
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Where to start
//!
//! The crate's root holds what five jobs need; everything else lives in a module named after what
//! it is.
//!
//! - **Retry any async call** (an HTTP request, a database query, a tool of your own):
//!   [`Resilient`] with a [`RetryPolicy`], the same classifiers, deadline and decisions as an exec
//!   ([`resilient`]; `tower`, with the `tower` feature, for an HTTP client's stack).
//! - **Annotate an agent function**: [`agentic_function`] on an `async fn` taking a [`Runtime`]
//!   rewrites its `runtime.exec(..)`, `runtime.exec_json(..)` and `runtime.request(..)` calls to run
//!   under the function's policy, checked at compile time. Test it with a [`ScriptedProvider`]
//!   playing [`Scripted`] answers.
//! - **Fall back across providers**: [`Runtime::builder`] takes the fallback targets, their
//!   breakers, the retry quota, pacing and a shared store ([`exec::RuntimeBuilder`], [`storm`]); the
//!   HTTP providers are in [`provider`].
//! - **Use tools**: a [`Toolbox`] of functions (typed or over JSON) the model may call; a tool's
//!   [`ToolError`] goes back to the model, never to the retry layers ([`tool`]). MCP servers'
//!   tools come from the `agentic-mcp` crate.
//! - **Observe**: each exec's [`Decision`](decision::Decision)s (on the [`Reply`] or the [`ExecError`], and live through
//!   an observer) are the place to start; [`observe`] has the `tracing` conventions, the JSONL task
//!   trace and the failure journal, and the `agentic-otel` crate exports to OpenTelemetry.
//!
//! `Runtime::exec` and `exec_json` are the one-line calls; [`Runtime::request`] gives every other
//! combination (a policy, tools, a schema known at run time, a typed reply with its facts).
//!
//! # Features
//!
//! - `providers` (default): the HTTP providers, `HttpProvider` and its four wires (`OpenAiProvider`,
//!   `AnthropicProvider`, `GeminiProvider`, `ResponsesProvider`; reqwest 0.13 with rustls on ring,
//!   set up by the crate), and [`Classify`](resilient::Classify) for reqwest's errors and statuses. Without
//!   it (`default-features = false`) the crate is the core: the policy, both layers, the
//!   classifiers, `Resilient` around any operation, the tool loop, traces, the journal, the
//!   [`Provider`](provider::Provider) trait with its request and event types, the SSE decoder ([`provider::sse`]), the
//!   [`ScriptedProvider`] and the attribute.
//! - `tower`: `tower::RetryLayer`, both retry layers around any tower `Service` of HTTP requests
//!   (a team's own client; turns on `providers`, whose reading of error responses it shares).
//! - `async-openai`: the layer as async-openai's HTTP service (`Client::with_http_service`), and
//!   `Classify` for its `OpenAIError`.
//! - `reqwest-middleware`: `tower::RetryMiddleware`, and `Classify` for `reqwest_middleware::Error`.
//! - `genai`: `Classify` for `genai::Error` (genai 0.7 needs Rust 1.88, above this crate's 1.85).
//!
//! # Integrations, crates of their own
//!
//! Built on this crate's public API, each with its own dependencies:
//!
//! - `agentic-mcp`: MCP servers' tools; its `McpToolbox` is a [`ToolSource`](tool::ToolSource),
//!   added to a toolbox with [`Toolbox::with_source`].
//! - `agentic-redis`: fleet mode, `RedisStore`, a [`SharedStore`](storm::store::SharedStore) in
//!   Redis: the retry quota, the cooldowns, the breakers and the pacer's limits shared by processes.
//! - `agentic-otel`: OpenTelemetry export over OTLP/HTTP of the spans and metric events the core
//!   emits through `tracing` (their names: [`observe::semconv`]).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![warn(unreachable_pub, missing_debug_implementations)]

mod answer;
pub mod classify;
pub mod compact;
pub mod decision;
mod durable;
mod error;
pub mod exec;
pub mod message;
pub mod observe;
pub mod policy;
pub mod provider;
pub mod resilient;
mod retry;
pub mod spend;
pub mod storm;
mod stream;
pub mod tool;
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;
mod util;

pub use answer::{ExecError, ExecErrorKind, Reply};
pub use exec::Runtime;
pub use policy::RetryPolicy;
pub use provider::{Scripted, ScriptedProvider};
pub use resilient::Resilient;
pub use tool::{ToolError, Toolbox};

/// The README's examples, compiled and run as doctests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

// The attribute's docs live here rather than in `agentic-macros`: their examples need this
// crate, and as doc tests of a proc-macro crate they would build a second copy of it.
#[doc = include_str!("agentic_function.md")]
#[doc(inline)]
pub use agentic_macros::agentic_function;

/// The JSON Schema crate `Runtime::exec_json` describes answer types with (derive
/// `schemars::JsonSchema` on them), re-exported so its version always matches.
pub use schemars;

/// For the fuzz targets (`fuzz/`) and the corpus replay tests: the crate-private decoders. Not an API.
#[doc(hidden)]
pub mod __fuzz {
    pub use crate::provider::fuzz::{cooldown, pace, sse};
    #[cfg(feature = "providers")]
    pub use crate::provider::fuzz_http::{WireFormat, http_error, retry_hints, stream};
}

/// For `agentic-redis`'s tests, which run the same seeded sequences through its Lua scripts and
/// through the state machines they are written after (the breaker, the retry quota's window, the
/// pacer), and compare every answer. Not an API: no promise holds from one version to the next.
#[doc(hidden)]
pub mod __twins {
    pub use crate::storm::twins::{Admission, Breaker, Ledger, Pacer};
}

/// What the code `#[agentic_function]` generates refers to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::answer::reply::Reply;
    pub use crate::compact::Compactor;
    pub use crate::exec::Runtime;
    pub use crate::exec::agent_fn::{AgentFn, ReplyCheck, ToolsOf};
    pub use crate::exec::prompt::Prompt;
    pub use crate::policy::rules::is_valid;
    pub use crate::policy::{Jitter, Preset, RetryPolicy};
    pub use crate::spend::UsageLimits;
    pub use crate::tool::Toolbox;
}
