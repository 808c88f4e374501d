//! Storm control: the state that spans execs. The retry quota, the cooldowns, the targets'
//! circuit breakers, and the stores a fleet shares them and the rate limits through.

mod breaker;
mod governor;
mod ledger;
pub mod pace;
mod quota;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
#[cfg(feature = "redis")]
mod redis_pace;
#[cfg(feature = "redis")]
mod redis_scripts;
#[cfg(all(test, feature = "redis"))]
mod redis_twins;
pub mod store;

mod refusal;
mod target;
#[cfg(test)]
pub(crate) mod test_store;

pub use breaker::{BreakerSettings, BreakerState, CallOutcome, Opened, ProbeToken, Recorded, SharedAdmission};
pub(crate) use governor::Governor;
pub(crate) use governor::Permit;
pub use quota::RetryQuota;
pub use refusal::{Bound, Refusal};
