//! What one call needs of each limit, and what a reservation of it came to.

use std::fmt;
use std::time::Duration;

use super::limits::LimitKind;
use crate::policy::rules::{format_ms, millis};

/// What one model call needs of each limit: one request, and the tokens estimated for it (the
/// input from the request's text, the output from its `max_tokens` or the scope's recent answers).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Demand {
    amounts: [u64; 4],
    /// The input as the request's text estimated it, before the scope's calibration: what the
    /// answer's usage calibrates the next estimates by.
    estimated: u64,
}

impl Demand {
    /// One request of `input` and `output` tokens (estimated).
    pub const fn new(input: u64, output: u64) -> Self {
        Self { amounts: [1, input.saturating_add(output), input, output], estimated: input }
    }

    /// The same demand, its input estimated at `estimated` from the request's text before the
    /// scope's calibration.
    pub(crate) const fn estimated_from(mut self, estimated: u64) -> Self {
        self.estimated = estimated;
        self
    }

    /// The input as the request's text estimated it, before the scope's calibration.
    pub(crate) const fn estimated(&self) -> u64 {
        self.estimated
    }

    /// What the call needs of `kind`.
    pub const fn of(&self, kind: LimitKind) -> u64 {
        self.amounts[kind.index()]
    }
}

/// What a call had of the pacer: the demand it reserved, or, for a call sent without a
/// reservation (before any limit was known, or past a wait it did not make), what it would have
/// needed (it calibrates the estimates, and gives nothing back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paced {
    /// The call reserved this.
    Reserved(Reservation),
    /// The call was not paced; this is its estimate.
    Unpaced(Demand),
}

/// Where a reservation was taken: the buckets its settle goes back to.
///
/// A call reserves in the fleet's buckets (a shared store) or, when the store did not answer, in
/// this process's; its settle must go to the same ones, whatever the store does meanwhile: the
/// fleet never lent what a process took while it was offline, and the process's buckets never
/// lent what the fleet did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// This process's buckets.
    Local,
    /// The shared store's.
    Shared,
}

/// A demand taken from a scope's buckets, and where: what a call settles after its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reservation {
    /// What was taken.
    pub(crate) demand: Demand,
    /// Where.
    pub(crate) place: Place,
}

/// A reservation the pacer granted: wait `wait`, then send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserved {
    /// How long the call waits before it is sent (zero: at once).
    pub wait: Duration,
    /// The limit that sets the wait (`None` when it is zero).
    pub limit: Option<LimitKind>,
    /// That limit's size (0 when there is none).
    pub size: u64,
    /// How long after now that limit is full again, as the server last said.
    pub resets_in: Option<Duration>,
}

impl Reserved {
    /// Sent at once.
    pub const NOW: Reserved = Reserved { wait: Duration::ZERO, limit: None, size: 0, resets_in: None };
}

/// What the pacer made of a call about to be sent (`Governor::pace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pace {
    /// Reserved: the call waits `.0.wait`, then goes, and settles `.1` after its answer.
    Reserved(Reserved, Reservation),
    /// Nothing reserved, the call goes at once: no limit of the scope is known.
    Unknown,
    /// Nothing reserved, the call goes at once: the wait its limits imply (`wait`, for `limit`)
    /// is longer than `retry_after_cap_ms` (`cap`), which no server's statement makes a call wait.
    OverCap {
        /// The wait the limits imply.
        wait: Duration,
        /// The limit that sets it.
        limit: LimitKind,
        /// `retry_after_cap_ms`.
        cap: Duration,
    },
}

/// A call the pacer did not admit: the wait for `limit` does not fit in the time `left` before the
/// exec's deadline. Nothing was reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaceRefused {
    /// The limit the call would wait for.
    pub limit: LimitKind,
    /// That limit's size, as the server stated it (or as set, `Pacing::with_requests_per_minute`).
    pub size: u64,
    /// The wait it would take.
    pub wait: Duration,
    /// The time left before the deadline.
    pub left: Duration,
    /// How long after now the limit is full again, when the server said.
    pub resets_in: Option<Duration>,
}

impl fmt::Display for PaceRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} rate limit ({}) is used up: the wait of {} for it does not fit in the {} left",
            self.limit,
            self.size,
            format_ms(millis(self.wait)),
            format_ms(millis(self.left))
        )?;
        if let Some(reset) = self.resets_in {
            write!(f, "; it is full again in {}", format_ms(millis(reset)))?;
        }
        Ok(())
    }
}
