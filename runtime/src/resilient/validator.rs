//! The value check of a resilient call: a success that is not one ("success that isn't",
//! docs/design.md §16) is a retryable failure.

/// Checks a resilient call's value: `Err(reason)` rejects it, and the attempt counts as a
/// retryable failure. Implemented for every `Fn(&T) -> Result<(), String>`, and for
/// [`NoValidator`], which accepts every value.
///
/// # Examples
///
/// A check with state of its own, given to
/// [`Resilient::with_validator`](super::Resilient::with_validator):
///
/// ```
/// use agentic_runtime::RetryPolicy;
/// use agentic_runtime::resilient::{Resilient, Validator};
///
/// struct AtLeast(usize);
///
/// impl Validator<Vec<u32>> for AtLeast {
///     fn validate(&self, rows: &Vec<u32>) -> Result<(), String> {
///         if rows.len() >= self.0 { Ok(()) } else { Err(format!("{} rows, expected {}", rows.len(), self.0)) }
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let policy = RetryPolicy::new();
/// let mut pages = vec![vec![1], vec![1, 2, 3]].into_iter();
/// let rows = Resilient::new("rows", &policy)
///     .with_validator(AtLeast(3))
///     .call(|| {
///         let page = pages.next().unwrap_or_default();
///         async move { Ok::<_, std::io::Error>(page) }
///     })
///     .await
///     .unwrap();
/// assert_eq!(rows, [1, 2, 3]);
/// # }
/// ```
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
