//! The JSON form of a scenario: reading a file is parse (serde, into the flat `model`), then
//! `check`, then `build`; writing one is `of`. Parsing errors here get the field's path, and the
//! line and column where serde knows them.
//!
//! Each module uses only those before it in this list: `model`, `invalid` (a failed check, and the
//! checks `build` makes too), `build` (a checked step into a [`Step`](crate::Step): the values its kind requires),
//! `check` (the rules, on the model, and the [`Scenario`] the checked steps make), `of` (a
//! [`Scenario`] into the model).

mod build;
mod check;
mod invalid;
mod model;
mod of;

use std::path::Path;

use serde::Serialize;

pub use check::{MAX_CHUNKS, MAX_TEXT_BYTES, MAX_TOOL_CALLS};
use model::ScenarioSpec;

use crate::error::ScenarioError;
use crate::scenario::Scenario;

/// Parse and check a scenario; `file` names the source in errors.
pub(crate) fn parse(json: &str, file: Option<&Path>) -> Result<Scenario, ScenarioError> {
    let located = |field: Option<String>, line, column, message: String| ScenarioError::Invalid {
        file: file.map(Path::to_path_buf),
        field,
        line,
        column,
        message,
    };
    let from_serde = |path: Option<String>, e: serde_json::Error| {
        let (line, column) = (e.line(), e.column());
        let message = with_suggestion(strip_position(&e.to_string(), line, column));
        let field = field_of(path.as_deref().unwrap_or(""), &message);
        let (line, column) = if line == 0 { (None, None) } else { (Some(line), Some(column)) };
        located(field, line, column, message)
    };
    if let Some((line, column)) = top_level_array(json) {
        let message = "a scenario is a JSON object `{\"steps\": [...]}`, not an array".to_owned();
        return Err(located(None, Some(line), Some(column), message));
    }
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let spec: ScenarioSpec = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        from_serde(Some(path), e.into_inner())
    })?;
    deserializer.end().map_err(|e| from_serde(None, e))?;
    check::scenario(spec).map_err(|e| located(Some(e.field), None, None, e.message))
}

/// Where the JSON starts with `[`, if it does: serde would read an array into the scenario's
/// fields in order, which nobody means.
fn top_level_array(json: &str) -> Option<(usize, usize)> {
    let start = json.len() - json.trim_start().len();
    if !json[start..].starts_with('[') {
        return None;
    }
    let before = &json[..start];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |last| last.chars().count()) + 1;
    Some((line, column))
}

/// serde_json's message without its " at line L column C" suffix (the error carries them apart),
/// and with the model's type names in the words of the format.
fn strip_position(message: &str, line: usize, column: usize) -> String {
    let suffix = format!(" at line {line} column {column}");
    message
        .strip_suffix(&suffix)
        .unwrap_or(message)
        .replace("struct ScenarioSpec", "a scenario object `{\"steps\": [...]}`")
        .replace("struct StepSpec", "a step object `{\"kind\": ...}`")
        .replace("struct OutageSpec", "an outage object `{\"from_ms\": ..., \"until_ms\": ...}`")
        .replace("struct RateLimitSpec", "a rate limit object `{\"requests\": ..., \"tokens\": ...}`")
        .replace("struct ToolCallSpec", "a tool call object `{\"name\": ..., \"input\": {...}}`")
        .replace("struct TokenUsage", "a usage object `{\"input_tokens\": ..., \"output_tokens\": ...}`")
        // Only `context_window` is a usize.
        .replace("expected usize", "expected the context window's size in bytes, a positive integer")
}

/// serde's "unknown field `x`, expected one of `a`, `b`" with "; did you mean `a`?" when one of the
/// expected names is close.
fn with_suggestion(message: String) -> String {
    let Some(rest) = message.strip_prefix("unknown field `").or_else(|| message.strip_prefix("unknown variant `"))
    else {
        return message;
    };
    let Some((given, expected)) = rest.split_once('`') else {
        return message;
    };
    let nearest = invalid::nearest(given, expected.split('`').skip(1).step_by(2));
    match nearest {
        Some(name) => format!("{message}; did you mean `{name}`?"),
        None => message,
    }
}

/// The field's path: serde_path_to_error's, plus the unknown field's own name when serde names
/// one (the path stops at the object that holds it).
fn field_of(path: &str, message: &str) -> Option<String> {
    let path = if path == "." { "" } else { path };
    let unknown = message.strip_prefix("unknown field `").and_then(|rest| rest.split_once('`')).map(|(name, _)| name);
    match (path, unknown) {
        (path, Some(name)) if !path.ends_with(name) => {
            Some(if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") })
        }
        ("", _) => None,
        (path, _) => Some(path.to_owned()),
    }
}

/// The JSON form of a [`Scenario`] lives here, with its checks: the scenario itself knows nothing of
/// files.
impl Scenario {
    /// Parse a scenario from JSON (format in the [crate docs](crate#scenario-files)).
    ///
    /// # Errors
    ///
    /// [`ScenarioError::Invalid`] naming the field (`steps[1].status`) and, for syntax and type
    /// errors, the line and column.
    ///
    /// # Examples
    ///
    /// ```
    /// use agentic_chaos::Scenario;
    ///
    /// let scenario = Scenario::from_json_str(r#"{"steps": [{"kind": "http_error", "status": 503}]}"#)?;
    /// assert_eq!(scenario.steps().len(), 1);
    ///
    /// let err = Scenario::from_json_str(r#"{"steps": [{"kind": "http_error", "staus": 503}]}"#)
    ///     .unwrap_err();
    /// assert_eq!(err.field(), Some("steps[0].staus"));
    /// # Ok::<(), agentic_chaos::ScenarioError>(())
    /// ```
    pub fn from_json_str(json: &str) -> Result<Self, ScenarioError> {
        parse(json, None)
    }

    /// Read and parse a scenario file.
    ///
    /// # Errors
    ///
    /// [`ScenarioError::Read`] if the file cannot be read; [`ScenarioError::Invalid`] naming the
    /// file, the field and (where serde knows it) the line and column.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ScenarioError> {
        let path = path.as_ref();
        let json =
            std::fs::read_to_string(path).map_err(|source| ScenarioError::Read { path: path.to_path_buf(), source })?;
        parse(&json, Some(path))
    }

    /// The scenario as pretty JSON, in the format that [`Scenario::from_json_str`] reads.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a scenario always serializes")
    }
}

impl std::str::FromStr for Scenario {
    type Err = ScenarioError;

    fn from_str(json: &str) -> Result<Self, Self::Err> {
        Self::from_json_str(json)
    }
}

impl Serialize for Scenario {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ScenarioSpec::from(self).serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_pick_the_nearest_name() {
        let m = with_suggestion("unknown field `staus`, expected one of `kind`, `status`".into());
        assert!(m.ends_with("; did you mean `status`?"), "{m}");
        let m = with_suggestion("unknown field `zzzzzz`, expected one of `kind`, `status`".into());
        assert!(!m.contains("did you mean"), "{m}");
    }
}
