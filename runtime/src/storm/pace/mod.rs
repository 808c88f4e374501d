//! Pacing: keeping each scope's calls under the rate limits its server states, so that a call
//! waits for the limit before it is sent rather than after a 429 (docs/design.md §10, "Pacing").
//!
//! A server states its limits on every response ([`RateLimits`], read from the OpenAI and
//! Anthropic header families by the HTTP providers). The runtime keeps, for each scope (endpoint ×
//! key, as the cooldowns), a bucket per limit that refills continuously, and admits a call when
//! the requests and tokens it will need are there: at once, after a wait that fits the exec's
//! deadline, or not at all (a `budget`-kind refusal naming the limit and its reset). Callers are
//! admitted in arrival order: each reserves its share, and a later caller waits behind it.

mod bucket;
mod demand;
mod estimate;
mod headers;
mod limits;
mod pacer;
mod settings;

pub use bucket::{DEFAULT_WINDOW, MAX_WAIT};
pub use demand::{Demand, PaceRefused, Reserved};
pub(crate) use demand::{Pace, Paced, Place, Reservation};
pub(crate) use estimate::{answer_tokens, input_tokens};
#[cfg(feature = "providers")]
pub(crate) use headers::is_rate_limit_header;
pub use limits::{Limit, LimitKind, RateLimits};
pub(crate) use pacer::Pacer;
pub use settings::Pacing;

/// What `crate::__twins` re-exports of pacing.
pub(crate) mod twins {
    pub use super::pacer::Pacer;
}
