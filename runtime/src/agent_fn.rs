//! What `#[agentic_function]` passes with each `exec`: the function's name, doc and policy.

use crate::policy::RetryPolicy;
use crate::reply::Reply;

/// A reply check: `Err(reason)` rejects the reply; the reason is fed back to the model.
pub type Validator = fn(&Reply) -> Result<(), String>;

/// An agent function as the attribute describes it. Every field is `const`-constructible.
#[derive(Debug, Clone, Copy)]
pub struct AgentFn {
    /// The function's name, for errors, logs and traces.
    pub name: Option<&'static str>,
    /// The doc comment: the system instruction when the request sets none.
    pub doc: Option<&'static str>,
    /// The policy built from the attribute's keys.
    pub policy: RetryPolicy,
    /// The `validate = path` check, adapted to return its reason as text.
    pub validate: Option<Validator>,
}

impl AgentFn {
    /// A call with `policy` and nothing else.
    pub const fn anonymous(policy: RetryPolicy) -> Self {
        Self { name: None, doc: None, policy, validate: None }
    }
}
