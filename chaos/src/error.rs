//! Errors of loading a scenario.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A scenario file that cannot be read or does not describe a valid scenario.
///
/// The Display text names the file, the line and column (where serde knows them) and the field:
///
/// ```text
/// scenario file `chaos.json`, line 3 column 45, `steps[0].status`: invalid type: string "429", expected u16
/// scenario file `chaos.json`, `steps[1].retry_after`: does not apply to a `drop_stream` step; it applies to `http_error`, `context_overflow`, `invalid_api_key`
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read scenario file `{}`: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The JSON is malformed, or does not describe a valid scenario.
    #[error("{}", Located { file: file.as_deref(), field: field.as_deref(), line: *line, column: *column, message })]
    Invalid {
        /// The file, if the scenario came from one.
        file: Option<PathBuf>,
        /// The path of the field at fault, e.g. `steps[1].status`; `None` at the top level.
        field: Option<String>,
        /// The line (from 1) of a syntax or type error.
        line: Option<usize>,
        /// The column (from 1) of a syntax or type error.
        column: Option<usize>,
        /// What is wrong.
        message: String,
    },
}

impl ScenarioError {
    /// The file at fault, if the scenario came from one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Self::Read { path, .. } => Some(path),
            Self::Invalid { file, .. } => file.as_deref(),
        }
    }

    /// The path of the field at fault, e.g. `steps[1].status`.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Read { .. } => None,
            Self::Invalid { field, .. } => field.as_deref(),
        }
    }

    /// The line (from 1) of a syntax or type error.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::Read { .. } => None,
            Self::Invalid { line, .. } => *line,
        }
    }
}

struct Located<'a> {
    file: Option<&'a Path>,
    field: Option<&'a str>,
    line: Option<usize>,
    column: Option<usize>,
    message: &'a str,
}

impl fmt::Display for Located<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.file {
            Some(file) => write!(f, "scenario file `{}`", file.display())?,
            None => f.write_str("scenario JSON")?,
        }
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, ", line {line} column {column}")?,
            (Some(line), None) => write!(f, ", line {line}")?,
            _ => {}
        }
        if let Some(field) = self.field {
            write!(f, ", `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}
