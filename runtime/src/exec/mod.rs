//! Layer 2: `Runtime::exec` retries failed attempts and fails fast on permanent and programming
//! errors.

pub(crate) mod agent_fn;
mod conversation;
pub(crate) mod prompt;
pub(crate) mod tool_turn;
pub(crate) mod typed;
mod typed_answer;

pub use crate::answer::{ExecError, ExecErrorKind, Reply, TypedReply};
pub use crate::retry::call::run as call_once;
pub use conversation::AgentSession;
pub use crate::retry::fallback::{MAX_TARGETS, TargetStatus};
pub use prompt::Prompt;
pub use typed_answer::TypedAnswer;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing::{Instrument as _, Span};

use crate::classify::{ExecAction, Reason};
use crate::compact::{self, Compactor, DEFAULT_MAX_COMPACTIONS};
use crate::decision::{Decision, Layer, Observer, Verdict, Why};
use crate::error::ModelError;
use crate::message::usage::Usage;
use crate::message::{AssistantMessage, Message, StopReason};
use crate::observe::journal::Journal;
use crate::observe::telemetry;
use crate::observe::trace::{RunTrace, TraceSink};
use crate::policy::RetryPolicy;
use crate::policy::backoff::{Rng, Schedule};
use crate::provider::{Provider, ResponseSchema};
use crate::retry::budget::Budget;
use crate::retry::session::{Run, run_layer};
use crate::retry::{Failed, Next, RetryState, validate_policy};
use crate::storm::pace::Pacing;
use crate::storm::store::SharedStore;
use crate::storm::{BreakerSettings, Governor, Refusal, RetryQuota};
use crate::tool::{Toolbox, results_message};
use agent_fn::AgentFn;
use crate::retry::fallback::{Position, Target, target_name};
use typed::Expected;

/// The entry point: a provider, a default policy, and `exec`.
///
/// Cloning is cheap and clones share the provider.
///
/// # Examples
///
/// ```
/// use agentic_runtime::{ExecErrorKind, Runtime, ScriptedProvider, Step};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let provider = ScriptedProvider::new([Step::http(401, "invalid api key")]);
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
    function: AgentFn,
    system: Option<Arc<str>>,
    /// The jitter seed and the count of execs it seeded, when one was given
    /// ([`Runtime::with_jitter_seed`]); without one, each exec's jitter is seeded at random when it
    /// is first needed.
    seed: Option<(u64, Arc<AtomicU64>)>,
    observer: Option<Arc<Observer>>,
    governor: Arc<Governor>,
    quota: Option<RetryQuota>,
    store: Option<Arc<dyn SharedStore>>,
    journal: Option<Journal>,
    pub(crate) tools: Toolbox,
    trace: Option<TraceSink>,
    max_iterations: u32,
    content_in_traces: bool,
    compactor: Option<Arc<dyn Compactor>>,
    max_compactions: u32,
    /// Every target in order, the primary first, when the runtime has fallbacks
    /// ([`Runtime::with_fallback`]); `None` with one provider, which has no breaker.
    targets: Option<Arc<Vec<Target>>>,
    /// The settings of every target's breaker.
    breaker: BreakerSettings,
    /// How every target's calls are paced under its server's rate limits.
    pacing: Pacing,
}

/// The most tool turns of one exec, unless [`Runtime::with_max_iterations`] says otherwise.
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
    /// A runtime on `provider` with the default policy ([`RetryPolicy::new`]).
    pub fn new(provider: impl Provider) -> Self {
        Self::from_shared(Arc::new(provider))
    }

    /// A runtime on a provider that is already shared.
    pub fn from_shared(provider: Arc<dyn Provider>) -> Self {
        let quota = Some(RetryQuota::standard());
        Self {
            governor: Arc::new(Governor::new(provider.scope(), quota, None).with_pacing(&Pacing::from_headers())),
            quota,
            store: None,
            journal: None,
            tools: Toolbox::new(),
            trace: None,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            content_in_traces: false,
            compactor: None,
            max_compactions: DEFAULT_MAX_COMPACTIONS,
            provider,
            function: AgentFn::anonymous(RetryPolicy::new()),
            system: None,
            seed: None,
            observer: None,
            targets: None,
            breaker: BreakerSettings::standard(),
            pacing: Pacing::from_headers(),
        }
    }

    /// The policy of [`Runtime::exec`] (the attribute and [`Runtime::exec_with`] bring their own).
    ///
    /// # Default
    /// [`RetryPolicy::new`]
    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.function = AgentFn::anonymous(policy);
        self
    }

    /// The system instruction of requests that set none and come from no documented agent function.
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(Arc::from(system.into()));
        self
    }

    /// Seeds the jitter RNG, so that delays replay exactly (for tests and simulations).
    ///
    /// # Default
    /// A random seed.
    pub fn with_jitter_seed(mut self, seed: u64) -> Self {
        self.seed = Some((seed, Arc::new(AtomicU64::new(0))));
        self
    }

    /// Calls `observer` with every decision of both layers as it is made (before the sleep it
    /// announces), e.g. to print a live timeline. The decisions are in the `Reply` and the
    /// `ExecError` too.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::{Runtime, ScriptedProvider, Step};
    ///
    /// let runtime = Runtime::new(ScriptedProvider::new([Step::ok("hi")]))
    ///     .with_observer(|decision| eprintln!("{decision}"));
    /// ```
    pub fn with_observer(mut self, observer: impl Fn(&Decision) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// The retry budget shared by every call of this runtime and its clones (storm control: the
    /// retries of a window are paid for by its successes, plus a floor); `None` turns it off. Set it
    /// before cloning: clones made earlier keep the budget they had.
    ///
    /// # Default
    /// [`RetryQuota::standard`] (a 60 s window, one retry per success, plus 100 retries)
    pub fn with_retry_quota(mut self, quota: Option<RetryQuota>) -> Self {
        self.quota = quota;
        self.rebuild_governors()
    }

    /// Keeps the retry budget (per provider scope), the cooldowns, the breakers and the pacer's
    /// limits (per target: a model of a scope) in `store`, shared with every process that uses the
    /// same store (e.g. `RedisStore`, with the `redis` feature). When the store
    /// does not answer, calls go on with this process's state, asking the store again once per
    /// [`SharedStore::offline_backoff`], with a warning when it fails and one when it answers again.
    pub fn with_shared_store(mut self, store: Arc<dyn SharedStore>) -> Self {
        self.store = Some(store);
        self.rebuild_governors()
    }

    /// Adds `provider` as the next target after those the runtime has (repeatable: targets in
    /// order), each with its own model, on any wire: a Chat Completions primary can fall back to
    /// Anthropic. Each target has its own retry budget, cooldowns and circuit breaker
    /// ([`Runtime::with_breaker`]), shared by every clone of the runtime (and, with a shared store,
    /// by the fleet). Set it before cloning: clones made earlier keep the targets they had.
    ///
    /// An exec walks the targets forward, each at most once, moving on at once (no sleep):
    /// - when the target's breaker is open (skipped at no cost), or its cooldown or Retry-After is
    ///   longer than `retry_after_cap_ms` or the time left, or its retry budget is empty;
    /// - on the target's own permanent failures: its key refused, its quota spent, its model not
    ///   found, its certificate refused, its base URL answering something else;
    /// - when the layers used the retries they had on it for this attempt (a transient failure);
    /// - on a context overflow when the next target declares a larger
    ///   [context window](Provider::context_window).
    ///
    /// It stays, and the layers retry it as without fallbacks, on a short wait they would make anyway
    /// (a Retry-After within the cap and the deadline, a transient failure with retries left). It
    /// never moves on a programming error, a request the API refuses (a 400), a rejected answer or a
    /// cap of the exec's own (`max_calls`, `budget_ms`): the exec's budget and deadline are shared by
    /// all its targets. Each move is a decision with verdict [`Verdict::Fallback`];
    /// [`Reply::target`] says which target answered.
    ///
    /// # Panics
    ///
    /// Past [`MAX_TARGETS`] targets in all.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::{Runtime, ScriptedProvider, Step};
    /// use agentic_runtime::decision::Verdict;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let primary = ScriptedProvider::new([Step::http(401, "invalid api key")]).with_model("a");
    /// let secondary = ScriptedProvider::new([Step::ok("hello")]).with_model("b");
    /// let runtime = Runtime::new(primary.clone()).with_fallback(secondary.clone());
    /// let reply = runtime.exec("hi").await.unwrap();
    /// assert_eq!((reply.text(), reply.target()), ("hello", Some("scripted/b")));
    /// let moved = &reply.decisions()[1];
    /// assert_eq!(moved.verdict, Verdict::Fallback);
    /// assert_eq!(
    ///     moved.reason.to_string(),
    ///     "fallback: `scripted/a` failed permanently for this target (HTTP 401 is permanent (a 4xx other than 408, 409, 425, 429)) → `scripted/b`"
    /// );
    /// assert_eq!((primary.calls(), secondary.calls()), (1, 1));
    /// # }
    /// ```
    pub fn with_fallback(self, provider: impl Provider) -> Self {
        self.with_fallback_shared(Arc::new(provider))
    }

    /// [`Runtime::with_fallback`] with a provider that is already shared.
    ///
    /// # Panics
    ///
    /// Past [`MAX_TARGETS`] targets in all.
    pub fn with_fallback_shared(mut self, provider: Arc<dyn Provider>) -> Self {
        // Its breakers must hear the first failures of a burst as early as its successes.
        crate::classify::prebuild();
        let mut targets = match self.targets.take() {
            Some(targets) => targets.to_vec(),
            None => vec![self.target(self.provider.clone())],
        };
        assert!(
            targets.len() < MAX_TARGETS,
            "a runtime has at most {MAX_TARGETS} targets (its primary and {} fallbacks)",
            MAX_TARGETS - 1
        );
        let mut target = self.target(provider);
        // Two targets of one wire and model (at two URLs) would read alike in every decision.
        if targets.iter().any(|other| other.name == target.name) {
            target.name = Arc::new(format!("{}#{}", target.name, targets.len() + 1));
        }
        targets.push(target);
        self.targets = Some(Arc::new(targets));
        self.rebuild_governors()
    }

    /// The circuit breaker of every target of a runtime with fallbacks ([`Runtime::with_fallback`]):
    /// when a target's failures cross the threshold it opens and the target is skipped at no cost;
    /// after the open period one probe call is let through, whose answer closes it. A runtime with
    /// one provider has no breaker. Set it before cloning.
    ///
    /// # Default
    /// [`BreakerSettings::standard`]: opens at 50 % failures of at least 20 calls in 10 s, for 30 s
    /// (docs/design.md §10, "Circuit breaker", says why).
    pub fn with_breaker(mut self, settings: BreakerSettings) -> Self {
        self.breaker = settings;
        self.rebuild_governors()
    }

    /// Paces every target's calls under its server's rate limits as `pacing` says (docs/design.md
    /// §10, "Pacing"): the limits are learnt from every response's rate-limit headers (OpenAI's
    /// `x-ratelimit-*`, Anthropic's `anthropic-ratelimit-*`), successes included, per target
    /// (a model of an endpoint × key, as the cooldowns); a call waits, in arrival order, until the requests and
    /// tokens it needs are there, when that fits before its deadline, and is refused (kind
    /// `budget`, [`Refusal::RateLimit`]) when it does not. A
    /// wait is a decision ([`Verdict::Paced`]). With a shared store that
    /// keeps a pacer (`RedisStore`), the fleet shares one pacer per target. Set it before cloning.
    ///
    /// # Default
    /// [`Pacing::from_headers`]: on wherever a server states its limits; nothing changes on the
    /// calls of a server that states none.
    pub fn with_pacing(mut self, pacing: Pacing) -> Self {
        self.pacing = pacing;
        self.rebuild_governors()
    }

    /// Every target in order, the primary first, with its breaker's state and its retry budget: one
    /// entry for a runtime without fallbacks (no breaker). A target named like an earlier one (the
    /// same wire and model at another URL) is named with its position too: `openai/gpt-4o-mini#2`.
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

    /// A target of this runtime for `provider` (its governor is made by `rebuild_governors`).
    fn target(&self, provider: Arc<dyn Provider>) -> Target {
        let name = Arc::new(target_name(&*provider));
        let governor = Arc::new(Governor::new(provider.scope(), self.quota, self.store.clone()));
        Target { provider, governor, name }
    }

    /// Makes every target's storm control anew from the runtime's settings: its retry budget, its
    /// cooldowns and, with fallbacks, its breaker.
    fn rebuild_governors(mut self) -> Self {
        let governor = |provider: &dyn Provider, name: &str, breaker: Option<BreakerSettings>| {
            let governor = Governor::new(provider.scope(), self.quota, self.store.clone())
                .with_pacing(&self.pacing)
                .with_model(provider.model().unwrap_or(""));
            let governor = match breaker {
                Some(settings) => governor.with_breaker(name.to_owned(), provider.model().unwrap_or(""), settings),
                None => governor,
            };
            Arc::new(governor)
        };
        match self.targets.take() {
            None => self.governor = governor(&*self.provider, "", None),
            Some(targets) => {
                let targets: Vec<Target> = targets
                    .iter()
                    .map(|target| Target {
                        governor: governor(&*target.provider, &target.name, Some(self.breaker)),
                        provider: target.provider.clone(),
                        name: target.name.clone(),
                    })
                    .collect();
                self.governor = targets[0].governor.clone();
                self.targets = Some(Arc::new(targets));
            }
        }
        self
    }

    /// Records every exec that fails for good as one JSON line in `journal` (and every retry, when
    /// the journal was opened [`Journal::with_retries`]), so that "the same failure 5 times today"
    /// is a query: `agentic journal FILE --since 24h`.
    pub fn with_journal(mut self, journal: Journal) -> Self {
        self.journal = Some(journal);
        self
    }

    /// The tools the model may call during an exec. Each turn that asks for tools runs them (see
    /// [`Toolbox::run_calls`]) and sends the results back, errors included (`is_error: true`), for
    /// the model to decide what to do: a tool error is never retried by the layers, whatever it
    /// says. The loop ends with the model's final text, or at `max_iterations` with an error of kind
    /// [`ExecErrorKind::MaxIterations`]. Infrastructure retries apply per model turn: a failed turn
    /// is retried with the history as it was before it, completed tool results kept.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::{Runtime, ScriptedProvider, Step, Toolbox};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let tools = Toolbox::new().with_fn(
    ///     "get_weather",
    ///     "The weather in a city",
    ///     json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    ///     |input| async move { Ok(format!("sunny in {}", input["city"].as_str().unwrap_or("?"))) },
    /// );
    /// let provider = ScriptedProvider::new([
    ///     Step::tool_call("get_weather", json!({"city": "Paris"})),
    ///     Step::ok("It is sunny in Paris."),
    /// ]);
    /// let runtime = Runtime::new(provider.clone()).with_tools(tools);
    /// let reply = runtime.exec("What is the weather in Paris?").await.unwrap();
    /// assert_eq!(reply.text(), "It is sunny in Paris.");
    /// assert_eq!(reply.iterations(), 1);
    /// # }
    /// ```
    pub fn with_tools(mut self, tools: Toolbox) -> Self {
        self.tools = tools;
        self
    }

    /// The most tool turns one exec may take before it stops with
    /// [`ExecErrorKind::MaxIterations`] (not retried).
    ///
    /// # Default
    /// `20`
    pub fn with_max_iterations(mut self, iterations: u32) -> Self {
        self.max_iterations = iterations;
        self
    }

    /// What an exec does when its conversation overflows the model's context: `compactor` shortens
    /// it and the same turn is made again (see [`compact`]). An agent function's
    /// `compact = PATH` takes precedence. Without a compactor, a context overflow ends the exec with
    /// kind [`ExecErrorKind::ContextOverflow`].
    ///
    /// # Default
    /// None
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::compact::DropOldest;
    /// use agentic_runtime::{Runtime, ScriptedProvider, Step, Toolbox};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let tools = Toolbox::new().with_fn("read", "Reads a page", json!({"type": "object"}), |_| async {
    ///     Ok("a long page ...".to_owned())
    /// });
    /// let provider = ScriptedProvider::new([
    ///     Step::tool_call("read", json!({})),
    ///     Step::tool_call("read", json!({})),
    ///     Step::http(400, "This model's maximum context length is 8192 tokens"),
    ///     Step::ok("The pages say ..."),
    /// ]);
    /// let runtime = Runtime::new(provider.clone()).with_tools(tools).with_compactor(DropOldest::keeping(1));
    /// let reply = runtime.exec("Read the pages.").await.unwrap();
    /// assert_eq!(reply.text(), "The pages say ...");
    /// let compaction = reply.decisions().last().unwrap(); // after layer 1's: not mine to retry
    /// assert_eq!(compaction.reason, "context overflow: compacted 5 → 3 messages by `drop_oldest`");
    /// assert_eq!(provider.requests()[3].messages.len(), 3, "the prompt and the last turn");
    /// # }
    /// ```
    pub fn with_compactor(mut self, compactor: impl Compactor + 'static) -> Self {
        self.compactor = Some(Arc::new(compactor));
        self
    }

    /// The most compactions one exec may make; an overflow after the last one ends the exec with
    /// kind [`ExecErrorKind::ContextOverflow`].
    ///
    /// # Default
    /// [`DEFAULT_MAX_COMPACTIONS`] (1)
    pub fn with_max_compactions(mut self, compactions: u32) -> Self {
        self.max_compactions = compactions;
        self
    }

    /// Records prompts and answers on the model calls' spans: the GenAI conventions' opt-in
    /// `gen_ai.input.messages` (the conversation sent, as JSON) and `gen_ai.output.messages` (the
    /// answer's content, as JSON). Off by default: prompts and answers may hold personal data, and
    /// a trace backend keeps them. Keys are never recorded.
    pub fn with_content_in_traces(mut self, record: bool) -> Self {
        self.content_in_traces = record;
        self
    }

    /// Writes a JSONL trace of every exec: `agent_start`, `tool_call`, `tool_result` (with
    /// `is_error`) and `agent_finish`. Infrastructure retries are not task events: they go to
    /// `tracing` and the journal. An exec whose layers gave up writes no `agent_finish`, so the
    /// grader (`agentic grade`) calls it `incomplete`.
    pub fn with_trace(mut self, trace: TraceSink) -> Self {
        self.trace = Some(trace);
        self
    }

    /// How many retries this process's retry budget allows now: the floor plus what the window's
    /// successes pay for, less the window's retries (`None` when the budget is off). With a shared
    /// store the fleet's budget is the store's, and this process's window is used only while the
    /// store does not answer.
    pub fn retry_budget(&self) -> Option<u64> {
        self.governor.local_allowance()
    }

    /// The default policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.function.policy
    }

    /// The provider.
    pub fn provider(&self) -> &dyn Provider {
        &*self.provider
    }

    /// Runs `prompt` through both layers with the runtime's policy. Nothing is sent before the
    /// returned future is first polled.
    pub fn exec(&self, prompt: impl Into<Prompt>) -> impl Future<Output = Result<Reply, ExecError>> {
        // The exec's own future, not one wrapped in another: every exec would move its result out.
        self.exec_attempts(&self.function, None, prompt, None)
    }

    /// [`Runtime::exec`] offering the model `tools` instead of the runtime's toolbox
    /// ([`Runtime::with_tools`]): an agent that reads files and one that sends mail can share a
    /// runtime (its provider, budget and breakers) without being offered each other's tools.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::{Runtime, ScriptedProvider, Step, Toolbox};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let search = Toolbox::new().with_fn("search", "Searches the web.", json!(null), |_| async { Ok("found".to_owned()) });
    /// let provider = ScriptedProvider::new([Step::tool_call("search", json!({})), Step::ok("Found it.")]);
    /// // The runtime offers no tools; this exec offers `search`.
    /// let runtime = Runtime::new(provider.clone());
    /// let reply = runtime.exec_with_tools(&search, "Look it up.").await.unwrap();
    /// assert_eq!((reply.text(), reply.iterations()), ("Found it.", 1));
    /// # }
    /// ```
    pub fn exec_with_tools(
        &self,
        tools: &Toolbox,
        prompt: impl Into<Prompt>,
    ) -> impl Future<Output = Result<Reply, ExecError>> {
        self.exec_attempts(&self.function, Some(tools), prompt, None)
    }

    /// Runs `prompt` through both layers and returns the answer as a `T`: the model is asked for
    /// JSON of `T`'s schema (OpenAI-compatible: `response_format` with a strict `json_schema`, plain
    /// JSON mode for servers that refuse it; Anthropic: a forced tool whose input schema is `T`'s),
    /// and an answer that is not JSON of `T`, or that the token limit cut (stop reason `length`), is
    /// a rejected attempt: the parse error (line, column and field) or the cut goes back to the model,
    /// and the policy's attempts, `max_calls` and `budget_ms` bound the retries, as for a validator's
    /// rejection. Every attempt rejected: an error of kind `invalid_result` listing each parse error.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::{Runtime, ScriptedProvider, Step};
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
    ///     Step::ok(r#"{"total": 12.5}"#),                      // missing field `currency`
    ///     Step::ok(r#"{"currency": "EUR", "total": 12.5}"#),
    /// ]);
    /// let invoice: Invoice = Runtime::new(provider).exec_json("Read this invoice: ...").await.unwrap();
    /// assert_eq!(invoice.currency, "EUR");
    /// # }
    /// ```
    pub async fn exec_json<T>(&self, prompt: impl Into<Prompt>) -> Result<T, ExecError>
    where
        T: TypedAnswer,
    {
        Ok(self.exec_json_reply(prompt).await?.into_value())
    }

    /// [`Runtime::exec_json`] with `policy`.
    pub async fn exec_json_with<T>(&self, policy: &RetryPolicy, prompt: impl Into<Prompt>) -> Result<T, ExecError>
    where
        T: TypedAnswer,
    {
        Ok(self.typed_exec(AgentFn::anonymous(*policy), prompt.into()).await?.into_value())
    }

    /// [`Runtime::exec_json`] that keeps the facts of the exec: the value with the [`Reply`] it came
    /// in (its decisions, usage, calls, attempts, time and target), as a [`TypedReply`].
    pub async fn exec_json_reply<T>(&self, prompt: impl Into<Prompt>) -> Result<TypedReply<T>, ExecError>
    where
        T: TypedAnswer,
    {
        // In an agent function the attribute hands the function over in the prompt, so that this
        // public method, named in the compile errors about `T`, is what the rewritten call calls.
        let mut prompt = prompt.into();
        let function = prompt.take_function().unwrap_or(AgentFn::anonymous(self.function.policy));
        self.typed_exec(function, prompt).await
    }

    /// A typed exec as `function`: the model asked for JSON of `T`'s schema, the answer parsed.
    async fn typed_exec<T: TypedAnswer>(&self, function: AgentFn, prompt: Prompt) -> Result<TypedReply<T>, ExecError> {
        let expected = Expected::of::<T>();
        let reply = self.exec_attempts(&function, None, prompt, Some(&expected)).await?;
        match typed::parse::<T>(reply.text()) {
            Ok(value) => Ok(TypedReply::new(value, reply)),
            Err(why) => Err(ExecError::unparsable(function.name, why, &reply)),
        }
    }

    /// [`Runtime::exec_json`] for a schema known only at run time (a file, a configuration): the
    /// model is asked for JSON of `schema`, and an answer that is not JSON, or that `check` refuses
    /// (`Err(why)`, e.g. a JSON Schema validator's message), is a rejected attempt whose reason goes
    /// back to the model. The reply's text is the JSON that passed.
    pub async fn exec_json_schema_with(
        &self,
        policy: &RetryPolicy,
        schema: ResponseSchema,
        check: impl Fn(&serde_json::Value) -> Result<(), String> + Sync,
        prompt: impl Into<Prompt>,
    ) -> Result<Reply, ExecError> {
        let check = |text: &str| check(&typed::parse::<serde_json::Value>(text)?);
        let expected = Expected::checked(schema, &check);
        self.exec_attempts(&AgentFn::anonymous(*policy), None, prompt.into(), Some(&expected)).await
    }

    /// Runs `prompt` through both layers with `policy` (validated first: an invalid policy is a
    /// programming error).
    pub async fn exec_with(&self, policy: &RetryPolicy, prompt: impl Into<Prompt>) -> Result<Reply, ExecError> {
        self.exec_attempts(&AgentFn::anonymous(*policy), None, prompt.into(), None).await
    }

    /// What `#[agentic_function]` calls: `exec` with the function's name, doc comment, policy and
    /// validator.
    #[doc(hidden)]
    pub async fn __agentic_exec(&self, function: AgentFn, prompt: impl Into<Prompt>) -> Result<Reply, ExecError> {
        self.exec_attempts(&function, None, prompt.into(), None).await
    }

    /// What `#[agentic_function]` calls for `runtime.exec_with_tools(tools, prompt)`:
    /// [`Runtime::exec_with_tools`] with the function's name, doc comment, policy and validator.
    #[doc(hidden)]
    pub async fn __agentic_exec_with_tools(
        &self,
        function: AgentFn,
        tools: &Toolbox,
        prompt: impl Into<Prompt>,
    ) -> Result<Reply, ExecError> {
        self.exec_attempts(&function, Some(tools), prompt.into(), None).await
    }

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
                ..RetryState::new(policy, Budget::new(policy), rng, &self.governor)
            },
        }
    }

    /// Records a failed exec in the journal, if the runtime has one: every failed exec ends here. A
    /// journal that cannot be written warns once and never fails the exec.
    fn journaled(&self, error: ExecError) -> ExecError {
        if let Some(journal) = &self.journal {
            let _ = journal.record_exec_error(&error);
        }
        error
    }

    /// An exec: its model turns, then the answer or the error (recorded in the journal).
    async fn exec_attempts(
        &self,
        function: &AgentFn,
        tools: Option<&Toolbox>,
        prompt: impl Into<Prompt>,
        expected: Option<&Expected<'_>>,
    ) -> Result<Reply, ExecError> {
        // Not entered: the exec's calls, tools and decisions name it as their parent. (Entering it
        // would wrap this future, and moving it costs the success path more than the span.)
        let span = telemetry::exec_span(function.name, &*self.provider);
        self.judge_policy(function, &span)?;
        // The run and the history are built here, in the exec's own future: returned from a helper,
        // they were copied on every exec's way in (BENCHMARKS.md, "Issue 15, the last two goals").
        // The prompt's own system instruction (over the function's doc comment) lives here too.
        let (text, own_system) = prompt.into().into_parts();
        let system = own_system.as_deref().or(function.doc);
        // The exec's own tools, else its function's (`tools = PATH`), else the runtime's.
        let made;
        let toolbox = match (tools, function.tools) {
            (Some(tools), _) => tools,
            (None, Some(make)) => match make() {
                Some(tools) => {
                    made = tools;
                    &made
                }
                None => return Err(self.journaled(ExecError::tools_unset(function.name))),
            },
            (None, None) => &self.tools,
        };
        let mut run = self.start_run(toolbox, &function.policy, system, function.name, span);
        run.schema = expected.map(|expected| &expected.schema);
        let mut exec = Exec {
            function,
            expected,
            // The prompt alone, and later each tool turn: the success path allocates the history once.
            history: vec![Message::user(text)],
            trace: self.trace.as_ref().map(|sink| sink.start_run(function.name)),
            toolbox,
            run_id: None,
            iterations: 0,
            attempts_made: 0,
            compactions: 0,
        };
        // The ReAct loop: each model turn runs through both layers; a turn that asks for tools runs
        // them and feeds the results back, with no retry and no sleep, whatever the tools said.
        loop {
            // One model turn through layer 2: attempts until one gives an answer or asks for tools,
            // or the layer gives up. Its success path is this loop's own (a turn of its own would be
            // a future inside this one, and its answer moved out of it); a failed attempt is handled
            // in a box, as the layers' failure paths are, so that this future stays small.
            let mut failures = Failures::default();
            let tools = loop {
                run.state.attempt = failures.index + 1;
                exec.attempts_made += 1;
                let message = run_layer(&mut run, &exec.history).await;
                match judge(&mut run, &mut exec, message) {
                    // The answer is returned from here: not moved out of the turn and again.
                    // The call that answered paid for retries in layer 1, as it came.
                    Attempt::Answer(reply) => return Ok(answered(&mut run, &exec, reply)),
                    Attempt::Tools(message) => break message,
                    failed => {
                        let after = self.after_failure(&mut run, &mut exec, &mut failures, failed);
                        if let Err(error) = Box::pin(after).await {
                            return Err(self.journaled(error));
                        }
                    }
                }
            };
            if let Err(error) = self.tool_turn(&mut run, &mut exec, tools).await {
                return Err(self.journaled(error));
            }
        }
    }

    /// A tool turn: the model asked for `tools`; their results join the history (whatever the
    /// tools said: no retry, no sleep), unless the exec has had `max_iterations` tool turns.
    async fn tool_turn<'a>(
        &self,
        run: &mut Run<'a>,
        exec: &mut Exec<'a>,
        tools: AssistantMessage,
    ) -> Result<(), ExecError> {
        // The tools' time counts, from here if nothing read the clock before.
        run.state.budget.start_clock();
        if exec.iterations >= self.max_iterations {
            return Err(self.too_many_iterations(run, exec.iterations));
        }
        exec.iterations += 1;
        // The turn's keys: the same whenever these calls run, unlike any other turn's.
        let iteration = exec.iterations;
        let turn = format!("{}/{iteration}", exec.run_id());
        let outcomes = exec.toolbox.run_calls_keyed(&tools, exec.trace.as_ref(), &turn);
        let outcomes = outcomes.instrument(run.state.span.clone()).await;
        exec.history.push(Message::Assistant(tools));
        exec.history.push(results_message(outcomes));
        // A source's list may have changed (an MCP server's `list_changed`): the next turn offers it.
        // (The call that asked for the tools paid for retries, and told its breaker, as it came.)
        run.tools = exec.toolbox.specs();
        run.state.budget.start_turn();
        Ok(())
    }

    /// Judges an exec's policy: an invalid one is a programming error, recorded on the exec's
    /// `span` and in the journal.
    #[inline]
    fn judge_policy(&self, function: &AgentFn, span: &Span) -> Result<(), ExecError> {
        validate_policy(&function.policy).map_err(|error| {
            let error = ExecError::invalid_policy(function.name, error);
            telemetry::record_exec(span, || Usage::ZERO, || None, Some(error.kind().name()));
            self.journaled(error)
        })
    }

    /// The error of an exec whose model still asks for tools after `max_iterations` tool turns.
    fn too_many_iterations(&self, run: &mut Run<'_>, iterations: u32) -> ExecError {
        let limit = format!(
            "the model still asked for tools after {iterations} tool iterations (`max_iterations` is {}): no final answer",
            self.max_iterations
        );
        fail(run, ExecErrorKind::MaxIterations, vec![limit], None, None)
    }

    /// Layer 2 after a failed attempt of a model turn (`failures` so far): the programming error,
    /// the context overflow (compacted, or not), the decision and the backoff's sleep; `Err` when
    /// the turn, and the exec, end. A failed attempt is retried with the history as the turn began,
    /// plus any validator feedback (completed tool results are kept).
    async fn after_failure(
        &self,
        run: &mut Run<'_>,
        exec: &mut Exec<'_>,
        failures: &mut Failures,
        attempt: Attempt,
    ) -> Result<(), ExecError> {
        let attempts = &mut failures.attempts;
        let (failed, source) = match attempt {
            Attempt::Failed(failed, source) => (failed, source),
            Attempt::Raised(error) => {
                attempts.push(error.to_string());
                return Err(fail(run, ExecErrorKind::Programming, std::mem::take(attempts), None, Some(error)));
            }
            // Not failures: the turn ends with them.
            Attempt::Answer(_) | Attempt::Tools(_) => return Ok(()),
        };
        // The failure's time counts from here if its attempt took none the clock could see.
        run.state.budget.start_clock();
        // A rejected answer was an answer of the provider's: it paid for retries in layer 1.
        // With fallbacks, a failure that is the target's moves the exec to the next one at once: the
        // same attempt, no backoff (docs/design.md §10, "Fallback across targets").
        if let Some(position) = &mut run.position {
            let last = failures.index + 1 >= run.state.policy.max_retries();
            let because = position.reason_to_move(&run.state, &failed, source.as_ref(), last);
            if let Some(because) = because.filter(|_| run.state.budget.extra_call_refusal().is_none()) {
                run.provider = position.move_on(&mut run.state, &failed.error, because);
                attempts.push(format!("{} (fallback → `{}`)", failed.error, position.name()));
                return Ok(());
            }
        }
        let mut note = None;
        if failed.action == ExecAction::ContextOverflow {
            match self.after_overflow(run, exec, &failed).await {
                AfterOverflow::Compacted(done) => {
                    attempts.push(format!("{} ({done})", failed.error));
                    return Ok(());
                }
                AfterOverflow::Stands(why) => note = why,
                AfterOverflow::Refused(refusal) => {
                    attempts.push(failed.error.clone());
                    run.state.refused(failed.error, failed.usage, refusal.clone());
                    return Err(fail(run, ExecErrorKind::Budget, std::mem::take(attempts), Some(refusal), source));
                }
            }
        }
        attempts.push(match note {
            Some(note) => format!("{} ({note})", failed.error),
            None => failed.error.clone(),
        });
        let schedule = failures.schedule.get_or_insert_with(|| Schedule::exec(run.state.policy));
        let next = run.state.after_failed_attempt(schedule, failures.index, failed).await;
        match next {
            Next::Retry => {}
            Next::Stop(kind, stopped_by) => {
                return Err(fail(run, kind, std::mem::take(attempts), stopped_by, source));
            }
        }
        failures.index += 1;
        Ok(())
    }
}

/// The failed attempts of one model turn so far.
#[derive(Default)]
struct Failures {
    /// Each failed attempt, in words (for the error).
    attempts: Vec<String>,
    /// Layer 2's backoff, made at the first failure: a turn whose first attempt answers needs none.
    schedule: Option<Schedule>,
    /// The attempt being made, from 0.
    index: u32,
}

impl Runtime {
    /// What a context overflow comes to: a shorter conversation for the same turn, a cap that
    /// forbids the call it needs, or the overflow stands (with the reason no compaction helped,
    /// when there is a compactor).
    async fn after_overflow(&self, run: &mut Run<'_>, exec: &mut Exec<'_>, failed: &Failed) -> AfterOverflow {
        let Some(compactor) = exec.function.compact.or(self.compactor.as_deref()) else {
            return AfterOverflow::Stands(None);
        };
        let name = compactor.name();
        if exec.compactions >= self.max_compactions {
            let times = match exec.compactions {
                0 => {
                    return AfterOverflow::Stands(Some(
                        "not compacted: `Runtime::with_max_compactions` is 0".to_owned(),
                    ));
                }
                1 => "once".to_owned(),
                n => format!("{n} times"),
            };
            return AfterOverflow::Stands(Some(format!(
                "not compacted again: `{name}` compacted this exec's conversation {times} already, the most `Runtime::with_max_compactions` allows"
            )));
        }
        if let Some(refusal) = run.state.budget.extra_call_refusal() {
            return AfterOverflow::Refused(refusal);
        }
        let (before, call) = (exec.history.len(), run.state.budget.calls());
        let history = std::mem::take(&mut exec.history);
        let history = match compact::compact(run, compactor, history, &failed.error).await {
            Ok(history) => history,
            Err(why) => return AfterOverflow::Stands(Some(format!("`{name}` could not compact it: {why}"))),
        };
        let after = history.len();
        exec.history = history;
        exec.compactions += 1;
        // About the call that overflowed, which the compactor's own calls may follow.
        run.state.record(Decision {
            layer: Layer::Exec,
            attempt: run.state.attempt,
            call,
            error: failed.error.clone(),
            usage: failed.usage,
            verdict: Verdict::Compacted,
            reason: Why::Compacted { compactor: name.to_owned(), before, after },
            delay: None,
            at: run.state.budget.elapsed(),
        });
        if let Some(trace) = &exec.trace {
            trace.compaction(name, before, after);
        }
        // The compactor's own calls may have used up what was left.
        match run.state.budget.extra_call_refusal() {
            Some(refusal) => AfterOverflow::Refused(refusal),
            None => AfterOverflow::Compacted(format!("compacted {before} → {after} messages by `{name}`")),
        }
    }
}

/// What a context overflow came to.
enum AfterOverflow {
    /// The conversation is shorter: make the turn again at once. In words, for the attempt.
    Compacted(String),
    /// A cap forbids the call the compaction or the turn after it needs.
    Refused(Refusal),
    /// The overflow ends the exec; why no compaction helped, when a compactor was set.
    Stands(Option<String>),
}

/// The judge of one attempt: what its final message (or the programming error that ended it) comes
/// to. A rejected answer adds itself and the validator's reason to the history, for the next
/// attempt to see. Synchronous on purpose: the exec's future holds no state of its own for it.
fn judge(run: &mut Run<'_>, exec: &mut Exec<'_>, message: Result<AssistantMessage, ModelError>) -> Attempt {
    let message = match message {
        Ok(message) => message,
        Err(error) => return Attempt::Raised(error),
    };
    if message.is_error() {
        let (failed, source) = Failed::of_message(message, run.state.judged.take());
        return Attempt::Failed(failed, source);
    }
    if message.stop_reason == StopReason::ToolUse && message.has_tool_calls() {
        return Attempt::Tools(message);
    }
    let (stop_reason, usage) = (message.stop_reason, message.usage);
    // The exec's token counts move into the reply (and back, if the validator rejects it).
    let totals = run.state.usage.take().map(|mut totals| {
        totals.answer = usage;
        totals
    });
    let reply = Reply::new(
        message.into_text(),
        stop_reason,
        run.state.budget.calls(),
        exec.attempts_made,
        run.state.budget.elapsed(),
    )
    .with_iterations(exec.iterations)
    .with_usage(totals);
    let reply = match &run.position {
        None => reply,
        Some(position) => reply.with_target(position.target_name()),
    };
    // A typed answer must be the JSON asked for first; the validator then says what a schema cannot.
    let unfit = exec.expected.and_then(|expected| expected.judge(reply.text(), stop_reason));
    let rejection = match unfit {
        Some(unfit) => (unfit.why, unfit.feedback, unfit.rule),
        None => match exec.function.validate.and_then(|validate| validate(&reply).err()) {
            None => return Attempt::Answer(reply),
            Some(reason) => {
                let feedback = format!("Your previous reply was rejected: {reason}. Answer again, fixing that.");
                (reason, feedback, Reason::Rejected)
            }
        },
    };
    reject(run, exec, reply, usage, rejection)
}

/// A rejected answer: it stays in the history with the feedback after it, for the next attempt to
/// see; its tokens count as spent on a failed attempt.
fn reject(
    run: &mut Run<'_>,
    exec: &mut Exec<'_>,
    mut reply: Reply,
    usage: Option<crate::message::Usage>,
    (why, feedback, rule): (String, String, Reason),
) -> Attempt {
    run.state.usage = reply.take_usage();
    if let Some(usage) = usage {
        run.state.count_failed(usage);
    }
    exec.history.push(Message::Assistant(AssistantMessage::text(reply.into_text())));
    exec.history.push(Message::user(feedback));
    Attempt::Failed(Failed::rejected(&why, rule).with_usage(usage), None)
}

/// What one exec carries from turn to turn.
struct Exec<'f> {
    function: &'f AgentFn,
    /// The JSON the answer must be (`exec_json`), if any.
    expected: Option<&'f Expected<'f>>,
    history: Vec<Message>,
    trace: Option<RunTrace>,
    /// The tools offered: the exec's, its function's or the runtime's.
    toolbox: &'f Toolbox,
    /// The run's id for the tools' idempotency keys when there is no trace (whose id it is
    /// otherwise), made at the first tool turn.
    run_id: Option<Box<str>>,
    iterations: u32,
    attempts_made: u32,
    /// How many times the conversation was compacted.
    compactions: u32,
}

impl Exec<'_> {
    /// The run's id: the trace's, or one made now (`run-` and 16 random hex digits, as a trace's).
    fn run_id(&mut self) -> &str {
        if let Some(trace) = &self.trace {
            return trace.run_id();
        }
        self.run_id.get_or_insert_with(|| format!("run-{:016x}", fastrand::u64(..)).into_boxed_str())
    }
}

/// What one attempt of a turn came to.
enum Attempt {
    /// The final answer, accepted by the validator.
    Answer(Reply),
    /// The model asks for tools.
    Tools(AssistantMessage),
    /// A failed attempt for layer 2 to judge, with the model's typed error if there was one.
    Failed(Failed, Option<ModelError>),
    /// A programming error: returned at once, unchanged.
    Raised(ModelError),
}

/// The exec's answer: its trace's last line, its span's outcome and the exec's decisions.
#[inline]
fn answered(run: &mut Run<'_>, exec: &Exec<'_>, mut reply: Reply) -> Reply {
    if let Some(trace) = &exec.trace {
        trace.agent_finish(reply.text(), exec.iterations);
    }
    telemetry::record_exec(&run.state.span, || reply.total_usage(), || reply.target(), None);
    reply.take_decisions(&mut run.state.decisions);
    reply
}

/// The exec's error: its kind, attempts and cause, with the decisions and counts of `run`.
fn fail(
    run: &mut Run<'_>,
    kind: ExecErrorKind,
    attempts: Vec<String>,
    stopped_by: Option<Refusal>,
    source: Option<ModelError>,
) -> ExecError {
    let state = &mut run.state;
    let decisions = std::mem::take(&mut state.decisions);
    let (calls, elapsed) = (state.budget.calls(), state.budget.elapsed());
    let error = ExecError::new(kind, state.function, attempts, decisions, calls, elapsed, stopped_by, source)
        .with_usage(state.usage.take())
        .with_target(run.position.map(|position| position.target_name()));
    telemetry::record_exec(&state.span, || error.usage(), || error.target(), Some(error.kind().name()));
    error
}
