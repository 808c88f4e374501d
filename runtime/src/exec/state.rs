//! What one exec carries from turn to turn, read by the turn loop and by compaction.

use crate::exec::agent_fn::AgentFn;
use crate::exec::typed::Expected;
use crate::message::Message;
use crate::observe::trace::RunTrace;
use crate::tool::Toolbox;

/// What one exec carries from turn to turn.
pub(crate) struct Exec<'f> {
    pub(crate) function: &'f AgentFn,
    /// The JSON the answer must be (`exec_json`), if any.
    pub(crate) expected: Option<&'f Expected<'f>>,
    pub(crate) history: Vec<Message>,
    pub(crate) trace: Option<RunTrace>,
    /// The tools offered: the exec's, its function's or the runtime's.
    pub(crate) toolbox: &'f Toolbox,
    /// The run's id for the tools' idempotency keys when there is no trace (whose id it is
    /// otherwise), made at the first tool turn.
    pub(crate) run_id: Option<Box<str>>,
    pub(crate) iterations: u32,
    pub(crate) attempts_made: u32,
    /// How many times the conversation was compacted.
    pub(crate) compactions: u32,
}

impl Exec<'_> {
    /// The run's id: a durable run's (set when the exec starts, the same after a restart), else
    /// the trace's, else one made now (`run-` and 16 random hex digits, as a trace's).
    pub(crate) fn run_id(&mut self) -> &str {
        if self.run_id.is_none() {
            if let Some(trace) = &self.trace {
                return trace.run_id();
            }
        }
        self.run_id.get_or_insert_with(|| format!("run-{:016x}", fastrand::u64(..)).into_boxed_str())
    }
}
