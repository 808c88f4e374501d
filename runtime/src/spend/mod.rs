//! Spend limits: what one exec may spend in tokens, tool calls and dollars ([`UsageLimits`]) at the
//! user's [`Prices`], and what it spent against them ([`Spent`]). A call is checked before it is
//! sent, against its worst case, never after (docs/design.md §23).

pub(crate) mod ledger;
mod limits;
mod prices;

pub use crate::message::usage::Spent;
pub use crate::storm::account::{
    AccountBook, AccountRefused, Amounts, DEFAULT_CALL_OUTPUT_TOKENS, Held, MAX_SETTLE_FACTOR, SpendAccount, settled,
};
pub use limits::UsageLimits;
pub use prices::{MAX_PRICES_FILE_BYTES, MAX_USD_PER_MILLION, Price, Prices, PricesError};

/// A spend limit's key (`max_total_tokens`, `max_cost_usd`, ...), as the attribute, the builder
/// and the CLI name it.
pub use agentic_policy::limits::LimitKey as Limit;
