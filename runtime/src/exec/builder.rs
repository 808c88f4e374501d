//! [`RuntimeBuilder`]: a runtime's settings, its targets and the state they share, made once by
//! [`RuntimeBuilder::build`].

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::compact::{Compactor, DEFAULT_MAX_COMPACTIONS};
use crate::decision::Decision;
use crate::exec::agent_fn::AgentFn;
use crate::exec::{DEFAULT_MAX_ITERATIONS, Runtime};
use crate::observe::journal::Journal;
use crate::observe::trace::TraceSink;
use crate::policy::{PolicyError, RetryPolicy};
use crate::provider::Provider;
use crate::retry::fallback::{MAX_TARGETS, Target, target_name};
use crate::retry::validate_policy;
use crate::spend::ledger::Ledger;
use crate::spend::{Prices, SpendAccount, UsageLimits};
use crate::storm::account::Account;
use crate::storm::pace::Pacing;
use crate::storm::store::SharedStore;
use crate::storm::{BreakerSettings, Governor, RetryQuota};
use crate::tool::Toolbox;

/// The settings of a [`Runtime`], given once: [`Runtime::builder`] starts one, each `with_*` sets one
/// thing, and [`RuntimeBuilder::build`] makes the runtime, its targets and the state they share (the
/// retry quota, the cooldowns, the breakers and the pacer), or says which setting is wrong.
///
/// Every setting that makes shared state lives here, not on the runtime: a built [`Runtime`] has no
/// setter, so a clone of it can never be detached from the others' breakers, quota, cooldowns or
/// pacer. A builder can be cloned to make several runtimes that differ in a setting; each `build()`
/// makes state of its own, shared with nothing the other made (a shared store is the way to
/// share it on purpose).
///
/// # Examples
///
/// ```
/// use agentic_runtime::storm::BreakerSettings;
/// use agentic_runtime::{RetryPolicy, Runtime, Scripted, ScriptedProvider};
///
/// # fn main() -> Result<(), agentic_runtime::policy::PolicyError> {
/// let primary = ScriptedProvider::new([Scripted::ok("hi")]).with_model("a");
/// let runtime = Runtime::builder(primary)
///     .with_policy(RetryPolicy::new().with_max_retries(2))
///     .with_fallback(ScriptedProvider::new([Scripted::ok("hi")]).with_model("b"))
///     .with_breaker(BreakerSettings::standard())
///     .build()?;
/// assert_eq!(runtime.targets().len(), 2);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until `build()` makes the runtime"]
pub struct RuntimeBuilder {
    provider: Arc<dyn Provider>,
    policy: RetryPolicy,
    system: Option<Arc<str>>,
    seed: Option<u64>,
    observer: Option<Arc<crate::decision::Observer>>,
    quota: Option<RetryQuota>,
    store: Option<Arc<dyn SharedStore>>,
    fallbacks: Vec<Arc<dyn Provider>>,
    breaker: Option<BreakerSettings>,
    pacing: Pacing,
    journal: Option<Journal>,
    tools: Toolbox,
    trace: Option<TraceSink>,
    max_iterations: u32,
    content_in_traces: bool,
    compactor: Option<Arc<dyn Compactor>>,
    max_compactions: u32,
    limits: UsageLimits,
    prices: Option<Arc<Prices>>,
    account: Option<SpendAccount>,
}

impl fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("provider", &self.provider.name())
            .field("policy", &self.policy)
            .field("fallbacks", &self.fallbacks.iter().map(|provider| target_name(&**provider)).collect::<Vec<_>>())
            .field("breaker", &self.breaker)
            .field("shared_store", &self.store.is_some())
            .finish_non_exhaustive()
    }
}

impl RuntimeBuilder {
    /// A builder on a provider that is already shared; [`Runtime::builder`] takes one by value.
    pub fn from_shared(provider: Arc<dyn Provider>) -> Self {
        Self {
            provider,
            policy: RetryPolicy::new(),
            system: None,
            seed: None,
            observer: None,
            quota: Some(RetryQuota::standard()),
            store: None,
            fallbacks: Vec::new(),
            breaker: None,
            pacing: Pacing::from_headers(),
            journal: None,
            tools: Toolbox::new(),
            trace: None,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            content_in_traces: false,
            compactor: None,
            max_compactions: DEFAULT_MAX_COMPACTIONS,
            limits: UsageLimits::NONE,
            prices: None,
            account: None,
        }
    }

    /// The policy of [`Runtime::exec`] and of every request that names none (an agent function
    /// brings its own, and [`ExecRequest::policy`](crate::exec::ExecRequest::policy) overrides it).
    ///
    /// # Default
    /// [`RetryPolicy::new`]
    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The system instruction of requests that set none and come from no documented agent function.
    ///
    /// # Default
    /// None
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(Arc::from(system.into()));
        self
    }

    /// Seeds the jitter RNG, so that delays replay exactly (for tests and simulations).
    ///
    /// # Default
    /// A random seed.
    pub fn with_jitter_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Calls `observer` with every decision of both layers as it is made (before the sleep it
    /// announces), e.g. to print a live timeline. The decisions are in the `Reply` and the
    /// `ExecError` too; [`Decision::exec_id`] tells concurrent execs apart.
    ///
    /// # Default
    /// None
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
    ///
    /// let runtime = Runtime::builder(ScriptedProvider::new([Scripted::ok("hi")]))
    ///     .with_observer(|decision| eprintln!("exec {}: {decision}", decision.exec_id()))
    ///     .build()
    ///     .unwrap();
    /// ```
    pub fn with_observer(mut self, observer: impl Fn(&Decision) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// The retry quota shared by every exec of the runtime and its clones, per target (storm control:
    /// the retries of a window are paid for by its successes, plus a floor); `None` turns it off.
    ///
    /// # Default
    /// [`RetryQuota::standard`] (a 60 s window, one retry per success, plus 100 retries)
    pub fn with_retry_quota(mut self, quota: Option<RetryQuota>) -> Self {
        self.quota = quota;
        self
    }

    /// Keeps the retry quota (per provider scope), the cooldowns, the breakers and the pacer's
    /// limits (per target: a model of a scope) in `store`, shared with every process that uses the
    /// same store (e.g. the `agentic-redis` crate's `RedisStore`). When the store does not answer,
    /// calls go on with this process's state, asking the store again once per
    /// [`SharedStore::offline_backoff`], with a warning when it fails and one when it answers again.
    ///
    /// # Default
    /// None: the state is this process's.
    pub fn with_shared_store(mut self, store: Arc<dyn SharedStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Adds `provider` as the next target after those the builder has (repeatable: targets in
    /// order, at most [`MAX_TARGETS`] in all), each with its own model, on any wire: a Chat
    /// Completions primary can fall back to Anthropic. Each target has its own retry quota,
    /// cooldowns and circuit breaker ([`RuntimeBuilder::with_breaker`]), shared by every clone of
    /// the runtime (and, with a shared store, by the fleet).
    ///
    /// An exec walks the targets forward, each at most once, moving on at once (no sleep):
    /// - when the target's breaker is open (skipped at no cost), or its cooldown or Retry-After is
    ///   longer than `retry_after_cap_ms` or the time left, or its retry quota is spent;
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
    /// all its targets. Each move is a decision with verdict
    /// [`Verdict::Fallback`](crate::decision::Verdict::Fallback); [`Reply::target`](crate::Reply::target)
    /// says which target answered.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::decision::Verdict;
    /// use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let primary = ScriptedProvider::new([Scripted::http(401, "invalid api key")]).with_model("a");
    /// let secondary = ScriptedProvider::new([Scripted::ok("hello")]).with_model("b");
    /// let runtime = Runtime::builder(primary.clone()).with_fallback(secondary.clone()).build().unwrap();
    /// let reply = runtime.exec("hi").await.unwrap();
    /// assert_eq!((reply.text(), reply.target()), ("hello", Some("scripted/b")));
    /// let moved = &reply.decisions()[1];
    /// assert_eq!(moved.verdict(), Verdict::Fallback);
    /// assert_eq!(moved.target(), Some("scripted/a"));
    /// assert_eq!(
    ///     moved.reason().to_string(),
    ///     "fallback: `scripted/a` failed permanently for this target (HTTP 401 is permanent (a 4xx other than 408, 409, 425, 429)) → `scripted/b`"
    /// );
    /// assert_eq!((primary.calls(), secondary.calls()), (1, 1));
    /// # }
    /// ```
    pub fn with_fallback(self, provider: impl Provider) -> Self {
        self.with_fallback_shared(Arc::new(provider))
    }

    /// [`RuntimeBuilder::with_fallback`] with a provider that is already shared.
    pub fn with_fallback_shared(mut self, provider: Arc<dyn Provider>) -> Self {
        self.fallbacks.push(provider);
        self
    }

    /// The circuit breaker of every target of a runtime with fallbacks: when a target's failures
    /// cross the threshold it opens and the target is skipped at no cost; after the open period one
    /// probe call is let through, whose answer closes it. A runtime with one target has no breaker:
    /// setting one without a fallback is an error of [`RuntimeBuilder::build`].
    ///
    /// # Default
    /// [`BreakerSettings::standard`] with fallbacks: opens at 50 % failures of at least 20 calls in
    /// 10 s, for 30 s (docs/design.md §10, "Circuit breaker", says why).
    pub fn with_breaker(mut self, settings: BreakerSettings) -> Self {
        self.breaker = Some(settings);
        self
    }

    /// Paces every target's calls under its server's rate limits as `pacing` says (docs/design.md
    /// §10, "Pacing"): the limits are learnt from every response's rate-limit headers (OpenAI's
    /// `x-ratelimit-*`, Anthropic's `anthropic-ratelimit-*`), successes included, per target (a
    /// model of an endpoint × key, as the cooldowns); a call waits, in arrival order, until the
    /// requests and tokens it needs are there, when that fits before its deadline and within
    /// `retry_after_cap_ms`, and is refused (kind `refused`,
    /// [`Refusal::RateLimit`](crate::storm::Refusal::RateLimit)) when it does not fit the deadline.
    /// A wait is a decision ([`Verdict::Paced`](crate::decision::Verdict::Paced)). With a shared
    /// store that keeps a pacer, the fleet shares one pacer per target.
    ///
    /// # Default
    /// [`Pacing::from_headers`]: on wherever a server states its limits; nothing changes on the
    /// calls of a server that states none.
    pub fn with_pacing(mut self, pacing: Pacing) -> Self {
        self.pacing = pacing;
        self
    }

    /// Records every exec that fails for good as one JSON line in `journal` (and every retry, when
    /// the journal was opened [`Journal::with_retries`]), so that "the same failure 5 times today"
    /// is a query: `agentic journal FILE --since 24h`.
    ///
    /// # Default
    /// None
    pub fn with_journal(mut self, journal: Journal) -> Self {
        self.journal = Some(journal);
        self
    }

    /// The tools the model may call during an exec that names none (an agent function's
    /// `tools = PATH` and [`ExecRequest::tools`](crate::exec::ExecRequest::tools) offer their own).
    /// Each turn that asks for tools runs them (see [`Toolbox::run_calls`]) and sends the results
    /// back, errors included (`is_error: true`), for the model to decide what to do: a tool error is
    /// never retried by the layers, whatever it says. The loop ends with the model's final text, or
    /// at `max_iterations` with an error of kind
    /// [`ExecErrorKind::MaxIterations`](crate::ExecErrorKind::MaxIterations). Infrastructure
    /// retries apply per model turn: a failed turn is retried with the history as it was before it,
    /// completed tool results kept.
    ///
    /// # Default
    /// No tools.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::{Runtime, Scripted, ScriptedProvider, Toolbox};
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
    ///     Scripted::tool_call("get_weather", json!({"city": "Paris"})),
    ///     Scripted::ok("It is sunny in Paris."),
    /// ]);
    /// let runtime = Runtime::builder(provider.clone()).with_tools(tools).build().unwrap();
    /// let reply = runtime.exec("What is the weather in Paris?").await.unwrap();
    /// assert_eq!(reply.text(), "It is sunny in Paris.");
    /// assert_eq!(reply.iterations(), 1);
    /// # }
    /// ```
    pub fn with_tools(mut self, tools: Toolbox) -> Self {
        self.tools = tools;
        self
    }

    /// The spend limits of every exec that sets none of its own (a request's
    /// [`ExecRequest::usage_limits`](crate::exec::ExecRequest::usage_limits), an agent function's
    /// `max_total_tokens = ..`): tokens, tool calls and dollars, each checked before the call
    /// that would pass it. An invalid one makes [`RuntimeBuilder::build`] fail.
    ///
    /// # Default
    /// [`UsageLimits::NONE`]: no limit.
    pub fn with_usage_limits(mut self, limits: UsageLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The prices a dollar limit (`max_cost_usd`) counts at, per target
    /// ([`Prices`]: in code, or from litellm's price file). Under a dollar limit a target without a
    /// price is an error before the first call (of [`RuntimeBuilder::build`] when the runtime's
    /// limits have one, of the exec when a request's or an agent function's has), never a guess.
    ///
    /// # Default
    /// None: a dollar limit cannot be used.
    pub fn with_prices(mut self, prices: Prices) -> Self {
        self.prices = Some(Arc::new(prices));
        self
    }

    /// A spend limit shared by every exec of the runtime over a window (per hour, per day), and
    /// with a shared store ([`with_shared_store`](Self::with_shared_store)) by every process that
    /// names the same account: each model call reserves its worst case against it before it is
    /// sent and settles to its usage after; a call that cannot fit is not sent, and its exec stops
    /// with kind `usage_limit` ([`Refusal::UsageLimit`](crate::storm::Refusal::UsageLimit) with the
    /// account's window). An invalid account, or a dollar limit over a target without a price,
    /// makes [`RuntimeBuilder::build`] fail. While the shared store does not answer, each process
    /// counts against an account of its own (and says so in a warning).
    ///
    /// # Default
    /// None: execs share no limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::spend::SpendAccount;
    /// use agentic_runtime::storm::Refusal;
    /// use agentic_runtime::{Runtime, Scripted, ScriptedProvider};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let provider = ScriptedProvider::new([Scripted::ok("hi")]);
    /// let account = SpendAccount::per_hour().with_max_total_tokens(1_000).with_call_output_tokens(2_000);
    /// let runtime = Runtime::builder(provider).with_spend_account(account).build().unwrap();
    /// let error = runtime.exec("Hello").await.unwrap_err();
    /// assert!(matches!(error.refusal(), Some(Refusal::UsageLimit { account: Some(_), .. })));
    /// # }
    /// ```
    pub fn with_spend_account(mut self, account: SpendAccount) -> Self {
        self.account = Some(account);
        self
    }

    /// The most tool turns one exec may take before it stops with
    /// [`ExecErrorKind::MaxIterations`](crate::ExecErrorKind::MaxIterations) (not retried); 0
    /// allows no tool turn.
    ///
    /// # Default
    /// [`DEFAULT_MAX_ITERATIONS`] (20)
    pub fn with_max_iterations(mut self, iterations: u32) -> Self {
        self.max_iterations = iterations;
        self
    }

    /// What an exec does when its conversation overflows the model's context: `compactor` shortens
    /// it and the same turn is made again (see [`compact`](crate::compact)). An agent function's
    /// `compact = PATH` takes precedence. Without a compactor, a context overflow ends the exec with
    /// kind [`ExecErrorKind::ContextOverflow`](crate::ExecErrorKind::ContextOverflow).
    ///
    /// # Default
    /// None
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_runtime::compact::DropOldest;
    /// use agentic_runtime::{Runtime, Scripted, ScriptedProvider, Toolbox};
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let tools = Toolbox::new().with_fn("read", "Reads a page", json!({"type": "object"}), |_| async {
    ///     Ok("a long page ...".to_owned())
    /// });
    /// let provider = ScriptedProvider::new([
    ///     Scripted::tool_call("read", json!({})),
    ///     Scripted::tool_call("read", json!({})),
    ///     Scripted::http(400, "This model's maximum context length is 8192 tokens"),
    ///     Scripted::ok("The pages say ..."),
    /// ]);
    /// let runtime =
    ///     Runtime::builder(provider.clone()).with_tools(tools).with_compactor(DropOldest::keeping(1)).build().unwrap();
    /// let reply = runtime.exec("Read the pages.").await.unwrap();
    /// assert_eq!(reply.text(), "The pages say ...");
    /// let compaction = reply.decisions().last().unwrap(); // after layer 1's: not mine to retry
    /// assert_eq!(compaction.reason(), "context overflow: compacted 5 → 3 messages by `drop_oldest`");
    /// assert_eq!(provider.requests()[3].messages.len(), 3, "the prompt and the last turn");
    /// # }
    /// ```
    pub fn with_compactor(mut self, compactor: impl Compactor + 'static) -> Self {
        self.compactor = Some(Arc::new(compactor));
        self
    }

    /// The most compactions one exec may make; an overflow after the last one ends the exec with
    /// kind [`ExecErrorKind::ContextOverflow`](crate::ExecErrorKind::ContextOverflow).
    ///
    /// # Default
    /// [`DEFAULT_MAX_COMPACTIONS`] (1)
    pub fn with_max_compactions(mut self, compactions: u32) -> Self {
        self.max_compactions = compactions;
        self
    }

    /// Records prompts and answers on the model calls' spans: the GenAI conventions' opt-in
    /// `gen_ai.input.messages` (the conversation sent, as JSON) and `gen_ai.output.messages` (the
    /// answer's content, as JSON). Keys are never recorded.
    ///
    /// # Default
    /// `false`: prompts and answers may hold personal data, and a trace backend keeps them.
    pub fn with_content_in_traces(mut self, record: bool) -> Self {
        self.content_in_traces = record;
        self
    }

    /// Writes a JSONL trace of every exec: `agent_start`, `tool_call`, `tool_result` (with
    /// `is_error`) and `agent_finish`. Infrastructure retries are not task events: they go to
    /// `tracing` and the journal. An exec whose layers gave up writes no `agent_finish`, so the
    /// grader (`agentic grade`) calls it `incomplete`.
    ///
    /// # Default
    /// None
    pub fn with_trace(mut self, trace: TraceSink) -> Self {
        self.trace = Some(trace);
        self
    }

    /// Makes the runtime: its targets, and for each its retry quota, cooldowns, pacer and (with
    /// fallbacks) breaker, exactly once. Every clone of the runtime shares them.
    ///
    /// # Errors
    ///
    /// A [`PolicyError`] naming the setting when the policy breaks a rule
    /// ([`RetryPolicy::validate`]), when there are more than [`MAX_TARGETS`] targets, or when a
    /// breaker is set on a runtime without fallbacks (it would never open).
    pub fn build(self) -> Result<Runtime, PolicyError> {
        validate_policy(&self.policy)?;
        self.limits.validate()?;
        if let Some(account) = &self.account {
            account.validate()?;
        }
        let account = self.account.clone().map(|account| Arc::new(Account::new(account)));
        let count = 1 + self.fallbacks.len();
        if count > MAX_TARGETS {
            return Err(PolicyError::new(
                "with_fallback",
                format!(
                    "{count} targets are too many: a runtime has at most {MAX_TARGETS} (its primary and {} fallbacks); \
                     drop the fallbacks an exec would never reach",
                    MAX_TARGETS - 1
                ),
            ));
        }
        if self.breaker.is_some() && self.fallbacks.is_empty() {
            return Err(PolicyError::new(
                "with_breaker",
                "a breaker needs a fallback: a runtime with one target has no breaker (an open breaker \
                 would refuse every exec with nowhere to go); add one with `with_fallback`, or drop \
                 `with_breaker`"
                    .to_owned(),
            ));
        }
        let governor = |provider: &dyn Provider, name: &str, breaker: Option<BreakerSettings>| {
            let model = provider.model().unwrap_or("");
            let governor = Governor::new(provider.scope(), self.quota, self.store.clone())
                .with_pacing(&self.pacing)
                .with_model(model)
                .with_account(account.clone());
            Arc::new(match breaker {
                Some(settings) => governor.with_breaker(name.to_owned(), model, settings),
                None => governor,
            })
        };
        let (first, targets) = if self.fallbacks.is_empty() {
            (governor(&*self.provider, "", None), None)
        } else {
            // Its breakers must hear the first failures of a burst as early as its successes.
            crate::classify::prebuild();
            let breaker = self.breaker.unwrap_or_else(BreakerSettings::standard);
            let mut targets: Vec<Target> = Vec::with_capacity(count);
            for provider in std::iter::once(self.provider.clone()).chain(self.fallbacks) {
                let mut name = target_name(&*provider);
                // Two targets of one wire and model (at two URLs) would read alike in every decision.
                if targets.iter().any(|other| *other.name == name) {
                    name = format!("{name}#{}", targets.len() + 1);
                }
                let governor = governor(&*provider, &name, Some(breaker));
                targets.push(Target { provider, governor, name: Arc::new(name) });
            }
            (targets[0].governor.clone(), Some(Arc::new(targets)))
        };
        let runtime = Runtime {
            provider: self.provider,
            function: AgentFn { limits: self.limits, ..AgentFn::anonymous(self.policy) },
            system: self.system,
            seed: self.seed.map(|seed| (seed, Arc::new(AtomicU64::new(0)))),
            observer: self.observer,
            governor: first,
            journal: self.journal,
            tools: self.tools,
            trace: self.trace,
            max_iterations: self.max_iterations,
            content_in_traces: self.content_in_traces,
            compactor: self.compactor,
            max_compactions: self.max_compactions,
            targets,
            prices: self.prices,
        };
        let names = runtime.target_names();
        if let Some(target) =
            Ledger::unpriced(&self.limits, runtime.prices().map(|p| &**p), names.iter().map(String::as_str))
        {
            return Err(unpriced(target));
        }
        // The account's dollars need every target's price, as an exec's do.
        if let Some(usd) = self.account.as_ref().and_then(SpendAccount::max_cost_usd) {
            let limits = UsageLimits::new().with_max_cost_usd(usd);
            if let Some(target) =
                Ledger::unpriced(&limits, runtime.prices().map(|p| &**p), names.iter().map(String::as_str))
            {
                return Err(unpriced(target));
            }
        }
        Ok(runtime)
    }
}

/// The error of a dollar limit over a target without a price.
pub(crate) fn unpriced(target: &str) -> PolicyError {
    PolicyError::new(
        "max_cost_usd",
        format!(
            "the target `{target}` has no price, and a dollar limit needs one for every target (a guess \
             would be no limit): add it with `RuntimeBuilder::with_prices` (in code, or from litellm's \
             price file with `Prices::from_litellm_file`)"
        ),
    )
}
