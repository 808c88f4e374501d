//! Resilient calls for any async operation (docs/design.md §16): classification, jittered
//! capped backoff, one deadline, per-attempt timeouts, a validator, and a structured failure.
//!
//! It is layer 2 of `Runtime::exec` made generic: the same policy type and the same decision code
//! (`retry.rs`), applied to any operation whose error implements [`Classify`].

pub(crate) mod attempt;
mod boxed_classify;
mod call;
mod failure;
mod gave_up;
#[cfg(feature = "genai")]
mod genai_classify;
#[cfg(feature = "genai")]
mod genai_redact;
#[cfg(feature = "reqwest-middleware")]
mod middleware_classify;
#[cfg(feature = "async-openai")]
mod openai_classify;
#[cfg(any(feature = "tower", feature = "genai"))]
pub(crate) mod redact;
#[cfg(feature = "providers")]
mod reqwest_classify;
mod validator;

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use tokio::time::Instant;

use crate::answer::exec_error::ExecErrorKind;
use crate::classify::{ExecAction, exec_verdict, retry_hint};
use crate::decision::Rule;
use crate::error::{ModelError, PolicyError, TransportKind};
use crate::observe::journal::Journal;
use crate::policy::RetryPolicy;
use crate::policy::backoff::{Rng, Schedule};
#[cfg(feature = "providers")]
use crate::provider::Secret;
use crate::retry::budget::{Budget, CallLimit};
use crate::retry::{Failed, Next, RetryState};
use crate::storm::{Governor, Refusal};
use attempt::{Attempt, Limit, Outcome};
use call::Call;
pub use failure::Failure;
use failure::fields;
pub use gave_up::GaveUp;
pub use validator::{NoValidator, Validator};

/// How an error should be handled by a retry loop.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Classification {
    /// Retry, stop for good, or return at once.
    pub action: ExecAction,
    /// Why: the rule that judged it (a classifier's, or your own words).
    pub reason: Rule,
    /// The server's requested wait: the next wait, jittered only above it (docs/design.md §8).
    pub retry_after: Option<Duration>,
    /// The failure was a timeout (for the caller's records: the retry rules judge it as any other
    /// failure with the same action).
    pub timeout: bool,
}

impl Classification {
    /// Worth another attempt.
    pub fn retry(reason: impl Into<Rule>) -> Self {
        Self { action: ExecAction::Retry, reason: reason.into(), retry_after: None, timeout: false }
    }

    /// The same operation will fail the same way: stop.
    pub fn permanent(reason: impl Into<Rule>) -> Self {
        Self { action: ExecAction::FailPermanently, ..Self::retry(reason) }
    }

    /// A programming error: return it at once.
    pub fn raise(reason: impl Into<Rule>) -> Self {
        Self { action: ExecAction::Raise, ..Self::retry(reason) }
    }

    /// Adds the server's requested wait.
    pub fn with_retry_after(mut self, wait: Option<Duration>) -> Self {
        self.retry_after = wait;
        self
    }

    /// Marks the failure as a timeout.
    pub fn with_timeout(mut self, timeout: bool) -> Self {
        self.timeout = timeout;
        self
    }
}

/// An error a retry loop can judge. Implemented for the runtime's [`ModelError`],
/// [`std::io::Error`] and HTTP statuses ([`HttpStatus`]), and with the feature `providers` (on by
/// default) for `reqwest::Error` and `reqwest::StatusCode`; implement it for your own error types.
///
/// The errors of the clients teams use, each behind its feature (an HTTP error judged by the same
/// reading of its status, headers and body as our providers', so the same response gets the same
/// verdict whichever client received it):
/// - `async_openai::error::OpenAIError` (`async-openai`);
/// - `reqwest_middleware::Error` (`reqwest-middleware`);
/// - `genai::Error` (`genai`; genai 0.7 needs Rust 1.88).
///
/// All three are on reqwest 0.13, the providers' reqwest: its errors inside theirs get the rules above.
///
/// # Examples
///
/// ```
/// use agentic_runtime::resilient::{Classification, Classify};
///
/// #[derive(Debug)]
/// enum SearchError { Busy, BadQuery }
///
/// impl std::fmt::Display for SearchError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str(match self { SearchError::Busy => "busy", SearchError::BadQuery => "bad query" })
///     }
/// }
///
/// impl Classify for SearchError {
///     fn classify(&self) -> Classification {
///         match self {
///             SearchError::Busy => Classification::retry("the index is busy"),
///             SearchError::BadQuery => Classification::permanent("the query is malformed"),
///         }
///     }
/// }
/// ```
pub trait Classify {
    /// How to handle this error.
    fn classify(&self) -> Classification;

    /// This error with no piece of an API key in what it shows (its Display and Debug): `redact`
    /// gives a text back with every piece of the key replaced by `<redacted>` (borrowed when there
    /// was none). A retry loop that was told the key (`Resilient::redacting`, with the `providers` feature;
    /// `tower::RetryLayer::redacting`) hands its last error back through this: a server may echo the
    /// key in an error body, and whoever logs the error would leak it.
    ///
    /// The default gives the error back unchanged: implement it for an error of your own that
    /// carries a server's text. The errors this crate classifies take the key out of every text
    /// they hold from the server (a body, a message, a URL); an error boxed by another layer
    /// (`OpenAIError::Boxed`, `reqwest_middleware::Error::Middleware`) is not opened.
    fn redact(self, redact: &dyn Fn(&str) -> Cow<'_, str>) -> Self
    where
        Self: Sized,
    {
        let _ = redact;
        self
    }
}

impl Classify for ModelError {
    fn classify(&self) -> Classification {
        let text = self.to_string();
        let verdict = exec_verdict(&text, Some(self));
        Classification {
            action: verdict.action,
            reason: verdict.reason.into(),
            retry_after: retry_hint(self.message(), Some(self)),
            timeout: self.transport_kind() == Some(TransportKind::Timeout),
        }
    }

    /// Its message without the key (the kind, status, code and hints are the server's facts).
    fn redact(self, redact: &dyn Fn(&str) -> Cow<'_, str>) -> Self {
        self.map_message(redact)
    }
}

impl Classify for std::io::Error {
    fn classify(&self) -> Classification {
        use std::io::ErrorKind as Kind;
        let kind = self.kind();
        match kind {
            Kind::TimedOut => Classification::retry("I/O timed out").with_timeout(true),
            Kind::NotFound
            | Kind::PermissionDenied
            | Kind::AlreadyExists
            | Kind::InvalidInput
            | Kind::InvalidData
            | Kind::Unsupported
            | Kind::OutOfMemory => {
                Classification::permanent(format!("I/O error `{kind}` will not go away by retrying"))
            }
            _ => Classification::retry(format!("I/O error `{kind}` is transient")),
        }
    }

    /// The same kind, its text without the key (what it wrapped is dropped when that showed it).
    fn redact(self, redact: &dyn Fn(&str) -> Cow<'_, str>) -> Self {
        let text = self.to_string();
        match redact(&text) {
            Cow::Borrowed(_) => self,
            Cow::Owned(shown) => std::io::Error::new(self.kind(), shown),
        }
    }
}

/// A service that cannot fail (`std::convert::Infallible`, an in-memory tower service's error).
impl Classify for std::convert::Infallible {
    fn classify(&self) -> Classification {
        match *self {}
    }
}

/// An HTTP status code as a failure: 408, 409, 425, 429 and 5xx are transient, any other is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HttpStatus(pub u16);

impl fmt::Display for HttpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}", self.0)
    }
}

impl Classify for HttpStatus {
    fn classify(&self) -> Classification {
        let status = self.0;
        if crate::classify::is_transient_status(status) {
            Classification::retry(format!("HTTP {status} is transient"))
        } else {
            Classification::permanent(format!("HTTP {status} is permanent"))
        }
    }
}

/// A resilient call of any async operation, configured by the same [`RetryPolicy`] as `exec`:
/// `max_retries` attempts, `exec_base_delay_ms * 2^k` backoff with `jitter` and `max_delay_ms`,
/// one `budget_ms` deadline, a `timeout_ms` per attempt, `max_calls`, and `retry_after_cap_ms`
/// for the server's hints. (The session keys do not apply: there is no session.)
///
/// A call that succeeds at once costs the poll of the operation and a look at what the policy's
/// rules said when it was built (a `const` policy is judged at compile time): it allocates nothing
/// and reads no clock unless the policy sets `timeout_ms`, `budget_ms` or `turn_timeout_ms`. Build
/// one `Resilient` and call it as often as needed, or build one per call.
///
/// # Examples
///
/// ```
/// use agentic_runtime::RetryPolicy;
/// use agentic_runtime::resilient::Resilient;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let policy = RetryPolicy::new().with_max_retries(3).with_budget_ms(Some(30_000));
/// let mut failures = 2;
/// let value = Resilient::new("read config", &policy)
///     .validate(|text: &String| if text.is_empty() { Err("empty file".into()) } else { Ok(()) })
///     .call(|| {
///         let fail = failures > 0;
///         failures -= 1;
///         async move {
///             if fail {
///                 Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
///             } else {
///                 Ok(String::from("key = value"))
///             }
///         }
///     })
///     .await
///     .unwrap();
/// assert_eq!(value, "key = value");
/// # }
/// ```
///
/// `V` is the value check ([`Resilient::validate`]): none by default, and a check is called
/// directly, not through a box.
pub struct Resilient<'p, T, V = NoValidator> {
    /// Borrowed when given as a `&str`: the success path allocates nothing of its own.
    name: Cow<'p, str>,
    policy: &'p RetryPolicy,
    validate: V,
    /// Drawn on the first failure unless given: the success path needs no RNG.
    seed: Option<u64>,
    journal: Option<&'p Journal>,
    /// The key kept out of the failure ([`Resilient::redacting`]).
    #[cfg(feature = "providers")]
    secret: Option<Secret>,
    value: PhantomData<fn() -> T>,
}

impl<T, V: Validator<T>> fmt::Debug for Resilient<'_, T, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resilient")
            .field("name", &self.name)
            .field("policy", self.policy)
            .field("validate", &V::CHECKS)
            .field("seed", &self.seed)
            .field("journal", &self.journal.is_some())
            .finish()
    }
}

impl<'p, T> Resilient<'p, T> {
    /// A resilient call named `name` (for errors, logs and the journal) under `policy`.
    pub fn new(name: impl Into<Cow<'p, str>>, policy: &'p RetryPolicy) -> Self {
        let name = name.into();
        Self {
            name,
            policy,
            validate: NoValidator,
            seed: None,
            journal: None,
            #[cfg(feature = "providers")]
            secret: None,
            value: PhantomData,
        }
    }
}

impl<'p, T, V: Validator<T>> Resilient<'p, T, V> {
    /// Checks each value with `check` (in place of any earlier check): `Err(reason)` makes the
    /// attempt a retryable failure ("success that isn't").
    pub fn validate<C>(self, check: C) -> Resilient<'p, T, C>
    where
        C: Fn(&T) -> Result<(), String>,
    {
        self.with_validator(check)
    }

    /// [`Resilient::validate`] with any [`Validator`]: a type of your own, with state (a closure
    /// is accepted too, but `validate` infers its argument's type).
    pub fn with_validator<C: Validator<T>>(self, validator: C) -> Resilient<'p, T, C> {
        #[rustfmt::skip]
        let Self { name, policy, validate: _, seed, journal, #[cfg(feature = "providers")] secret, value } = self;
        #[rustfmt::skip]
        let resilient = Resilient {
            name, policy, validate: validator, seed, journal, #[cfg(feature = "providers")] secret, value,
        };
        resilient
    }

    /// Seeds the jitter RNG so that delays replay exactly.
    pub fn with_jitter_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Keeps `key` and every piece of it (8 bytes or more in a row, percent-encoded too) out of the
    /// failure: its decisions, its Display and Debug, and its last error ([`Classify::redact`]),
    /// when a server echoes the key in an error. An empty key is no key. (Feature `providers`, on by
    /// default.)
    #[cfg(feature = "providers")]
    #[cfg_attr(docsrs, doc(cfg(feature = "providers")))]
    pub fn redacting(mut self, key: impl Into<String>) -> Self {
        self.secret = Secret::new(Some(key.into()));
        self
    }

    /// `error` as the failure shows it: without the key, when one was named.
    fn shown<E: Classify>(&self, error: E) -> E {
        #[cfg(feature = "providers")]
        if let Some(secret) = &self.secret {
            return error.redact(&|text| secret.redact(text));
        }
        error
    }

    /// `text` (an error's) as a decision shows it: without the key, when one was named.
    fn shown_text(&self, text: String) -> String {
        #[cfg(feature = "providers")]
        if let Some(secret) = &self.secret {
            if let Cow::Owned(shown) = secret.redact(&text) {
                return shown;
            }
        }
        text
    }

    /// Records the final failure (and retries, if the journal keeps them) in `journal`, as
    /// `op: "call"` records.
    pub fn with_journal(mut self, journal: &'p Journal) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Runs `operation` until it succeeds (and passes the validator) or the policy gives up. A
    /// `Resilient` can be kept and called any number of times; each call has its own attempts,
    /// deadline and failure. Nothing runs before the returned future is first polled.
    pub fn call<E, F, Fut>(&self, operation: F) -> impl Future<Output = Result<T, Failure<E>>>
    where
        E: Classify + fmt::Display,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        // The first attempt runs with nothing built around it: no retry state, no RNG, and no clock
        // reading unless the policy limits the attempt's time or the attempt does not finish on its
        // first poll. Most calls succeed at once; only a failure pays for the rest.
        Call::new(self, operation, Self::retry)
    }

    /// The attempts after a failed first one (made at `start`), until one succeeds or the policy gives
    /// up: layer 2 of `exec`, on the same decision code.
    async fn retry<E, F, Fut>(
        &self,
        mut operation: F,
        first: (Failed, Option<E>),
        start: Instant,
    ) -> Result<T, Failure<E>>
    where
        E: Classify + fmt::Display,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        // There is no session layer: the policy is applied with it off.
        let policy = &self.policy.with_session_retries(0);
        let governor = Governor::unlimited();
        let rng = Rng::with_seed(self.seed.unwrap_or_else(|| fastrand::u64(..)));
        let mut state = RetryState {
            attempt: 1,
            journal: self.journal,
            ..RetryState::new(policy, Budget::started_at(policy, start), rng, &governor)
        };
        state.budget.start_call();
        let mut schedule = Schedule::exec(policy);
        let (mut failed, mut last_error) = first;
        let mut index = 0;
        loop {
            match state.after_failed_attempt(&mut schedule, index, failed).await {
                Next::Retry => {}
                Next::Stop(kind, refusal) => return Err(self.failure(kind, state, last_error, refusal)),
            }
            index += 1;
            state.attempt = index + 1;
            state.budget.start_call();
            // The budget's clock runs (it started with the call): each limit is set now.
            let limit = match state.budget.call_limit() {
                Some(CallLimit { at: Some(at), limit, .. }) => Limit::At { at, limit },
                _ => Limit::Unbounded,
            };
            let outcome = Attempt::new(operation(), limit, policy).await;
            (failed, last_error) = match self.judge(outcome) {
                Ok(value) => return Ok(value),
                Err(failure) => failure,
            };
        }
    }

    /// The call's failure after its attempts.
    fn failure<E: Classify>(
        &self,
        kind: ExecErrorKind,
        state: RetryState<'_>,
        last_error: Option<E>,
        refusal: Option<Refusal>,
    ) -> Failure<E> {
        self.journaled(fields::Failure {
            kind,
            name: self.name.as_ref().to_owned(),
            elapsed: state.budget.elapsed(),
            calls: state.budget.calls(),
            decisions: state.decisions,
            last_error: last_error.map(|error| self.shown(error)),
            stopped_by: refusal.as_ref().map(ToString::to_string),
            refusal,
        })
    }

    /// The failure of `fields`, recorded in the journal if there is one: every failed call ends here.
    fn journaled<E>(&self, fields: fields::Failure<E>) -> Failure<E> {
        let failure = Failure::boxed(fields);
        if let Some(journal) = self.journal {
            let _ = journal.record(&failure.record());
        }
        failure
    }

    /// The value, if it passed the validator; otherwise the failed attempt as layer 2 sees it, with
    /// the operation's error.
    #[inline]
    fn judge<E: Classify + fmt::Display>(&self, outcome: Outcome<T, E>) -> Result<T, (Failed, Option<E>)> {
        match outcome {
            Outcome::Finished(Ok(value)) => match self.validate.validate(&value) {
                Ok(()) => Ok(value),
                Err(why) => Err((rejected(&why), None)),
            },
            Outcome::Finished(Err(error)) => Err((self.classified(&error), Some(error))),
            Outcome::TimedOut(limit) => Err((timed_out(limit), None)),
        }
    }

    /// An error, as its `Classify` implementation judges it, its text without the key.
    #[cold]
    fn classified<E: Classify + fmt::Display>(&self, error: &E) -> Failed {
        let class = error.classify();
        Failed::new(self.shown_text(error.to_string()), class.action, class.reason).with_hint(class.retry_after)
    }

    /// The failure for a policy that breaks a rule: a programming error, before any attempt.
    #[cold]
    fn invalid_policy<E>(&self, error: &PolicyError) -> Failure<E> {
        self.journaled(fields::Failure {
            kind: ExecErrorKind::Programming,
            name: self.name.as_ref().to_owned(),
            decisions: Vec::new(),
            last_error: None,
            calls: 0,
            elapsed: Duration::ZERO,
            stopped_by: Some(format!("invalid retry policy: {error}")),
            refusal: None,
        })
    }
}

// The failed attempts, out of line: `judge` is inlined into every call's success path.

/// A value the validator rejected for `why`.
#[cold]
fn rejected(why: &str) -> Failed {
    Failed::rejected(why, "the validator rejected the value")
}

/// An attempt cut at its time limit.
#[cold]
fn timed_out(limit: Duration) -> Failed {
    let error = format!("TimeoutError: attempt timed out after {} ms", limit.as_millis());
    Failed::new(error, ExecAction::Retry, "the attempt timed out")
}
