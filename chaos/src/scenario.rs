//! A scenario: the ordered steps, their repeat counts, and the step that answers after them. Its
//! JSON form (`from_json_str`, `load`, `to_json`) is in `spec`, which knows files; this module does not.

use crate::journal::StepRef;
use crate::step::{Reply, Step};

/// What the server answers, request by request.
///
/// Each request to a model endpoint consumes the next step: a step with `times: n` answers `n`
/// requests in a row, and once all steps are used, the default step answers every further request.
/// The default default is an `ok` step with [`DEFAULT_TEXT`](crate::DEFAULT_TEXT).
///
/// Build it in Rust or [load it from JSON](Scenario::from_json_str) (format in the
/// [crate docs](crate#scenario-files)).
///
/// # Examples
///
/// ```
/// use agentic_chaos::{Scenario, Step};
///
/// let scenario = Scenario::new()
///     .then(Step::http_error(429).retry_after_secs(2))
///     .then_times(2, Step::drop_stream(3))
///     .otherwise(Step::ok("fine"));
/// assert_eq!(scenario.scripted_requests(), 3);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub(crate) steps: Vec<(Step, u32)>,
    pub(crate) default: Step,
}

impl Default for Scenario {
    fn default() -> Self {
        Self::new()
    }
}

impl Scenario {
    /// A scenario without steps whose default answers `ok`: every request succeeds.
    pub fn new() -> Self {
        Self { steps: Vec::new(), default: Step::Ok(Reply::default()) }
    }

    /// Append a step that answers one request.
    pub fn then(self, step: impl Into<Step>) -> Self {
        self.then_times(1, step)
    }

    /// Append a step that answers `times` requests in a row.
    ///
    /// # Panics
    ///
    /// If `times` is 0.
    pub fn then_times(mut self, times: u32, step: impl Into<Step>) -> Self {
        assert!(times >= 1, "`times` must be at least 1");
        self.steps.push((step.into(), times));
        self
    }

    /// The step that answers every request after the scripted ones (`"default"` in JSON).
    ///
    /// # Default
    ///
    /// `ok` with [`DEFAULT_TEXT`](crate::DEFAULT_TEXT).
    pub fn otherwise(mut self, step: impl Into<Step>) -> Self {
        self.default = step.into();
        self
    }

    /// The scripted steps in order, each with its repeat count.
    pub fn steps(&self) -> impl ExactSizeIterator<Item = (&Step, u32)> {
        self.steps.iter().map(|(step, times)| (step, *times))
    }

    /// The step that answers after the scripted ones.
    pub fn default_step(&self) -> &Step {
        &self.default
    }

    /// How many requests the scripted steps answer before the default takes over.
    pub fn scripted_requests(&self) -> u64 {
        self.steps.iter().map(|(_, times)| u64::from(*times)).sum()
    }
}

/// Where a server is in its scenario.
#[derive(Debug, Default)]
pub(crate) struct Cursor {
    entry: usize,
    used: u32,
    default_used: u32,
}

impl Cursor {
    /// The step that answers the next request, and which one it is.
    pub(crate) fn next(&mut self, scenario: &Scenario) -> (Step, StepRef) {
        while let Some((step, times)) = scenario.steps.get(self.entry) {
            if self.used < *times {
                self.used += 1;
                let at = StepRef { index: Some(self.entry), kind: step.kind(), repeat: self.used };
                return (step.clone(), at);
            }
            self.entry += 1;
            self.used = 0;
        }
        self.default_used = self.default_used.saturating_add(1);
        let at = StepRef { index: None, kind: scenario.default.kind(), repeat: self.default_used };
        (scenario.default.clone(), at)
    }
}
