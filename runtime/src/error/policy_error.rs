use agentic_policy::{Key, Violation};

/// A retry policy that breaks a rule. The message names the key, quotes the value and says the fix,
/// exactly as the attribute's compile error does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PolicyError {
    key: Key,
    message: String,
}

impl PolicyError {
    /// The key to change, e.g. `"max_calls"`.
    pub fn key(&self) -> &'static str {
        self.key.name()
    }

    /// What is wrong and how to fix it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<Violation> for PolicyError {
    fn from(violation: Violation) -> Self {
        Self { key: violation.key, message: violation.message }
    }
}
