//! What `#[agentic_function]` passes with each `exec`: the function's name, doc and policy.

use std::fmt;

use crate::answer::reply::Reply;
use crate::compact::Compactor;
use crate::policy::RetryPolicy;
use crate::spend::UsageLimits;
use crate::tool::Toolbox;

/// A reply check: `Err(reason)` rejects the reply; the reason is fed back to the model.
pub type ReplyCheck = fn(&Reply) -> Result<(), String>;

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
    pub validate: Option<ReplyCheck>,
    /// The `compact = PATH` compactor, used instead of the runtime's on a context overflow.
    pub compact: Option<&'static dyn Compactor>,
    /// The `tools = PATH` toolbox, offered instead of the runtime's: a function that gives it
    /// (the attribute wraps the `static` or function it names in one, through [`ToolsOf`]),
    /// called once per exec; `None` from it is an unset `OnceLock`.
    pub tools: Option<fn() -> Option<Toolbox>>,
    /// The spend limits built from the attribute's keys (`max_total_tokens = ..`); none set: the
    /// runtime's ([`RuntimeBuilder::with_usage_limits`](crate::exec::RuntimeBuilder::with_usage_limits)).
    pub limits: UsageLimits,
}

impl fmt::Debug for AgentFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentFn")
            .field("name", &self.name)
            .field("doc", &self.doc)
            .field("policy", &self.policy)
            .field("validate", &self.validate.is_some())
            .field("compact", &self.compact.map(Compactor::name))
            .field("tools", &self.tools.is_some())
            .field("limits", &self.limits)
            .finish()
    }
}

impl AgentFn {
    /// A call with `policy` and nothing else.
    pub const fn anonymous(policy: RetryPolicy) -> Self {
        Self { name: None, doc: None, policy, validate: None, compact: None, tools: None, limits: UsageLimits::NONE }
    }
}

/// What `tools = PATH` may name: a `static` `Toolbox` holder or a function that gives one. The
/// attribute calls [`ToolsOf::toolbox`] at every exec of the function.
#[diagnostic::on_unimplemented(
    message = "`tools = ...` names a `{Self}`, which is not a toolbox",
    label = "not a `Toolbox`",
    note = "name a `static` `LazyLock<Toolbox>` or `OnceLock<Toolbox>`, or a function `fn() -> Toolbox`"
)]
pub trait ToolsOf {
    /// The toolbox now (a cheap clone), or `None` when a `OnceLock` is not set yet.
    fn toolbox(&self) -> Option<Toolbox>;
}

impl ToolsOf for Toolbox {
    fn toolbox(&self) -> Option<Toolbox> {
        Some(self.clone())
    }
}

impl<F: Fn() -> Toolbox> ToolsOf for F {
    fn toolbox(&self) -> Option<Toolbox> {
        Some(self())
    }
}

impl<I: FnOnce() -> Toolbox> ToolsOf for std::sync::LazyLock<Toolbox, I> {
    fn toolbox(&self) -> Option<Toolbox> {
        Some(Toolbox::clone(self))
    }
}

impl ToolsOf for std::sync::OnceLock<Toolbox> {
    fn toolbox(&self) -> Option<Toolbox> {
        self.get().cloned()
    }
}
