//! What the runtime wrote to a trace or a failure journal, read strictly, for the tests that check
//! the writing. The lenient readers, which report a bad line and read on, are the CLI's
//! (`agentic grade`, `agentic journal`), tested there.

use std::path::Path;

use agentic_runtime::observe::journal::FailureRecord;
use agentic_runtime::observe::trace::TraceEvent;

/// A trace as one short entry per line, in order: `agent_start`, `tool_call NAME`,
/// `tool_result NAME ok` or `tool_result NAME error`, `compaction`, `agent_finish`.
///
/// # Panics
///
/// When a line is not a trace event: the writer wrote something no reader reads.
pub fn trace_outline(trace: &str) -> Vec<String> {
    let events = TraceEvent::parse_all(trace).unwrap_or_else(|error| panic!("not a trace: {error}\n{trace}"));
    events
        .iter()
        .map(|event| match event {
            TraceEvent::ToolCall { tool, .. } => format!("tool_call {tool}"),
            TraceEvent::ToolResult { tool, is_error, .. } => {
                let outcome = if *is_error { "error" } else { "ok" };
                format!("tool_result {} {outcome}", tool.as_deref().unwrap_or("(no tool)"))
            }
            other => other.name().to_owned(),
        })
        .collect()
}

/// The lines of a journal file.
#[derive(Debug, Default)]
pub struct JournalLines {
    /// The lines that are records, in file order.
    pub records: Vec<FailureRecord>,
    /// The numbers (from 1) of the lines that are not, blank ones left out.
    pub bad_lines: Vec<usize>,
}

/// The journal file at `path`, each line parsed as a record.
///
/// # Panics
///
/// When the file cannot be read as text.
pub fn journal_lines(path: &Path) -> JournalLines {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let mut lines = JournalLines::default();
    for (index, line) in text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()) {
        match serde_json::from_str(line) {
            Ok(record) => lines.records.push(record),
            Err(_) => lines.bad_lines.push(index + 1),
        }
    }
    lines
}
