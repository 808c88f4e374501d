//! [`SpendAccount`]: what every exec of a runtime (and, through a shared store, of a fleet) may
//! spend together over a window, and [`AccountBook`], the rules of its reservations, kept in the
//! process or in the store (docs/design.md §23, "A shared account").

use std::sync::Mutex;
use std::time::Duration;

use agentic_policy::limits::{LimitKey, count_violation, limit_violation};
use tokio::time::Instant;

use crate::error::PolicyError;

/// At most this many times what a call reserved is settled, whatever the server reported (the
/// pacer bounds a reported usage by its bucket's size the same way): one lying answer costs an
/// account four calls' worth at most. A call's output is bounded by the `max_tokens` it is sent,
/// so only the input estimate (about four bytes a token) can be short, and not by 4×.
pub const MAX_SETTLE_FACTOR: u64 = 4;

/// The output a call reserves when nothing else bounds it, unless
/// [`SpendAccount::with_call_output_tokens`] sets another: 4 096 tokens.
pub const DEFAULT_CALL_OUTPUT_TOKENS: u64 = 4_096;

/// A spend limit shared by every exec of a runtime over a window: total tokens and/or dollars
/// per hour, per day or per any [`Duration`]. With a shared store
/// ([`RuntimeBuilder::with_shared_store`](crate::exec::RuntimeBuilder::with_shared_store)), every
/// process that names the same account shares it: a fleet cannot spend more than it between them.
///
/// Every model call reserves its worst case against the account before it is sent (its input
/// estimate and the output it is allowed, at its target's price under a dollar limit) and settles
/// to its usage after; a call that cannot fit is not sent, and its exec stops with kind
/// `usage_limit`. The output a call is allowed is the smallest of what the exec's own limits
/// leave, the provider's `max_output_tokens` and [`with_call_output_tokens`](Self::with_call_output_tokens),
/// and the call is sent that `max_tokens`.
///
/// Set it with [`RuntimeBuilder::with_spend_account`](crate::exec::RuntimeBuilder::with_spend_account).
///
/// # Examples
///
/// ```
/// use agentic_runtime::spend::SpendAccount;
///
/// const DAILY: SpendAccount = SpendAccount::per_day().with_max_total_tokens(5_000_000).with_max_cost_usd(20.0);
/// assert!(DAILY.validate().is_ok());
/// assert_eq!(SpendAccount::per_hour().validate().unwrap_err().key(), "with_spend_account");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SpendAccount {
    name: std::borrow::Cow<'static, str>,
    window: Duration,
    max_total_tokens: Option<u64>,
    max_cost_usd: Option<f64>,
    call_output_tokens: u64,
}

impl SpendAccount {
    /// An account over windows of `window`; add its limits with the `with_*` methods.
    pub const fn over(window: Duration) -> Self {
        Self {
            name: std::borrow::Cow::Borrowed("default"),
            window,
            max_total_tokens: None,
            max_cost_usd: None,
            call_output_tokens: DEFAULT_CALL_OUTPUT_TOKENS,
        }
    }

    /// An account over windows of an hour.
    pub const fn per_hour() -> Self {
        Self::over(Duration::from_secs(60 * 60))
    }

    /// An account over windows of a day (in a fleet, days of the store's clock: UTC).
    pub const fn per_day() -> Self {
        Self::over(Duration::from_secs(24 * 60 * 60))
    }

    /// At most `tokens` input and output tokens together in each window.
    pub const fn with_max_total_tokens(mut self, tokens: u64) -> Self {
        self.max_total_tokens = Some(tokens);
        self
    }

    /// At most `usd` US dollars in each window, at the runtime's prices
    /// ([`RuntimeBuilder::with_prices`](crate::exec::RuntimeBuilder::with_prices)): a target
    /// without a price is an error of `build()`.
    pub const fn with_max_cost_usd(mut self, usd: f64) -> Self {
        self.max_cost_usd = Some(usd);
        self
    }

    /// The most output tokens a call reserves (and is sent as `max_tokens`) when neither the
    /// exec's limits nor the provider bound it lower.
    ///
    /// # Default
    /// [`DEFAULT_CALL_OUTPUT_TOKENS`] (4 096)
    pub const fn with_call_output_tokens(mut self, tokens: u64) -> Self {
        self.call_output_tokens = tokens;
        self
    }

    /// Names the account in a shared store: processes that name the same account (under the same
    /// store prefix) share it; others are apart.
    ///
    /// # Default
    /// `"default"`
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = std::borrow::Cow::Owned(name.into());
        self
    }

    /// The account's name in a shared store.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The window its limits count over.
    pub const fn window(&self) -> Duration {
        self.window
    }

    /// Its token limit per window, if set.
    pub const fn max_total_tokens(&self) -> Option<u64> {
        self.max_total_tokens
    }

    /// Its dollar limit per window, if set.
    pub const fn max_cost_usd(&self) -> Option<f64> {
        self.max_cost_usd
    }

    /// The most output tokens a call reserves when nothing bounds it lower.
    pub const fn call_output_tokens(&self) -> u64 {
        self.call_output_tokens
    }

    /// The limits in the unit a book counts (tokens, millionths of a dollar).
    pub fn limits(&self) -> Amounts {
        Amounts {
            tokens: self.max_total_tokens.unwrap_or(u64::MAX),
            micro_usd: self.max_cost_usd.map_or(u64::MAX, |usd| (usd * 1e6).round() as u64),
        }
    }

    /// The window in whole milliseconds (at least 1).
    pub fn window_ms(&self) -> u64 {
        u64::try_from(self.window.as_millis()).unwrap_or(u64::MAX).max(1)
    }

    /// Whether it can be used: a limit at least, each valid as `UsageLimits`' are, a window of a
    /// second at least, a name, and a call output of a token at least.
    pub fn validate(&self) -> Result<(), PolicyError> {
        let error = |message: String| Err(PolicyError::new("with_spend_account", message));
        if self.max_total_tokens.is_none() && self.max_cost_usd.is_none() {
            return error(
                "a spend account limits nothing: set `with_max_total_tokens` or `with_max_cost_usd`".to_owned(),
            );
        }
        if self.window < Duration::from_secs(1) {
            return error(format!("the window ({:?}) must be a second at least", self.window));
        }
        if self.name.is_empty() || self.name.len() > 200 {
            return error("the account's name must have 1 to 200 bytes".to_owned());
        }
        if self.call_output_tokens == 0 {
            return error("`with_call_output_tokens` must be 1 at least: a call needs an output token".to_owned());
        }
        let tokens = self.max_total_tokens.and_then(|n| count_violation(LimitKey::MaxTotalTokens, &n.to_string()));
        let usd = self.max_cost_usd.and_then(|usd| limit_violation(LimitKey::MaxCostUsd, usd));
        match tokens.or(usd) {
            Some(message) => error(message),
            None => Ok(()),
        }
    }
}

/// What a call reserves or used of an account: tokens and millionths of a dollar (whole numbers,
/// so a store's script counts them exactly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Amounts {
    /// Input and output tokens.
    pub tokens: u64,
    /// Millionths of a US dollar.
    pub micro_usd: u64,
}

/// Where a reservation was made, for its settle: the window it counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The window's number: its start in ms on the book's clock, divided by the window.
    pub window: u64,
    /// What was reserved.
    pub reserved: Amounts,
}

/// Why an account refused a reservation (nothing was reserved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountRefused {
    /// The limit that would be passed: `max_total_tokens` or `max_cost_usd`.
    pub limit: LimitKey,
    /// Its setting (tokens, or millionths of a dollar).
    pub max: u64,
    /// Spent in the window, and held by calls in flight.
    pub used: u64,
    /// What the call needed.
    pub needed: u64,
    /// When the window ends.
    pub resets_in: Duration,
}

/// One window's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Window {
    index: u64,
    used: Amounts,
    reserved: Amounts,
}

/// An account's reservations and spend in its current and previous windows, by the rules the
/// fleet's script (`agentic-redis`) runs too: a reservation that fits (`used + reserved + needed`
/// within the limit, tokens and dollars) is added to the window's reserved; a settle moves it to
/// used, at most [`MAX_SETTLE_FACTOR`] times what was reserved. A window is forgotten once the
/// next one ends, so a reservation that never settles (its process died) holds its room until
/// its window ends, no longer. A settle of a forgotten window changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountBook {
    /// The current window and the one before, newest first (at most two).
    windows: Vec<Window>,
}

impl AccountBook {
    /// An empty book.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every window older than the one before `index`'s.
    fn prune(&mut self, index: u64) {
        self.windows.retain(|window| window.index <= index && window.index + 1 >= index);
    }

    fn window(&mut self, index: u64) -> Option<&mut Window> {
        self.windows.iter_mut().find(|window| window.index == index)
    }

    /// Reserves `needed` at `now_ms` on windows of `window_ms` under `limits`: where it was held,
    /// or why not (nothing reserved then).
    pub fn reserve(
        &mut self,
        now_ms: u64,
        window_ms: u64,
        limits: Amounts,
        needed: Amounts,
    ) -> Result<Held, AccountRefused> {
        let index = now_ms / window_ms;
        self.prune(index);
        if self.window(index).is_none() {
            self.windows.insert(0, Window { index, ..Window::default() });
        }
        let resets_in = Duration::from_millis((index + 1).saturating_mul(window_ms).saturating_sub(now_ms));
        let window = self.window(index).expect("inserted");
        let checks = [
            (LimitKey::MaxTotalTokens, limits.tokens, window.used.tokens, window.reserved.tokens, needed.tokens),
            (
                LimitKey::MaxCostUsd,
                limits.micro_usd,
                window.used.micro_usd,
                window.reserved.micro_usd,
                needed.micro_usd,
            ),
        ];
        for (limit, max, used, reserved, needed) in checks {
            let used = used.saturating_add(reserved);
            if max != u64::MAX && used.saturating_add(needed) > max {
                return Err(AccountRefused { limit, max, used, needed, resets_in });
            }
        }
        window.reserved.tokens = window.reserved.tokens.saturating_add(needed.tokens);
        window.reserved.micro_usd = window.reserved.micro_usd.saturating_add(needed.micro_usd);
        Ok(Held { window: index, reserved: needed })
    }

    /// Settles `held` at `now_ms` to `used`: its reservation leaves the window, and what was used
    /// (at most [`MAX_SETTLE_FACTOR`] times the reservation) counts in it.
    pub fn settle(&mut self, now_ms: u64, window_ms: u64, held: Held, used: Amounts) {
        self.prune(now_ms / window_ms);
        let Some(window) = self.window(held.window) else { return };
        let bounded = settled(held.reserved, used);
        window.reserved.tokens = window.reserved.tokens.saturating_sub(held.reserved.tokens);
        window.reserved.micro_usd = window.reserved.micro_usd.saturating_sub(held.reserved.micro_usd);
        window.used.tokens = window.used.tokens.saturating_add(bounded.tokens);
        window.used.micro_usd = window.used.micro_usd.saturating_add(bounded.micro_usd);
    }

    /// Spent and held in the window `index`, if it is kept: (used, reserved).
    pub fn counts(&self, index: u64) -> Option<(Amounts, Amounts)> {
        self.windows.iter().find(|window| window.index == index).map(|window| (window.used, window.reserved))
    }
}

/// `used`, at most [`MAX_SETTLE_FACTOR`] times `reserved` in each unit.
pub fn settled(reserved: Amounts, used: Amounts) -> Amounts {
    Amounts {
        tokens: used.tokens.min(reserved.tokens.saturating_mul(MAX_SETTLE_FACTOR)),
        micro_usd: used.micro_usd.min(reserved.micro_usd.saturating_mul(MAX_SETTLE_FACTOR)),
    }
}

/// A runtime's account: its settings, and the book of this process (the account itself without a
/// shared store, the fallback while the store does not answer), on the runtime's clock from when
/// it was built.
#[derive(Debug)]
pub(crate) struct Account {
    pub(crate) settings: SpendAccount,
    origin: Instant,
    book: Mutex<AccountBook>,
}

impl Account {
    pub(crate) fn new(settings: SpendAccount) -> Self {
        Self { settings, origin: Instant::now(), book: Mutex::new(AccountBook::new()) }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Reserves `needed` in this process's book.
    pub(crate) fn reserve_local(&self, needed: Amounts) -> Result<Held, AccountRefused> {
        let (now, window_ms, limits) = (self.now_ms(), self.settings.window_ms(), self.settings.limits());
        lock(&self.book).reserve(now, window_ms, limits, needed)
    }

    /// Settles a reservation of this process's book.
    pub(crate) fn settle_local(&self, held: Held, used: Amounts) {
        let (now, window_ms) = (self.now_ms(), self.settings.window_ms());
        lock(&self.book).settle(now, window_ms, held, used);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Millionths of a dollar, rounded up: a reservation or a spend is never counted short.
pub(crate) fn micro_usd(usd: f64) -> u64 {
    if usd.is_nan() { u64::MAX } else { (usd * 1e6).ceil().clamp(0.0, u64::MAX as f64) as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKENS: Amounts = Amounts { tokens: 1_000, micro_usd: u64::MAX };

    fn tokens(tokens: u64) -> Amounts {
        Amounts { tokens, micro_usd: 0 }
    }

    #[test]
    fn reservations_hold_room_until_settled() {
        let mut book = AccountBook::new();
        let first = book.reserve(0, 60_000, TOKENS, tokens(600)).unwrap();
        let refused = book.reserve(10, 60_000, TOKENS, tokens(500)).unwrap_err();
        assert_eq!((refused.used, refused.needed, refused.resets_in), (600, 500, Duration::from_millis(59_990)));
        book.settle(20, 60_000, first, tokens(100));
        assert!(book.reserve(30, 60_000, TOKENS, tokens(900)).is_ok(), "100 used, 900 fit");
        assert_eq!(book.counts(0), Some((tokens(100), tokens(900))));
    }

    #[test]
    fn a_settle_counts_at_most_four_times_the_reservation_and_a_lost_one_ends_with_its_window() {
        let mut book = AccountBook::new();
        let held = book.reserve(0, 1_000, TOKENS, tokens(100)).unwrap();
        book.settle(1, 1_000, held, tokens(u64::MAX));
        assert_eq!(book.counts(0), Some((tokens(400), tokens(0))));
        // Lost: never settled; the next window has the whole room.
        book.reserve(2, 1_000, TOKENS, tokens(600)).unwrap();
        assert!(book.reserve(3, 1_000, TOKENS, tokens(1)).is_err());
        assert!(book.reserve(1_000, 1_000, TOKENS, tokens(1_000)).is_ok());
        // Two windows on, the first is forgotten, and its settle changes nothing.
        book.settle(2_000, 1_000, held, tokens(5));
        assert_eq!(book.counts(0), None);
    }

    #[test]
    fn an_account_without_a_limit_or_a_window_is_refused() {
        assert!(SpendAccount::per_day().with_max_cost_usd(1.0).validate().is_ok());
        assert!(SpendAccount::per_day().validate().is_err());
        assert!(SpendAccount::over(Duration::from_millis(10)).with_max_total_tokens(1).validate().is_err());
        assert!(SpendAccount::per_day().with_max_total_tokens(0).validate().is_err());
        assert!(SpendAccount::per_day().with_max_cost_usd(-1.0).validate().is_err());
    }
}
