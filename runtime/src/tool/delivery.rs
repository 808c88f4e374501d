//! How often a tool may run for one call when its process dies while it runs: a durable run's
//! question (docs/design.md §24).

/// Whether a tool call may run again after its process died while it was running, its outcome
/// unknown.
///
/// Only a durable run asks ([`agentic_runtime::exec::durable`](crate::exec::durable)): there a tool
/// call whose result was recorded is never run again, and one that was running when the process
/// died is either run again ([`Delivery::AtLeastOnce`]) or answered to the model as an unknown
/// outcome ([`Delivery::AtMostOnce`], the default). Declare it with [`Tool::delivery`] or
/// [`Toolbox::with_delivery`].
///
/// [`Tool::delivery`]: crate::tool::Tool::delivery
/// [`Toolbox::with_delivery`]: crate::tool::Toolbox::with_delivery
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Delivery {
    /// Never run twice for one call (the default): a call whose outcome is unknown after a crash
    /// is not run again, and the model is told its outcome is unknown. For a tool whose second run
    /// would act twice (a payment, a mail) and that keeps no idempotency key.
    #[default]
    AtMostOnce,
    /// May run again for one call after a crash: for a tool that only reads, or that keeps the
    /// call's idempotency key ([`ToolContext::idempotency_key`], the same after a restart) and
    /// acts once per key.
    ///
    /// [`ToolContext::idempotency_key`]: crate::tool::ToolContext::idempotency_key
    AtLeastOnce,
}

impl Delivery {
    /// `"at_most_once"` or `"at_least_once"`.
    pub const fn name(self) -> &'static str {
        match self {
            Delivery::AtMostOnce => "at_most_once",
            Delivery::AtLeastOnce => "at_least_once",
        }
    }
}
