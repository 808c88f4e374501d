//! What the grader knows of one run as it reads, and the rules that grade it at the end.
//!
//! | category | when |
//! | --- | --- |
//! | `unreadable` | a line of the run was skipped (malformed or over-long), so its grade cannot be known |
//! | `incomplete` | the run has no `agent_finish` (its retry layers gave up, or it was cut short) |
//! | `tool_error_unrecovered` | some tool returned an error and no later call of that same tool succeeded |
//! | `tool_error_recovered` | some tool returned an error, and every such error was followed by a successful call of the same tool |
//! | `clean` | no tool returned an error |
//!
//! The first matching row wins; `compaction` lines change no category. The order of calls is the
//! order of their `tool_call` lines: a `tool_result` answers the latest unanswered `tool_call` with
//! its `call_id`, and a result without a call counts as a call of its `tool`, at its own place. A
//! tool is unrecovered when its last answered call failed.

use std::collections::HashMap;

use super::line::Line;
use super::report::{Category, RunGrade};

/// The memory a run takes besides its strings: the run itself and its index entry.
pub(super) const RUN_COST: usize = 320;
/// The memory a distinct tool of a run takes besides its name (held twice).
pub(super) const TOOL_COST: usize = 96;
/// The memory a tool call takes.
pub(super) const CALL_COST: usize = std::mem::size_of::<Call>();
/// The memory a call id waiting for its result takes besides the id.
const PENDING_COST: usize = 96;
/// The memory a call's place in its id's queue takes.
const PLACE_COST: usize = std::mem::size_of::<usize>();

/// The tool a result names when it names none and answers no call.
const UNKNOWN_TOOL: &str = "(unknown tool)";

/// One run, as read so far.
#[derive(Debug)]
pub(super) struct Run {
    run_id: String,
    /// The position of the source its first line is in.
    source: usize,
    function: Option<String>,
    finished: bool,
    iterations: Option<u64>,
    /// The distinct tools called, in order of first appearance, and their positions.
    tools: Vec<String>,
    tool_index: HashMap<String, usize>,
    calls: Vec<Call>,
    /// The calls waiting for their result, by call id, latest last.
    pending: HashMap<String, Vec<usize>>,
    /// The skipped lines that named this run.
    skipped: usize,
    /// How many skipped lines had named no run when the run was first seen, and at its (latest)
    /// `agent_finish`: those in between may be its own.
    unattributed_at_start: usize,
    unattributed_at_finish: Option<usize>,
}

#[derive(Debug)]
struct Call {
    /// The position of its tool in `Run::tools`.
    tool: usize,
    /// `Some(is_error)` once answered.
    result: Option<bool>,
}

/// What reading a line changed in the grader's books.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Read {
    /// Tool calls added.
    pub(super) calls: usize,
    /// Memory given back, in bytes (an answered call's waiting id).
    pub(super) freed: usize,
}

impl Run {
    /// A run with nothing read yet but its id, first seen in source number `source` when
    /// `unattributed` skipped lines had named no run.
    pub(super) fn new(run_id: String, source: usize, unattributed: usize) -> Self {
        Self {
            run_id,
            source,
            function: None,
            finished: false,
            iterations: None,
            tools: Vec::new(),
            tool_index: HashMap::new(),
            calls: Vec::new(),
            pending: HashMap::new(),
            skipped: 0,
            unattributed_at_start: unattributed,
            unattributed_at_finish: None,
        }
    }

    /// The memory of a new run named `run_id`, before its first line: the run and its id, held
    /// twice (the run and the grader's index).
    pub(super) fn new_cost(run_id: &str) -> usize {
        RUN_COST + 2 * run_id.len()
    }

    /// The memory `line` adds to `run` (`None`: a run not tracked yet, whose own cost
    /// [`new_cost`](Self::new_cost) says): a function name, a new tool, a call and its waiting id.
    pub(super) fn cost(run: Option<&Run>, line: &Line) -> usize {
        let new_tool = |tool: &str| {
            if run.is_some_and(|run| run.tool_index.contains_key(tool)) { 0 } else { TOOL_COST + 2 * tool.len() }
        };
        let waits = |call_id: &str| run.is_some_and(|run| run.pending.contains_key(call_id));
        match line {
            Line::Start { function } => match (run.and_then(|run| run.function.as_ref()), function) {
                (None, Some(function)) => function.len(),
                _ => 0,
            },
            Line::Call { tool, call_id } => {
                let new_id = if waits(call_id) { 0 } else { call_id.len() + PENDING_COST };
                new_tool(tool) + CALL_COST + PLACE_COST + new_id
            }
            Line::Result { call_id, tool, .. } => {
                if waits(call_id) {
                    0
                } else {
                    new_tool(tool.as_deref().unwrap_or(UNKNOWN_TOOL)) + CALL_COST
                }
            }
            Line::Finish { .. } | Line::Compaction => 0,
        }
    }

    /// Counts a skipped line that named this run.
    pub(super) fn skipped_line(&mut self) {
        self.skipped += 1;
    }

    /// Reads `line` of this run, when `unattributed` skipped lines have named no run so far.
    pub(super) fn read(&mut self, line: Line, unattributed: usize) -> Read {
        match line {
            Line::Start { function } => {
                if self.function.is_none() {
                    self.function = function;
                }
            }
            Line::Call { tool, call_id } => {
                let tool = self.tool(tool);
                let place = self.calls.len();
                self.pending.entry(call_id).or_default().push(place);
                self.calls.push(Call { tool, result: None });
                return Read { calls: 1, freed: 0 };
            }
            Line::Result { call_id, is_error, tool } => return self.result(&call_id, is_error, tool),
            Line::Compaction => {}
            Line::Finish { iterations } => {
                self.finished = true;
                self.iterations = iterations;
                self.unattributed_at_finish = Some(unattributed);
            }
        }
        Read::default()
    }

    /// A tool result: it answers the latest waiting call with its id (whose waiting entry, once
    /// drained, frees its memory), or stands for a call the trace did not show.
    fn result(&mut self, call_id: &str, is_error: bool, tool: Option<String>) -> Read {
        let waiting = self.pending.get_mut(call_id).and_then(|stack| stack.pop().map(|call| (call, stack.is_empty())));
        match waiting {
            Some((call, drained)) => {
                self.calls[call].result = Some(is_error);
                let mut freed = PLACE_COST;
                if drained {
                    self.pending.remove(call_id);
                    freed += call_id.len() + PENDING_COST;
                }
                Read { calls: 0, freed }
            }
            None => {
                let tool = self.tool(tool.unwrap_or_else(|| UNKNOWN_TOOL.to_owned()));
                self.calls.push(Call { tool, result: Some(is_error) });
                Read { calls: 1, freed: 0 }
            }
        }
    }

    /// The position of `tool` in `tools`, added if new.
    fn tool(&mut self, tool: String) -> usize {
        if let Some(&position) = self.tool_index.get(&tool) {
            return position;
        }
        self.tools.push(tool.clone());
        self.tool_index.insert(tool, self.tools.len() - 1);
        self.tools.len() - 1
    }

    /// The run's grade, once every source is read: `sources` names them by position, and
    /// `unattributed` skipped lines named no run in all (those read while the run was open may
    /// be its own).
    pub(super) fn grade(self, sources: &[String], unattributed: usize) -> RunGrade {
        // A tool is unrecovered when its last answered call (in call order) failed.
        let mut last: Vec<Option<bool>> = vec![None; self.tools.len()];
        let mut order = Vec::new();
        let mut tool_errors = 0;
        for call in &self.calls {
            let Some(is_error) = call.result else { continue };
            tool_errors += usize::from(is_error);
            if last[call.tool].is_none() {
                order.push(call.tool);
            }
            last[call.tool] = Some(is_error);
        }
        let unrecovered_tools: Vec<String> =
            order.into_iter().filter(|&tool| last[tool] == Some(true)).map(|tool| self.tools[tool].clone()).collect();
        let open_until = self.unattributed_at_finish.unwrap_or(unattributed);
        let skipped_lines = self.skipped + open_until.saturating_sub(self.unattributed_at_start);
        let category = if skipped_lines > 0 {
            Category::Unreadable
        } else if !self.finished {
            Category::Incomplete
        } else if !unrecovered_tools.is_empty() {
            Category::ToolErrorUnrecovered
        } else if tool_errors > 0 {
            Category::ToolErrorRecovered
        } else {
            Category::Clean
        };
        RunGrade {
            tool_calls: self.calls.len(),
            tool_errors,
            unrecovered_tools,
            category,
            run_id: self.run_id,
            source: sources[self.source].clone(),
            function: self.function,
            iterations: self.iterations,
            skipped_lines,
        }
    }
}
