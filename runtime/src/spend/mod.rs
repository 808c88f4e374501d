//! Spend limits: what one exec may spend in tokens, tool calls and dollars ([`UsageLimits`]), and
//! what it spent against them ([`Spent`]). A call is checked before it is sent, against its worst
//! case, never after (docs/design.md §23).

pub(crate) mod ledger;
mod limits;
mod spent;

pub use limits::UsageLimits;
pub use spent::Spent;

/// A spend limit's key (`max_total_tokens`, `max_cost_usd`, ...), as the attribute, the builder
/// and the CLI name it.
pub use agentic_policy::limits::LimitKey as Limit;
