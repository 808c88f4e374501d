//! The `#[agentic_function]` attribute of `agentic-runtime`. Use it through `agentic-runtime`
//! (`agentic_runtime::agentic_function`): the code it generates refers to that crate.
//!
//! The attribute is a pipeline: `attr` parses the arguments, `valid` judges them with the
//! policy rules `agentic-runtime` uses too (the `agentic-policy` crate), `expand` rewrites the function.
#![warn(unreachable_pub, missing_debug_implementations)]

mod attr;
mod expand;
mod valid;

/// The policy rules, shared with `agentic-runtime` through the `agentic-policy` crate.
use agentic_policy as rules;

use proc_macro::TokenStream;

/// Turns an `async fn` into an agent function: every `runtime.exec(..)` in its body runs through
/// both retry layers with a policy that is checked when the function compiles.
///
/// ```
/// use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};
///
/// /// Summarize the text in one sentence.
/// #[agentic_function(max_retries = 2, session_retries = 1, budget_ms = 30_000)]
/// async fn summarize(runtime: &Runtime, text: &str) -> Result<Reply, ExecError> {
///     runtime.exec(text).await
/// }
/// ```
///
/// # What it does
///
/// - **Finds the runtime parameter**: the one parameter whose type is `Runtime`, `&Runtime` or
///   `&mut Runtime`, under any path (`agentic_runtime::Runtime`, `rt::Runtime`), with any name.
/// - **Rewrites its `exec` calls**: each `<runtime>.exec(prompt)` in the body — in nested blocks,
///   closures, `async` blocks and the arguments of expression-like macros (`assert!`,
///   `tokio::join!`, `format!`, ...) — runs with the attribute's policy instead of the runtime's
///   default. Calls on any other receiver are left alone, and so is the name once a `let`, a closure
///   parameter or a pattern rebinds it. Arguments of macros with their own grammar
///   (`tokio::select!`) are not rewritten: create the future outside the macro.
/// - **Sends the function's name and doc comment with each call**: the doc comment (lines joined
///   with `\n`, trimmed) is the system instruction of requests that set none, and errors, logs and
///   traces name the function.
/// - **Documents the worst case**: a line such as "**Retry policy:** up to 12 model calls and
///   46.5 s ± 25 % of backoff per exec; a model turn ends within 15 min." is added to the function's
///   docs (hover, rustdoc).
///
/// The attribute works on free functions, inherent and trait-impl methods (`&self`, `&mut self`),
/// generic functions, functions with lifetimes or `impl Trait` arguments, whatever they return.
///
/// # Keys
///
/// Every key is optional; with none, the defaults apply (up to 12 model calls and 46.5 s
/// ± 25 % of backoff per exec; a model turn ends within 15 min). Time bounds above one year mean one
/// year.
///
/// | key | value | default | meaning |
/// |---|---|---|---|
/// | `max_retries` | integer, at least 1 | `3` | exec attempts (layer 2); `1` means no exec retry |
/// | `session_retries` | integer | `3` | session retries per attempt (layer 1); `0` turns layer 1 off |
/// | `session_base_delay_ms` | integer, above 0 | `2000` | layer 1 waits `base * 2^(n-1)` before retry `n` |
/// | `exec_base_delay_ms` | integer, above 0 | `1500` | layer 2 waits `base * 2^k` after failed attempt `k` |
/// | `max_delay_ms` | integer, at least both base delays | none | cap on every delay, after jitter |
/// | `jitter` | `"none"`, `"full"`, `"equal"`, `"decorrelated"` or `"proportional"` | `"proportional"` | how delays are randomised (`"proportional"`: each delay times U(0.75, 1.25); `"none"`: the exact schedules) |
/// | `max_calls` | integer, 1 to the calls the layers can make | none | cap on model calls across both layers |
/// | `timeout_ms` | integer, above 0, at most `budget_ms` and `turn_timeout_ms` | `600000` | timeout of one model call |
/// | `budget_ms` | integer, above 0 | none | one deadline for the whole exec; a retry that does not fit is not made (kind `budget`) |
/// | `retry_after_cap_ms` | integer, above 0 | `60000` | the longest server-requested wait honoured |
/// | `connect_timeout_ms` | integer, above 0 | `10000` | time to establish a connection |
/// | `headers_timeout_ms` | integer, above 0, at most `timeout_ms` | `120000` | time from the request to the response headers |
/// | `first_token_timeout_ms` | integer, above 0, at most `timeout_ms` | `300000` | time from the request to the first content |
/// | `idle_timeout_ms` | integer, above 0, at most `timeout_ms` | `60000` | time without new content once the answer flows |
/// | `turn_timeout_ms` | integer, above 0 | `900000` | one model turn: its calls and the backoff of both layers |
/// | `max_answer_bytes` | integer, above 0 | `4194304` (4 MiB) | the largest answer one call may stream |
/// | `preset` | `anthropic`, `gemini_free_tier`, or the path of a `const RetryPolicy` | none | the policy the other keys start from, instead of the defaults |
/// | `validate` | path to `fn(&Reply) -> Result<(), E>`, `E: Display` | none | checks each reply |
/// | `compact` | path to a `static` or `const` whose type implements `Compactor` | the runtime's | shortens the conversation on a context overflow |
/// | `tools` | path to a `static` `LazyLock<Toolbox>` or `OnceLock<Toolbox>`, or to a `fn() -> Toolbox` | the runtime's | the tools the function's execs offer the model |
/// | `crate` | string holding a path | `"::agentic_runtime"` | where the runtime is, for crates that re-export it |
///
/// The numbers are the ones of [`RetryPolicy`]'s `with_*` setters, and they are judged by the same
/// rules as `RetryPolicy::validate`: a policy the runtime would reject does not compile.
///
/// `preset = gemini_free_tier` starts from seed 003's settings for Gemini's free tier (up to 5 calls,
/// waits from 15 s doubling to a 60 s cap), `preset = anthropic` from its settings for Anthropic (up
/// to 5 calls, from 2 s to 60 s): `RetryPolicy::gemini_free_tier()` and `RetryPolicy::anthropic()`.
/// The keys beside it change it, and the whole is judged as usual; a rule broken by a key the
/// preset set is blamed on `preset = ..`. A lone lowercase word is a preset's name (an unknown one
/// is an error on it, with the names); anything else is the path of a `const RetryPolicy` of yours
/// (`preset = MY_POLICY`, `preset = policies::PATIENT`, `preset = Self::POLICY`), which the keys
/// beside it change too. Its values cannot be read when the attribute runs: it is judged when rustc
/// evaluates the constant (a `Self::` path, when the exec starts).
///
/// ```
/// use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};
///
/// /// Answer the question.
/// #[agentic_function(preset = gemini_free_tier, budget_ms = 300_000)]
/// async fn answer(runtime: &Runtime, question: &str) -> Result<Reply, ExecError> {
///     runtime.exec(question).await
/// }
/// ```
///
/// `validate = check` names a function `fn check(reply: &Reply) -> Result<(), E>` where
/// `E: Display` (`Self::check` works in methods). A rejected reply is a retryable failure of the
/// exec layer: the reason is sent to the model with the next attempt, and when the attempts run out
/// the error's kind is `InvalidResult`.
///
/// ```
/// use agentic_runtime::{ExecError, Reply, Runtime, agentic_function};
///
/// fn one_word(reply: &Reply) -> Result<(), String> {
///     match reply.text().split_whitespace().count() {
///         1 => Ok(()),
///         n => Err(format!("expected one word, got {n}")),
///     }
/// }
///
/// /// Name the capital of the country, in one word.
/// #[agentic_function(max_retries = 3, session_retries = 0, validate = one_word, jitter = "full")]
/// async fn capital(runtime: &Runtime, country: &str) -> Result<String, ExecError> {
///     Ok(runtime.exec(country).await?.into_text())
/// }
/// ```
///
/// `compact = PATH` names the compactor the function's execs hand a context overflow to, instead of
/// the runtime's (`Runtime::with_compactor`): a `static` or `const` whose type implements
/// `agentic_runtime::compact::Compactor` (`Self::COMPACTOR` works in methods). A type that does not
/// is a compile error on the path.
///
/// ```
/// use agentic_runtime::compact::DropOldest;
/// use agentic_runtime::{ExecError, Runtime, agentic_function};
///
/// const KEEP_THREE: DropOldest = DropOldest::keeping(3);
///
/// /// Research the question with the tools, then answer it.
/// #[agentic_function(compact = KEEP_THREE)]
/// async fn research(runtime: &Runtime, question: &str) -> Result<String, ExecError> {
///     Ok(runtime.exec(question).await?.into_text())
/// }
/// ```
///
/// `tools = PATH` names the toolbox the function's execs offer the model, instead of the
/// runtime's (`Runtime::with_tools`): a `static` `LazyLock<Toolbox>`, a `static` `OnceLock<Toolbox>`
/// (set it before the first exec: an unset one fails the exec as a programming error), or a
/// function `fn() -> Toolbox` (called at every exec: return a clone of a toolbox you keep, such as
/// one with an MCP server's tools). `Self::TOOLS` works in methods; a path of another type is a
/// compile error on it. Inside the function, `runtime.exec_with_tools(tools, prompt)` offers
/// `tools` for that one exec instead, with the function's policy.
///
/// ```
/// use std::sync::LazyLock;
///
/// use agentic_runtime::{ExecError, Runtime, ScriptedProvider, Step, Toolbox, agentic_function};
/// use serde_json::json;
///
/// static WEATHER: LazyLock<Toolbox> = LazyLock::new(|| {
///     Toolbox::new().with_fn("get_weather", "The weather in a city.", json!(null), |_| async {
///         Ok("sunny".to_owned())
///     })
/// });
///
/// /// Say what the weather is.
/// #[agentic_function(tools = WEATHER)]
/// async fn weather(runtime: &Runtime, city: &str) -> Result<String, ExecError> {
///     Ok(runtime.exec(city).await?.into_text())
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// // The runtime itself offers no tools: the function's execs offer `get_weather`.
/// let provider = ScriptedProvider::new([Step::tool_call("get_weather", json!({})), Step::ok("Sunny.")]);
/// let runtime = Runtime::new(provider);
/// assert_eq!(weather(&runtime, "Paris").await.unwrap(), "Sunny.");
/// # }
/// ```
///
/// # Errors
///
/// Everything wrong is reported at once, each error on the token at fault, and the function is
/// still emitted so that nothing else breaks: the attribute on something other than an `async fn`;
/// no runtime parameter, or two; an argument that is not `key = value`; an unknown key (the
/// nearest is suggested); an unknown preset; a key given twice; a value of the wrong type or out of range; an unknown
/// `jitter` kind; `validate`, `compact` or `tools` that is not a path; `crate` that is not a string; and every rule of
/// the policy, e.g.
///
/// ```text
/// error: `max_calls` (100) is more than the 12 calls this policy can make; lower it or raise `max_retries` / `session_retries`
///  --> src/lib.rs:3:20
///   |
/// 3 | #[agentic_function(max_calls = 100)]
///   |                    ^^^^^^^^^^^^^^^
/// ```
///
/// [`RetryPolicy`]: ../agentic_runtime/struct.RetryPolicy.html
#[proc_macro_attribute]
pub fn agentic_function(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::agentic_function(args.into(), item.into()).into()
}
