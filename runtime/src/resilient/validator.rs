//! The value check of a resilient call: a success that is not one ("success that isn't",
//! docs/design.md §16) is a retryable failure.

/// Checks a resilient call's value: `Err(reason)` rejects it, and the attempt counts as a
/// retryable failure. Implemented for every `Fn(&T) -> Result<(), String>`, and for
/// [`NoValidator`], which accepts every value.
pub trait Validator<T> {
    /// Whether this checks anything: `false` only for [`NoValidator`], whose calls skip the check.
    const CHECKS: bool = true;

    /// `Ok(())` if `value` is acceptable, otherwise why not.
    fn validate(&self, value: &T) -> Result<(), String>;
}

impl<T, F: Fn(&T) -> Result<(), String>> Validator<T> for F {
    fn validate(&self, value: &T) -> Result<(), String> {
        self(value)
    }
}

/// No check: every value is accepted. The default of [`Resilient`](super::Resilient).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoValidator;

impl<T> Validator<T> for NoValidator {
    const CHECKS: bool = false;

    #[inline]
    fn validate(&self, _value: &T) -> Result<(), String> {
        Ok(())
    }
}
