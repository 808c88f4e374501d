//! What an `exec` is asked: the user's text and, optionally, a system instruction.

/// The input of one `exec`. Made from a `&str` or a `String`; add a system instruction with
/// [`Prompt::with_system`] (it overrides the agent function's doc comment and the runtime's default).
///
/// # Examples
///
/// ```
/// use agentic_runtime::Prompt;
///
/// let prompt = Prompt::from("Summarize this.").with_system("Answer in one sentence.");
/// assert_eq!(prompt.system(), Some("Answer in one sentence."));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    text: String,
    system: Option<String>,
}

impl Prompt {
    /// A prompt of `text` with no system instruction of its own.
    #[inline]
    pub fn new(text: impl Into<String>) -> Self {
        Self { text: text.into(), system: None }
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
