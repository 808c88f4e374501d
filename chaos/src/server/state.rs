//! What the server shares between connections: the scenario, where it is in it, the journal and
//! the rate limit's buckets, behind one lock; and the choice, under that lock, of the step that
//! answers a model request.

use std::sync::atomic::AtomicUsize;
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use tokio::time::Instant;

use super::key::{api_key, rate_key};
use crate::context;
use crate::forced::Forced;
use crate::http::Request;
use crate::journal::{JournalEntry, StepRef};
use crate::outage;
use crate::rate_limit::report;
use crate::rate_limit::{Cost, Keys};
use crate::scenario::Scenario;
use crate::script::Scripts;
use crate::step::Step;
use crate::wire::{Asked, WireFormat};

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    /// Connections being served.
    pub(super) open: AtomicUsize,
}

#[derive(Debug)]
pub(super) struct State {
    /// When the scenario started: the server's start or its last reset. tokio's clock, so that a
    /// test on paused time can move the server through its outages.
    pub(super) started: Instant,
    pub(super) scenario: Scenario,
    /// Where the script is: one place, or one per conversation.
    pub(super) scripts: Scripts,
    pub(super) journal: Vec<JournalEntry>,
    /// The rate limit's buckets, per key.
    pub(super) rate: Keys,
}

/// What the server decided for a journaled request.
pub(super) struct Recorded {
    pub(super) seq: u64,
    /// The step that answers a model request.
    pub(super) step: Option<Step>,
    /// The rate-limit headers of its answer.
    pub(super) rate_headers: Vec<(&'static str, String)>,
    /// The tool whose arguments the answer's text is sent as, when the request forces a call.
    pub(super) answer_tool: Option<String>,
}

/// The answer to a model request, chosen under the lock.
struct Chosen {
    /// The step, as the request's tool choice makes it answer.
    forced: Forced,
    at: StepRef,
    over_window: bool,
    /// The number of the request's conversation, for a scenario scripted per conversation.
    conversation: Option<u64>,
    rate_headers: Vec<(&'static str, String)>,
}

impl Shared {
    /// The state of a server that starts serving `scenario` now.
    pub(super) fn new(scenario: Scenario) -> Self {
        Self {
            state: Mutex::new(State {
                started: Instant::now(),
                scenario,
                scripts: Scripts::default(),
                journal: Vec::new(),
                rate: Keys::default(),
            }),
            open: AtomicUsize::new(0),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep serving.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn reset(&self, scenario: Option<Scenario>) {
        let mut state = self.lock();
        if let Some(scenario) = scenario {
            state.scenario = scenario;
        }
        state.started = Instant::now();
        state.scripts = Scripts::default();
        state.journal.clear();
        state.rate = Keys::default();
    }

    /// Journal a request (`asked`: what its wire read in it) and, for a model request, take the
    /// step that answers it.
    pub(super) fn record(&self, request: &Request, wire: Option<WireFormat>, asked: &Asked<'_>) -> Recorded {
        let mut state = self.lock();
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(state.started);
        let at_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        let seq = state.journal.len() as u64;
        let context_bytes = context::context_bytes(&asked.conversation);
        let chosen = match (wire, request.method.as_str()) {
            (Some(wire), "POST") => {
                let key = rate_key(request, wire);
                Some(choose(&mut state, wire, key.as_deref(), asked, context_bytes, now))
            }
            _ => None,
        };
        let at = chosen.as_ref().map(|chosen| chosen.at);
        state.journal.push(JournalEntry {
            seq,
            at_ms,
            method: request.method.clone(),
            path: request.path.clone(),
            wire,
            stream: wire.map(|_| asked.stream),
            model: asked.model.clone(),
            step: at,
            agentic_call: request.header("x-agentic-call").map(str::to_owned),
            auth: api_key(request, wire).is_some(),
            tools: asked.tools.clone(),
            schema: asked.schema.clone(),
            max_tokens: asked.max_tokens,
            messages: asked.conversation.messages,
            context_bytes,
            over_window: chosen.as_ref().is_some_and(|chosen| chosen.over_window),
            outage: at.is_some_and(|at| at.is_outage()),
            rate_limited: at.is_some_and(|at| at.is_rate_limited()),
            conversation: chosen.as_ref().and_then(|chosen| chosen.conversation),
            forced_tool: chosen.as_ref().and_then(|chosen| chosen.forced.changed_to.clone()),
        });
        match chosen {
            Some(Chosen { forced, rate_headers, .. }) => {
                Recorded { seq, step: Some(forced.step), rate_headers, answer_tool: forced.answer_tool }
            }
            None => Recorded { seq, step: None, rate_headers: Vec::new(), answer_tool: None },
        }
    }
}

/// The answer to a model request arriving `now`: an outage's step (a server that is down answers
/// before it reads or counts the request), else the rate limit's 429 when the request does not fit
/// its key's buckets, else the context window's overflow answer, else the next step (of the
/// request's conversation, for a scenario scripted per conversation). Only a
/// request the rate limit admits takes a step, and only one that reaches the rate limit is
/// charged; every one gets the rate-limit headers of the key's buckets, after its charge.
fn choose(
    state: &mut State,
    wire: WireFormat,
    key: Option<&str>,
    asked: &Asked<'_>,
    bytes: usize,
    now: Instant,
) -> Chosen {
    let State { scenario, scripts, rate, started, .. } = state;
    let conversation = scenario.per_conversation.then(|| asked.conversation.key());
    let (cursor, number) = scripts.enter(conversation);
    let limit = scenario.rate_limit;
    let mut levels = Vec::new();
    let mut charge = |cost| match &limit {
        Some(limit) => {
            let (verdict, after) = rate.charge(limit, key, now, cost);
            levels = after;
            verdict
        }
        None => Ok(()),
    };
    let forced = |step| asked.tool_choice.apply(step, &asked.tools);
    let (forced, at, over_window) = match outage::answer(&scenario.outages, now.saturating_duration_since(*started)) {
        Some((step, at)) => {
            let _ = charge(None);
            (forced(step), at, false)
        }
        None => {
            let fits = scenario.fits(bytes);
            let mut next = cursor;
            let (step, at) = if fits { next.next(scenario) } else { context::overflow_answer() };
            let step = forced(step);
            match charge(Some(Cost::of(&step.step, &asked.conversation))) {
                Err(refusal) => {
                    let (step, at) = refusal.step(wire.rate_limit_headers());
                    (Forced { step, answer_tool: None, changed_to: None }, at, false)
                }
                Ok(()) => {
                    scripts.advance(conversation, next);
                    (step, at, !fits)
                }
            }
        }
    };
    let rate_headers = report::headers(wire.rate_limit_headers(), &levels, SystemTime::now());
    Chosen { forced, at, over_window, conversation: number, rate_headers }
}
