//! A scenario: the ordered steps, their repeat counts, and the step that answers after them. Its
//! JSON form (`from_json_str`, `load`, `to_json`) is in `spec`, which knows files; this module does not.
//! It also holds the context window, which answers a request too large for it before any step does,
//! the outages, which answer every request of their time windows before anything else does, and
//! the rate limit, which refuses a request that does not fit its key's buckets before the context
//! window sees it.

use crate::journal::StepRef;
use crate::outage::{MAX_OUTAGES, Outage};
use crate::rate_limit::RateLimit;
use crate::step::{Completion, Step};

/// What the server answers, request by request.
///
/// Each request to a model endpoint consumes the next step (of its own conversation, when the
/// scenario is scripted [per conversation](Scenario::per_conversation)): a step with `times: n`
/// answers `n` requests in a row, and once all steps are used, the default step answers every
/// further request.
/// The default default is an `ok` step with [`DEFAULT_TEXT`](crate::DEFAULT_TEXT). With a
/// [context window](Scenario::with_context_window), a request whose conversation does not fit gets
/// the provider's context-overflow answer instead, and consumes no step; during an
/// [outage](Scenario::with_outage), every request gets the outage's step (a 503 by default), and
/// consumes no step either; with a [rate limit](Scenario::with_rate_limit), a request that does
/// not fit its key's buckets gets a 429 and consumes no step.
///
/// Build it in Rust or [load it from JSON](Scenario::from_json_str) (format in the
/// [crate docs](crate#scenario-files)).
///
/// # Examples
///
/// ```
/// use agentic_chaos::{Scenario, Step};
///
/// let scenario = Scenario::new()
///     .then(Step::http_error(429).retry_after_secs(2))
///     .then_times(2, Step::drop_stream(3))
///     .otherwise(Step::ok("fine"));
/// assert_eq!(scenario.scripted_requests(), 3);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub(crate) steps: Vec<(Step, u32)>,
    pub(crate) default: Step,
    pub(crate) context_window: Option<usize>,
    pub(crate) outages: Vec<Outage>,
    pub(crate) rate_limit: Option<RateLimit>,
    /// Each conversation has its own place in the script.
    pub(crate) per_conversation: bool,
}

impl Default for Scenario {
    fn default() -> Self {
        Self::new()
    }
}

impl Scenario {
    /// A scenario without steps whose default answers `ok`: every request succeeds.
    pub fn new() -> Self {
        Self {
            steps: Vec::new(),
            default: Step::Ok(Completion::default()),
            context_window: None,
            outages: Vec::new(),
            rate_limit: None,
            per_conversation: false,
        }
    }

    /// Append a step that answers one request.
    pub fn then(self, step: impl Into<Step>) -> Self {
        self.then_times(1, step)
    }

    /// Append a step that answers `times` requests in a row.
    ///
    /// # Panics
    ///
    /// If `times` is 0.
    pub fn then_times(mut self, times: u32, step: impl Into<Step>) -> Self {
        assert!(times >= 1, "`times` must be at least 1");
        self.steps.push((step.into(), times));
        self
    }

    /// The step that answers every request after the scripted ones (`"default"` in JSON).
    ///
    /// # Default
    ///
    /// `ok` with [`DEFAULT_TEXT`](crate::DEFAULT_TEXT).
    pub fn otherwise(mut self, step: impl Into<Step>) -> Self {
        self.default = step.into();
        self
    }

    /// Simulate a model's context window of `bytes`: a model request whose conversation is larger
    /// (by the [size rule](crate#context-window)) is answered as the `context_overflow` step answers
    /// ([`Step::context_overflow`](crate::Step::context_overflow), in the request's wire format)
    /// and consumes no step: the steps answer only the requests that fit. `"context_window"` in
    /// JSON.
    ///
    /// # Default
    ///
    /// No window: every request reaches the steps.
    ///
    /// # Panics
    ///
    /// If `bytes` is 0 (a file refuses it too): no conversation with any text would fit.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_chaos::{Scenario, Step};
    ///
    /// // The first request that fits gets "Short enough."; larger ones get a 400.
    /// let scenario = Scenario::new().then(Step::ok("Short enough.")).with_context_window(2_000);
    /// assert_eq!(scenario.context_window(), Some(2_000));
    /// ```
    pub fn with_context_window(mut self, bytes: usize) -> Self {
        assert!(bytes >= 1, "the context window must be at least 1 byte");
        self.context_window = Some(bytes);
        self
    }

    /// The context window in bytes, if set.
    pub fn context_window(&self) -> Option<usize> {
        self.context_window
    }

    /// Add an outage window: every model request that arrives during it (by the scenario's clock:
    /// from the server's start, or its last [reset](crate::ChaosServer::reset)) is answered by the
    /// outage's step, before the context window sees it, and consumes no step: the first request after the
    /// window gets the step the outage's requests would have had. Repeatable: where windows
    /// overlap, the one added first answers. `"outages"` in JSON.
    ///
    /// The clock is tokio's ([`tokio::time::Instant`]): in a test on paused time
    /// (`#[tokio::test(start_paused = true)]`), `tokio::time::advance` moves the server into and
    /// out of its outages without waiting.
    ///
    /// # Default
    ///
    /// No outage.
    ///
    /// # Panics
    ///
    /// With more than [`MAX_OUTAGES`] windows (a file refuses them too): the server scans them for
    /// every request.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use agentic_chaos::{Outage, Scenario, Step};
    ///
    /// // Down for the first 3 s, then rate limited from 10 s to 12 s; "Recovered." comes after.
    /// let scenario = Scenario::new()
    ///     .then(Step::ok("Recovered."))
    ///     .with_outage(Outage::new(Duration::ZERO, Duration::from_secs(3)))
    ///     .with_outage(
    ///         Outage::new(Duration::from_secs(10), Duration::from_secs(12))
    ///             .with_step(Step::http_error(429).retry_after_secs(1)),
    ///     );
    /// assert_eq!(scenario.outages().len(), 2);
    /// ```
    pub fn with_outage(mut self, outage: Outage) -> Self {
        assert!(self.outages.len() < MAX_OUTAGES, "a scenario may have at most {MAX_OUTAGES} outages");
        self.outages.push(outage);
        self
    }

    /// The outage windows, in the order they were added.
    pub fn outages(&self) -> &[Outage] {
        &self.outages
    }

    /// Enforce a per-key [`RateLimit`]: a model request that does not fit what is left of one of
    /// its API key's buckets gets a 429 in its wire's rate-limit error body, consumes no step and
    /// is charged nothing; every model request's answer (answers, errors, the 429s) carries its
    /// wire's rate-limit headers. `"rate_limit"` in JSON. See the [crate docs](crate#rate-limits)
    /// for the keys, the cost, the 429 and the headers.
    ///
    /// The buckets start full with the scenario's clock (the server's start, or its last
    /// [reset](crate::ChaosServer::reset)) and refill on it: tokio's clock, so that
    /// `tokio::time::advance` refills them in a test on paused time.
    ///
    /// # Default
    ///
    /// No limit, and no rate-limit headers.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_chaos::{RateLimit, Scenario};
    ///
    /// // 3 RPM and 1 000 TPM per key.
    /// let scenario = Scenario::new().with_rate_limit(RateLimit::new().requests(3).tokens(1_000));
    /// assert_eq!(scenario.rate_limit().and_then(|limit| limit.max_requests()), Some(3));
    /// ```
    pub fn with_rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = Some(limit);
        self
    }

    /// The rate limit, if set.
    pub fn rate_limit(&self) -> Option<&RateLimit> {
        self.rate_limit.as_ref()
    }

    /// Script each conversation on its own: every conversation starts at the first step and goes
    /// through the steps (then the default) by its own requests, so that concurrent clients do not
    /// take each other's steps. `"per_conversation": true` in JSON.
    ///
    /// A conversation is recognised by its opening, on every wire: its system prompt (Anthropic's
    /// `system`, Gemini's `systemInstruction`, Responses' `instructions`) and the texts of its
    /// first user message and of the messages before it (an OpenAI `system` or `developer`
    /// message). The follow-up requests of a tool loop resend that opening, so they continue the
    /// conversation's script; a request with another opening starts a new conversation at the top.
    /// Two clients that open with the same texts are one conversation to the server: give each
    /// its own first message (a run number will do) when they must be told apart. A conversation
    /// whose history is rewritten (compacted) past its first user message is a new one.
    ///
    /// The server keeps the places of at most [`MAX_CONVERSATIONS`](crate::MAX_CONVERSATIONS)
    /// conversations; past them it forgets the one that has gone longest without a request (if it
    /// comes back, it starts again). The journal numbers each request's conversation
    /// ([`JournalEntry::conversation`](crate::JournalEntry::conversation)). Outages, the context
    /// window and the rate limit apply to every request as before; a [reset](crate::ChaosServer::reset)
    /// forgets every conversation.
    ///
    /// # Default
    ///
    /// One script, shared: each request to a model endpoint takes the next step, whichever
    /// conversation it belongs to.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_chaos::{Scenario, Step};
    ///
    /// // Every conversation: a 429 on its first request, then an answer.
    /// let scenario = Scenario::new()
    ///     .then(Step::http_error(429).retry_after_secs(1))
    ///     .then(Step::ok("Done."))
    ///     .per_conversation();
    /// assert!(scenario.is_per_conversation());
    /// ```
    pub fn per_conversation(mut self) -> Self {
        self.per_conversation = true;
        self
    }

    /// Whether each conversation has its own place in the script (see
    /// [`per_conversation`](Self::per_conversation)).
    pub fn is_per_conversation(&self) -> bool {
        self.per_conversation
    }

    /// Whether a conversation of `bytes` fits the context window (always, without one).
    pub(crate) fn fits(&self, bytes: usize) -> bool {
        self.context_window.is_none_or(|window| bytes <= window)
    }

    /// The scripted steps in order, each with its repeat count.
    pub fn steps(&self) -> impl ExactSizeIterator<Item = (&Step, u32)> {
        self.steps.iter().map(|(step, times)| (step, *times))
    }

    /// The step that answers after the scripted ones.
    pub fn default_step(&self) -> &Step {
        &self.default
    }

    /// How many requests the scripted steps answer before the default takes over.
    pub fn scripted_requests(&self) -> u64 {
        self.steps.iter().map(|(_, times)| u64::from(*times)).sum()
    }
}

/// Where a server is in its scenario: copied to look at the next step without taking it.
#[derive(Debug, Default, Clone)]
pub(crate) struct Cursor {
    entry: usize,
    used: u32,
    default_used: u32,
}

impl Cursor {
    /// The step that answers the next request, and which one it is.
    pub(crate) fn next(&mut self, scenario: &Scenario) -> (Step, StepRef) {
        while let Some((step, times)) = scenario.steps.get(self.entry) {
            if self.used < *times {
                self.used += 1;
                let at = StepRef {
                    index: Some(self.entry),
                    kind: step.kind(),
                    repeat: self.used,
                    outage: None,
                    rate_limited: false,
                };
                return (step.clone(), at);
            }
            self.entry += 1;
            self.used = 0;
        }
        self.default_used = self.default_used.saturating_add(1);
        let at = StepRef {
            index: None,
            kind: scenario.default.kind(),
            repeat: self.default_used,
            outage: None,
            rate_limited: false,
        };
        (scenario.default.clone(), at)
    }
}
