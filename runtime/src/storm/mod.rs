//! Storm control: the state that spans execs. The retry quota, the cooldowns, the targets'
//! circuit breakers, and the stores a fleet shares them and the rate limits through.

pub(crate) mod account;
mod breaker;
mod governor;
mod ledger;
pub mod pace;
mod quota;
pub mod store;

#[cfg(test)]
mod metric_events;
mod refusal;
mod target;
#[cfg(test)]
pub(crate) mod test_store;

pub use breaker::{BreakerSettings, BreakerState, CallOutcome, Opened, ProbeToken, Recorded, SharedAdmission};
pub(crate) use governor::Governor;
pub use governor::MAX_COOLDOWN;
pub(crate) use governor::Permit;
pub use ledger::WINDOW_SLOTS;
pub use quota::RetryQuota;
pub use refusal::{AccountWindow, Bound, Refusal};

/// What `crate::__twins` re-exports: the state machines a fleet store's scripts are written after.
pub(crate) mod twins {
    pub use super::breaker::{Admission, Breaker};
    pub use super::ledger::Ledger;
    pub use super::pace::twins::Pacer;
}
