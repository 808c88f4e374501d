//! What an `exec` is asked: the user's text and, optionally, a system instruction.

use crate::exec::agent_fn::AgentFn;

/// The input of one `exec`. Made from a `&str` or a `String`; add a system instruction with
/// [`Prompt::with_system`] (it overrides the agent function's doc comment and the runtime's default).
///
/// # Examples
///
/// ```
/// use agentic_runtime::exec::Prompt;
///
/// let prompt = Prompt::from("Summarize this.").with_system("Answer in one sentence.");
/// assert_eq!(prompt.system(), Some("Answer in one sentence."));
/// ```
#[derive(Debug, Clone)]
pub struct Prompt {
    text: String,
    system: Option<String>,
    /// The agent function a typed exec runs as, when `#[agentic_function]` rewrote the call
    /// (boxed: most prompts have none, and a prompt is part of every exec's future).
    function: Option<Box<AgentFn>>,
}

/// Two prompts are equal when they ask the same: the agent function the attribute attached is how
/// they are run, not what they ask.
impl PartialEq for Prompt {
    fn eq(&self, other: &Self) -> bool {
        (&self.text, &self.system) == (&other.text, &other.system)
    }
}

impl Eq for Prompt {}

impl Prompt {
    /// A prompt of `text` with no system instruction of its own.
    #[inline]
    pub fn new(text: impl Into<String>) -> Self {
        Self { text: text.into(), system: None, function: None }
    }

    /// Sets the system instruction of this request.
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// The user's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The request's own system instruction.
    pub fn system(&self) -> Option<&str> {
        self.system.as_deref()
    }

    /// What `#[agentic_function]` wraps the prompt of `runtime.exec_json(..)` in: the call stays
    /// the public method, and the exec runs as the function (its name, doc, policy and checks).
    #[doc(hidden)]
    pub fn __agentic_in(mut self, function: AgentFn) -> Self {
        self.function = Some(Box::new(function));
        self
    }

    /// The agent function the attribute attached, taken out (still boxed: an exec's future keeps
    /// it, and a box is one word of it).
    pub(crate) fn take_function(&mut self) -> Option<Box<AgentFn>> {
        self.function.take()
    }

    /// The name of the agent function the attribute attached, if any.
    pub(crate) fn function_name(&self) -> Option<&'static str> {
        self.function.as_ref().and_then(|function| function.name)
    }

    #[inline]
    pub(crate) fn into_parts(self) -> (String, Option<String>) {
        (self.text, self.system)
    }
}

impl From<&str> for Prompt {
    #[inline]
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl From<String> for Prompt {
    #[inline]
    fn from(text: String) -> Self {
        Self::new(text)
    }
}

impl From<&String> for Prompt {
    #[inline]
    fn from(text: &String) -> Self {
        Self::new(text.as_str())
    }
}
