//! One scope's pacer: a bucket per limit its server stated (or the user set), the reservations of
//! its callers in arrival order, and the reconciliation of each call's estimate with its usage.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::bucket::{Bucket, DEFAULT_WINDOW};
use super::demand::{Demand, PaceRefused, Reserved};
use super::limits::{LimitKind, RateLimits};
use super::settings::Pacing;
use crate::message::usage::{MAX_CALL_TOKENS, Usage};

/// How much of the latest answer a scope's estimate of the next one's output (without a
/// `max_tokens`) and its input calibration take: a fifth, so that one odd answer moves them little.
const RECENT_WEIGHT: f64 = 0.2;
/// The calibration's bounds: a usage that says a request's text is 10 times more or fewer tokens
/// than estimated is taken as at most that.
const CALIBRATION: (f64, f64) = (0.1, 10.0);

/// One scope's pacer (each `Governor` has one, unless pacing is off).
#[derive(Debug)]
pub struct Pacer {
    state: Mutex<State>,
    /// Set once any limit is known: until then a call asks nothing (one load on its path).
    active: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    buckets: [Option<Bucket>; 4],
    cached_reads_free: bool,
    /// The scope's recent answers: their output tokens, and their counted input over the input
    /// their request's text estimated (a tokenizer's difference, and the cached reads where free).
    recent_output: Option<f64>,
    input_ratio: Option<f64>,
}

impl Pacer {
    /// The pacer `settings` ask for, with the limits they set full from now; `None` when off.
    pub fn new(settings: &Pacing) -> Option<Self> {
        if !settings.is_on() {
            return None;
        }
        let now = Instant::now();
        let mut state = State::default();
        for kind in LimitKind::ALL {
            if let Some(per_minute) = settings.known(kind) {
                state.buckets[kind.index()] = Some(Bucket::full(per_minute, DEFAULT_WINDOW, now));
            }
        }
        let active = state.buckets.iter().any(Option::is_some);
        Some(Self { state: Mutex::new(state), active: AtomicBool::new(active) })
    }

    /// Whether any limit is known: a call is paced only then.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Takes in the limits a response received at `received` stated.
    pub fn learn(&self, limits: &RateLimits, received: Instant) {
        if limits.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut state = self.lock();
        for (kind, limit) in limits.iter() {
            match &mut state.buckets[kind.index()] {
                Some(bucket) => bucket.learn(limit, received, now),
                empty => *empty = Some(Bucket::learnt(limit, received, now)),
            }
        }
        state.cached_reads_free |= limits.cached_reads_free;
        self.active.store(true, Ordering::Release);
    }

    /// What a call of about `input` tokens (estimated from its request's text) will need: its
    /// output, as much as the scope's recent answers, at most its `max_output` (that alone before
    /// any answer); its input, calibrated by the recent answers' counted input over their estimate
    /// (which leaves out what the cache served, where cached reads are free).
    pub(crate) fn demand(&self, input: u64, max_output: Option<u64>) -> Demand {
        let state = self.lock();
        let output = match (state.recent_output, max_output) {
            (Some(recent), Some(max)) => (recent.ceil() as u64).min(max),
            (Some(recent), None) => recent.ceil() as u64,
            (None, Some(max)) => max,
            (None, None) => 0,
        };
        let estimated = input;
        let input = (input as f64 * state.input_ratio.unwrap_or(1.0)).ceil() as u64;
        Demand::new(input, output).estimated_from(estimated)
    }

    /// Reserves `demand` in every known limit, if the wait for them is shorter than `within` (the
    /// longest wait the caller would make: the time before its deadline, or its cap): the
    /// reservation, or why not (nothing reserved then, its `left` is `within`). Callers are served
    /// in the order they reserve.
    pub fn reserve(&self, demand: &Demand, within: Option<Duration>) -> Result<Reserved, PaceRefused> {
        let now = Instant::now();
        let mut state = self.lock();
        let mut longest: Option<(Duration, LimitKind)> = None;
        for kind in LimitKind::ALL {
            let Some(bucket) = &mut state.buckets[kind.index()] else { continue };
            let wait = bucket.wait_for(demand.of(kind), now);
            if !wait.is_zero() && longest.is_none_or(|(most, _)| wait > most) {
                longest = Some((wait, kind));
            }
        }
        let Some((wait, limit)) = longest else {
            state.take(demand);
            return Ok(Reserved::NOW);
        };
        let bucket = state.buckets[limit.index()].as_ref().expect("a bucket set the wait");
        let (resets_in, size) = (bucket.resets_in(now), bucket.size());
        if let Some(left) = within.filter(|within| wait >= *within) {
            return Err(PaceRefused { limit, size, wait, left, resets_in });
        }
        state.take(demand);
        Ok(Reserved { wait, limit: Some(limit), size, resets_in })
    }

    /// Reconciles a call's `demand`, reserved in this process's buckets, with what it used: the
    /// tokens it did not use go back (the cached reads too, where they are free), the ones it used
    /// beyond are taken, each within the bucket's size (`Bucket::settle`). A call without usage
    /// (it failed) gives its tokens back: a server counts the tokens of what it answered.
    pub fn settle(&self, demand: &Demand, usage: Option<&Usage>) {
        let used = self.calibrate(demand, usage);
        let mut state = self.lock();
        for kind in [LimitKind::Tokens, LimitKind::InputTokens, LimitKind::OutputTokens] {
            if let Some(bucket) = &mut state.buckets[kind.index()] {
                bucket.settle(demand.of(kind), used.of(kind));
            }
        }
    }

    /// Calibrates the estimates by what a call of `demand` used (its `usage`, when it reported
    /// one), and returns that as the limits count it; no bucket changes (a call that reserved
    /// nothing here: sent before any limit was known, or reserved in the fleet's buckets).
    pub(crate) fn calibrate(&self, demand: &Demand, usage: Option<&Usage>) -> Demand {
        let Some(usage) = usage else { return Demand::new(0, 0) };
        let mut state = self.lock();
        let input = state.counted_input(usage);
        state.remember(demand, input, usage.output_tokens);
        Demand::new(input, usage.output_tokens)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    fn take(&mut self, demand: &Demand) {
        for kind in LimitKind::ALL {
            if let Some(bucket) = &mut self.buckets[kind.index()] {
                bucket.take(demand.of(kind));
            }
        }
    }

    /// The input tokens of `usage` the limits count: without the cached reads where they are free.
    fn counted_input(&self, usage: &Usage) -> u64 {
        if self.cached_reads_free {
            usage.input_tokens.saturating_add(usage.cache_creation_input_tokens)
        } else {
            usage.input_tokens
        }
    }

    /// Remembers what a call of `demand` used, as the limits count it: `input` and `output` tokens.
    fn remember(&mut self, demand: &Demand, input: u64, output: u64) {
        // What no call can use (the usage a session reads is bounded already; a caller's may not).
        let output = output.min(MAX_CALL_TOKENS);
        remember(&mut self.recent_output, output as f64);
        if demand.estimated() > 0 && (input > 0 || output > 0) {
            let ratio = (input as f64 / demand.estimated() as f64).clamp(CALIBRATION.0, CALIBRATION.1);
            remember(&mut self.input_ratio, ratio);
        }
    }
}

/// Moves `recent` a [`RECENT_WEIGHT`] of the way to `latest` (to it, the first time).
fn remember(recent: &mut Option<f64>, latest: f64) {
    *recent = Some(match *recent {
        Some(recent) => recent + RECENT_WEIGHT * (latest - recent),
        None => latest,
    });
}
