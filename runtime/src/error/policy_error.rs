use agentic_policy::Violation;

/// A retry policy that breaks a rule. The message names the key, quotes the value and says the fix,
/// exactly as the attribute's compile error does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PolicyError {
    /// A policy key's name, or a builder setting's (a breaker's `min_calls`).
    key: &'static str,
    message: String,
}

impl PolicyError {
    /// An invalid builder setting outside the policy's keys (`key` names it).
    pub(crate) fn new(key: &'static str, message: String) -> Self {
        Self { key, message }
    }

    /// The key to change, e.g. `"max_calls"`.
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// What is wrong and how to fix it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<Violation> for PolicyError {
    fn from(violation: Violation) -> Self {
        Self { key: violation.key.name(), message: violation.message }
    }
}
