//! What the grader found: each run's grade, the lines it skipped, and the totals, as `agentic
//! grade` prints them.

use std::fmt;

use serde::Serialize;

/// How many malformed lines a [`GradeReport`] keeps with their reasons; the others are counted
/// only. A hundred show what is wrong with a file; a million would be a million lines of noise
/// and memory.
pub(crate) const MAX_MALFORMED_KEPT: usize = 100;

/// What a run is graded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Category {
    /// A line of the run was skipped (malformed or over-long): whatever it said (a failed tool, the
    /// `agent_finish`) is unknown, so the run cannot be graded.
    Unreadable,
    /// No `agent_finish`: the run did not end with the model's answer.
    Incomplete,
    /// A tool returned an error and no later call of that same tool succeeded.
    ToolErrorUnrecovered,
    /// Every tool error was followed by a successful call of the same tool.
    ToolErrorRecovered,
    /// No tool error.
    Clean,
}

impl Category {
    /// Every category, in the order the grader checks them.
    pub(crate) const ALL: [Category; 5] = [
        Category::Unreadable,
        Category::Incomplete,
        Category::ToolErrorUnrecovered,
        Category::ToolErrorRecovered,
        Category::Clean,
    ];

    /// The name: `unreadable`, `incomplete`, `tool_error_unrecovered`, `tool_error_recovered`,
    /// `clean`.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Category::Unreadable => "unreadable",
            Category::Incomplete => "incomplete",
            Category::ToolErrorUnrecovered => "tool_error_unrecovered",
            Category::ToolErrorRecovered => "tool_error_recovered",
            Category::Clean => "clean",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The grade of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunGrade {
    /// The run's id.
    pub(crate) run_id: String,
    /// The source (file) where the run's first line is.
    pub(crate) source: String,
    /// The agent function, from `agent_start` (none when absent or `null`).
    pub(crate) function: Option<String>,
    /// The category.
    pub(crate) category: Category,
    /// How many tool calls the run made (results without a call included).
    pub(crate) tool_calls: usize,
    /// How many of them returned an error.
    pub(crate) tool_errors: usize,
    /// The tools whose last call failed, in order of their first call.
    pub(crate) unrecovered_tools: Vec<String>,
    /// The `iterations` of `agent_finish`, if any.
    pub(crate) iterations: Option<u64>,
    /// How many skipped lines belong, or may belong, to the run: those that name it, and those
    /// that name no run and were read while it was open. When some do, the run is
    /// [`Category::Unreadable`].
    pub(crate) skipped_lines: usize,
}

/// A line the grader skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MalformedLine {
    /// The source (file) it is in.
    pub(crate) source: String,
    /// Its line number, from 1.
    pub(crate) line: usize,
    /// What is wrong with it.
    pub(crate) reason: String,
}

impl fmt::Display for MalformedLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.source, self.line, self.reason)
    }
}

/// The grades of every run read, and the lines skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GradeReport {
    /// One grade per run, in the order the runs first appear.
    pub(crate) runs: Vec<RunGrade>,
    /// The first [`MAX_MALFORMED_KEPT`] malformed lines, in reading order.
    pub(crate) malformed: Vec<MalformedLine>,
    /// How many lines were malformed, all of them (the first ones are in
    /// [`malformed`](Self::malformed)).
    pub(crate) malformed_lines: usize,
}

/// How many runs fell in each category.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct GradeTotals {
    /// All runs.
    pub(crate) runs: usize,
    /// `clean` runs.
    pub(crate) clean: usize,
    /// `tool_error_recovered` runs.
    pub(crate) tool_error_recovered: usize,
    /// `tool_error_unrecovered` runs.
    pub(crate) tool_error_unrecovered: usize,
    /// `incomplete` runs.
    pub(crate) incomplete: usize,
    /// `unreadable` runs.
    pub(crate) unreadable: usize,
    /// Lines skipped as malformed.
    pub(crate) malformed_lines: usize,
}

impl GradeTotals {
    /// The count of `category`.
    pub(crate) fn count(&self, category: Category) -> usize {
        match category {
            Category::Unreadable => self.unreadable,
            Category::Incomplete => self.incomplete,
            Category::ToolErrorUnrecovered => self.tool_error_unrecovered,
            Category::ToolErrorRecovered => self.tool_error_recovered,
            Category::Clean => self.clean,
        }
    }
}

impl GradeReport {
    /// The counts per category.
    pub(crate) fn totals(&self) -> GradeTotals {
        let mut totals =
            GradeTotals { runs: self.runs.len(), malformed_lines: self.malformed_lines, ..GradeTotals::default() };
        for run in &self.runs {
            match run.category {
                Category::Unreadable => totals.unreadable += 1,
                Category::Incomplete => totals.incomplete += 1,
                Category::ToolErrorUnrecovered => totals.tool_error_unrecovered += 1,
                Category::ToolErrorRecovered => totals.tool_error_recovered += 1,
                Category::Clean => totals.clean += 1,
            }
        }
        totals
    }
}
