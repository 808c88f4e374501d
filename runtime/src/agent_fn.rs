//! What `#[agentic_function]` passes with each `exec`: the function's name, doc and policy.

use std::fmt;

use crate::compact::Compactor;
use crate::policy::RetryPolicy;
use crate::reply::Reply;

/// A reply check: `Err(reason)` rejects the reply; the reason is fed back to the model.
pub type Validator = fn(&Reply) -> Result<(), String>;

/// An agent function as the attribute describes it. Every field is `const`-constructible.
#[derive(Clone, Copy)]
pub struct AgentFn {
    /// The function's name, for errors, logs and traces.
    pub name: Option<&'static str>,
    /// The doc comment: the system instruction when the request sets none.
    pub doc: Option<&'static str>,
    /// The policy built from the attribute's keys.
    pub policy: RetryPolicy,
    /// The `validate = path` check, adapted to return its reason as text.
    pub validate: Option<Validator>,
    /// The `compact = PATH` compactor, used instead of the runtime's on a context overflow.
    pub compact: Option<&'static dyn Compactor>,
}

impl fmt::Debug for AgentFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentFn")
            .field("name", &self.name)
            .field("doc", &self.doc)
            .field("policy", &self.policy)
            .field("validate", &self.validate.is_some())
            .field("compact", &self.compact.map(Compactor::name))
            .finish()
    }
}

impl AgentFn {
    /// A call with `policy` and nothing else.
    pub const fn anonymous(policy: RetryPolicy) -> Self {
        Self { name: None, doc: None, policy, validate: None, compact: None }
    }
}
