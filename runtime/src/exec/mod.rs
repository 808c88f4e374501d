//! The exec: [`Runtime`], made once by its [`RuntimeBuilder`], runs a prompt through both retry
//! layers ([`Runtime::exec`], [`Runtime::exec_json`], and every other combination through one
//! [`ExecRequest`]). Layer 2 lives here: it retries failed attempts and fails fast on permanent and
//! programming errors.

pub(crate) mod agent_fn;
mod builder;
mod conversation;
pub mod durable;
mod overflow;
pub(crate) mod prompt;
mod request;
mod state;
pub(crate) mod tool_call;
pub(crate) mod tool_turn;
mod turns;
pub(crate) mod typed;
mod typed_answer;

pub use crate::answer::{ExecError, ExecErrorKind, Reply, TypedReply};
pub use crate::retry::call::run as call_once;
pub use crate::retry::fallback::{MAX_TARGETS, TargetStatus};
pub use crate::stream::{ExecEvent, ExecStream, StreamMode};
pub use builder::RuntimeBuilder;
pub use conversation::Conversation;
pub use prompt::Prompt;
pub use request::ExecRequest;
pub use typed_answer::TypedAnswer;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing::Span;

use crate::compact::Compactor;
use crate::decision::Observer;
use crate::observe::journal::Journal;
use crate::observe::trace::TraceSink;
use crate::policy::RetryPolicy;
use crate::policy::backoff::Rng;
use crate::provider::Provider;
use crate::retry::RetryState;
use crate::retry::budget::Budget;
use crate::retry::fallback::{Position, Target, target_name};
use crate::retry::session::Run;
use crate::spend::ledger::Ledger;
use crate::spend::{Prices, UsageLimits};
use crate::storm::Governor;
use crate::tool::Toolbox;

/// The entry point: a provider (and its fallbacks), the settings every exec shares, and `exec`.
///
/// Make one with [`Runtime::new`] (the defaults) or [`Runtime::builder`] (any setting, and the
/// fallback targets). A built runtime has no setter: its clones are cheap handles that share
/// everything it made (the provider, the retry quota, the cooldowns, the breakers and the pacer).
///
/// # Examples
///
/// ```
/// use agentic_runtime::{ExecErrorKind, Runtime, Scripted, ScriptedProvider};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let provider = ScriptedProvider::new([Scripted::http(401, "invalid api key")]);
/// let runtime = Runtime::new(provider.clone());
/// let error = runtime.exec("hello").await.unwrap_err();
/// assert_eq!(error.kind(), ExecErrorKind::Permanent);
/// assert_eq!(
///     error.to_string(),
///     "exec() failed permanently:\nAttempt 1: AuthenticationError: 401 invalid api key"
/// );
/// assert_eq!(provider.calls(), 1);
/// # }
/// ```
#[derive(Clone)]
pub struct Runtime {
    provider: Arc<dyn Provider>,
    /// What `exec` runs as: no name, no doc, the runtime's policy (kept here, so that an exec
    /// borrows it instead of copying it).
    function: agent_fn::AgentFn,
    system: Option<Arc<str>>,
    /// The jitter seed and the count of execs it seeded, when one was given
    /// ([`RuntimeBuilder::with_jitter_seed`]); without one, each exec's jitter is seeded at random
    /// when it is first needed.
    seed: Option<(u64, Arc<AtomicU64>)>,
    observer: Option<Arc<Observer>>,
    /// The first target's storm control.
    governor: Arc<Governor>,
    journal: Option<Journal>,
    tools: Toolbox,
    trace: Option<TraceSink>,
    max_iterations: u32,
    content_in_traces: bool,
    compactor: Option<Arc<dyn Compactor>>,
    max_compactions: u32,
    /// Every target in order, the primary first, when the runtime has fallbacks; `None` with one
    /// provider, which has no breaker.
    targets: Option<Arc<Vec<Target>>>,
    /// The prices a dollar limit counts at ([`RuntimeBuilder::with_prices`]).
    prices: Option<Arc<Prices>>,
}

/// The most tool turns of one exec, unless [`RuntimeBuilder::with_max_iterations`] says otherwise.
pub const DEFAULT_MAX_ITERATIONS: u32 = 20;

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("provider", &self.provider.name())
            .field("policy", &self.function.policy)
            .field("system", &self.system)
            .field("observer", &self.observer.is_some())
            .field("content_in_traces", &self.content_in_traces)
            .field("compactor", &self.compactor.as_deref().map(Compactor::name))
            .field("max_compactions", &self.max_compactions)
            .field("journal", &self.journal.as_ref().map(Journal::path))
            .field(
                "targets",
                &self.targets.as_ref().map(|targets| targets.iter().map(|t| &*t.name).collect::<Vec<_>>()),
            )
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// A runtime on `provider` with every default ([`RetryPolicy::new`], the standard retry
    /// quota, pacing from the server's headers, no tools, no fallback): the one-line form of
    /// `Runtime::builder(provider).build()`, which cannot fail with the defaults.
    pub fn new(provider: impl Provider) -> Self {
        Self::builder(provider).build().expect("the defaults are valid")
    }

    /// A builder of a runtime on `provider`: the settings, the fallback targets, the shared store
    /// and the tools, then [`RuntimeBuilder::build`].
    pub fn builder(provider: impl Provider) -> RuntimeBuilder {
        RuntimeBuilder::from_shared(Arc::new(provider))
    }

    /// Every target in order, the primary first, with its breaker's state and its retry quota: one
    /// entry for a runtime without fallbacks (no breaker). A target named like an earlier one (the
    /// same wire and model at another URL) is named with its position too: `openai/gpt-4o-mini#2`.
    /// A reading: it changes nothing.
    pub fn targets(&self) -> Vec<TargetStatus> {
        match &self.targets {
            None => vec![TargetStatus::new(target_name(&*self.provider), None, self.governor.local_allowance())],
            Some(targets) => targets
                .iter()
                .map(|target| {
                    let governor = &target.governor;
                    TargetStatus::new(target.name.to_string(), governor.breaker_state(), governor.local_allowance())
                })
                .collect(),
        }
    }

    /// How many retries this process's retry quota allows now on the first target: the floor plus
    /// what the window's successes pay for, less the window's retries (`None` when the quota is
    /// off). With a shared store the fleet's quota is the store's, and this process's window is used
    /// only while the store does not answer. A reading: it changes nothing.
    pub fn retry_quota_left(&self) -> Option<u64> {
        self.governor.local_allowance()
    }

    /// The name of every target, the primary first, as prices name them (without the `#2` of a
    /// second target of one model).
    pub(crate) fn target_names(&self) -> Vec<String> {
        match &self.targets {
            None => vec![target_name(&*self.provider)],
            Some(targets) => targets.iter().map(|target| target_name(&*target.provider)).collect(),
        }
    }

    /// The prices a dollar limit counts at.
    pub(crate) fn prices(&self) -> Option<&Arc<Prices>> {
        self.prices.as_ref()
    }

    /// The policy of execs that name none.
    pub fn policy(&self) -> &RetryPolicy {
        &self.function.policy
    }

    /// The provider (the primary target).
    pub fn provider(&self) -> &dyn Provider {
        &*self.provider
    }

    /// The storm control of the runtime's (first) target, for a tower layer that shares it.
    #[cfg(feature = "tower")]
    pub(crate) fn governor(&self) -> &Arc<Governor> {
        &self.governor
    }

    /// Who hears the decisions, for a tower layer that shares the runtime's.
    #[cfg(feature = "tower")]
    pub(crate) fn observer(&self) -> Option<&Arc<Observer>> {
        self.observer.as_ref()
    }

    /// Runs `prompt` through both layers with the runtime's policy, tools and system instruction
    /// (in an agent function: the function's). Nothing is sent before the returned future is
    /// first polled. For anything else (another policy, other tools, a schema, a typed reply), see
    /// [`Runtime::request`].
    pub fn exec(&self, prompt: impl Into<Prompt>) -> impl Future<Output = Result<Reply, ExecError>> {
        // The exec's own future, not one wrapped in another: every exec would move its result out.
        self.exec_attempts(None, None, prompt, None, None)
    }

    /// Runs `prompt` through both layers as [`Runtime::exec`] does, and streams it: the answer's
    /// text as it arrives, each decision, each tool call and result, a rewind when a call that
    /// showed text fails and another replaces it ([`StreamMode::Replay`]), and last
    /// [`ExecEvent::Done`] with exactly what `exec` would have returned. In an agent function it
    /// runs as the function, like `exec`. The stream owns a clone of the runtime (a cheap handle);
    /// for another policy, tools, a schema or another [`StreamMode`], see [`ExecRequest::stream`].
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::exec::ExecEvent;
    /// use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
    /// use futures_util::StreamExt as _;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// // The first call shows "Hel", then its stream drops; the second answers in full.
    /// let provider = ScriptedProvider::new([Scripted::cut("Hel"), Scripted::ok("Hello!")]);
    /// let mut stream = Runtime::new(provider).exec_stream("Say hello.");
    /// let mut shown = String::new();
    /// while let Some(event) = stream.next().await {
    ///     match event {
    ///         ExecEvent::TextDelta(text) => shown.push_str(&text),
    ///         ExecEvent::Rewind { .. } => shown.clear(),
    ///         ExecEvent::Done(reply) => assert_eq!(reply.unwrap().text(), shown),
    ///         _ => {}
    ///     }
    /// }
    /// assert_eq!(shown, "Hello!");
    /// # }
    /// ```
    pub fn exec_stream(&self, prompt: impl Into<Prompt>) -> ExecStream<'static> {
        let (runtime, prompt) = (self.clone(), prompt.into());
        ExecStream::new(crate::stream::tap::Tap::new(StreamMode::Replay), |tap| async move {
            runtime.exec_attempts(None, None, prompt, None, Some(&tap)).await
        })
    }

    /// Runs `prompt` through both layers and returns the answer as a `T`: the model is asked for
    /// JSON of `T`'s schema (OpenAI-compatible: `response_format` with a strict `json_schema`, plain
    /// JSON mode for servers that refuse it; Anthropic: an answer tool whose input schema is
    /// `T`'s), and an answer that is not JSON of `T`, or that the token limit cut (stop reason
    /// `length`), is a rejected attempt: the parse error (line, column and field) or the cut goes
    /// back to the model, and the policy's attempts, `max_calls` and `budget_ms` bound the retries,
    /// as for a validator's rejection. Every attempt rejected: an error of kind `invalid_result`
    /// listing each parse error. `runtime.request(prompt).typed::<T>()` keeps the reply's facts too.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
    ///
    /// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    /// struct Invoice {
    ///     currency: String,
    ///     total: f64,
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let provider = ScriptedProvider::new([
    ///     Scripted::ok(r#"{"total": 12.5}"#),                      // missing field `currency`
    ///     Scripted::ok(r#"{"currency": "EUR", "total": 12.5}"#),
    /// ]);
    /// let invoice: Invoice = Runtime::new(provider).exec_json("Read this invoice: ...").await.unwrap();
    /// assert_eq!(invoice.currency, "EUR");
    /// # }
    /// ```
    pub async fn exec_json<T>(&self, prompt: impl Into<Prompt>) -> Result<T, ExecError>
    where
        T: TypedAnswer,
    {
        self.request(prompt).json::<T>().await
    }

    /// A request of `prompt`, for everything beyond [`Runtime::exec`] and [`Runtime::exec_json`]:
    /// another policy, other tools, a schema known at run time, a typed reply with its facts. Every
    /// option combines with every other, and the request is sent by one of its terminals
    /// ([`ExecRequest::send`], [`ExecRequest::json`], [`ExecRequest::typed`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::{RetryPolicy, Runtime, Scripted, ScriptedProvider, Toolbox};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let search = Toolbox::new().with_fn("search", "Searches the web.", json!(null), |_| async { Ok("found".to_owned()) });
    /// let provider = ScriptedProvider::new([Scripted::tool_call("search", json!({})), Scripted::ok("Found it.")]);
    /// // The runtime offers no tools; this request offers `search`, with a policy of its own.
    /// let runtime = Runtime::new(provider.clone());
    /// let reply = runtime
    ///     .request("Look it up.")
    ///     .policy(&RetryPolicy::new().with_max_retries(1))
    ///     .tools(&search)
    ///     .send()
    ///     .await
    ///     .unwrap();
    /// assert_eq!((reply.text(), reply.iterations()), ("Found it.", 1));
    /// # }
    /// ```
    pub fn request(&self, prompt: impl Into<Prompt>) -> ExecRequest<'_> {
        ExecRequest::new(self, prompt.into())
    }

    #[inline(always)]
    pub(crate) fn start_run<'a>(
        &'a self,
        tools: &'a Toolbox,
        policy: &'a RetryPolicy,
        system: Option<&'a str>,
        function: Option<&'static str>,
        span: Span,
    ) -> Run<'a> {
        let rng = match &self.seed {
            Some((seed, execs)) => {
                let exec = execs.fetch_add(1, Ordering::Relaxed);
                Rng::with_seed(seed ^ exec.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            }
            None => Rng::unseeded(),
        };
        Run {
            provider: &*self.provider,
            position: self.targets.as_deref().map(Position::new),
            system: system.or(self.system.as_deref()),
            tools: tools.specs(),
            content_in_traces: self.content_in_traces,
            compacted: false,
            schema: None,
            state: RetryState {
                function,
                observer: self.observer.as_deref(),
                journal: self.journal.as_ref(),
                span,
                target: self.targets.as_deref().map(|targets| targets[0].name.clone()),
                // A runtime's spend account is every exec's: each has a ledger to hold its call's
                // reservation (an exec with limits of its own gets one with them).
                spend: self.governor.account().map(|_| Box::new(Ledger::new(UsageLimits::NONE, self.prices.clone()))),
                ..RetryState::new(policy, Budget::new(policy), rng, &self.governor)
            },
        }
    }
}
