//! One line of a trace as the grader reads it: checked into the few facts a grade needs, or the
//! reason it is malformed; and the run a broken line names, found without parsing it.
//!
//! A line that is not JSON, not an object, has an unknown `event` or lacks a field its event needs
//! (`run_id` always; `tool` and `call_id` for `tool_call`; `call_id` and `is_error` (or `error`)
//! for `tool_result`) is malformed. `ts_ms` and the other fields are not needed to grade. The
//! runtime writes these lines as `agentic_runtime::observe::trace::TraceEvent`; the grader reads
//! them leniently, field by field, so that it can say which field is wrong and still tell the run.

use serde_json::Value;

use crate::text::shorten;

/// How long a value from the input may be in a malformed line's reason, in characters.
const MAX_SHOWN_CHARS: usize = 64;

/// What a line is, once checked.
pub(super) enum Line {
    /// `agent_start`, with the agent function's name when there is one.
    Start { function: Option<String> },
    /// `tool_call`.
    Call { tool: String, call_id: String },
    /// `tool_result`; `tool` when the line names it (the runtime's do).
    Result { call_id: String, is_error: bool, tool: Option<String> },
    /// `compaction`: it changes no grade, but is a known event.
    Compaction,
    /// `agent_finish`.
    Finish { iterations: Option<u64> },
}

/// A value from the input as a reason shows it: its JSON, shortened.
fn shown(value: &Value) -> String {
    shorten(&value.to_string(), MAX_SHOWN_CHARS).into_owned()
}

/// The run id and the checked content of one line, or why it is malformed.
pub(super) fn parse(text: &str) -> Result<(String, Line), String> {
    let value: Value = serde_json::from_str(text).map_err(|error| format!("not JSON: {error}"))?;
    let Value::Object(object) = value else {
        return Err("not a JSON object".to_owned());
    };
    let string = |key: &str| -> Result<String, String> {
        match object.get(key) {
            Some(Value::String(text)) => Ok(text.clone()),
            Some(Value::Number(number)) if key.ends_with("_id") => Ok(number.to_string()),
            Some(other) => Err(format!("`{key}` must be a string, not {}", shown(other))),
            None => Err(format!("no `{key}`")),
        }
    };
    let event = string("event")?;
    let run_id = string("run_id")?;
    let line = match event.as_str() {
        "agent_start" => Line::Start { function: object.get("function").and_then(Value::as_str).map(str::to_owned) },
        "tool_call" => Line::Call { tool: string("tool")?, call_id: string("call_id")? },
        "tool_result" => {
            let is_error = match object.get("is_error").or_else(|| object.get("error")) {
                Some(Value::Bool(is_error)) => *is_error,
                Some(other) => return Err(format!("`is_error` must be true or false, not {}", shown(other))),
                None => return Err("no `is_error`".to_owned()),
            };
            Line::Result { call_id: string("call_id")?, is_error, tool: string("tool").ok() }
        }
        "compaction" => Line::Compaction,
        "agent_finish" => Line::Finish { iterations: object.get("iterations").and_then(Value::as_u64) },
        other => {
            return Err(format!(
                "unknown event `{}`; the events are `agent_start`, `tool_call`, `tool_result`, `compaction`, `agent_finish`",
                shorten(other, MAX_SHOWN_CHARS)
            ));
        }
    };
    Ok((run_id, line))
}

/// The `run_id` a line's text names, found without parsing it as JSON (it may be cut or broken):
/// the string after the first `"run_id":` outside a string; `None` when there is none, or it holds
/// an escape or is cut.
pub(super) fn run_id_in(text: &[u8]) -> Option<String> {
    const KEY: &[u8] = b"\"run_id\"";
    let at = text.windows(KEY.len()).position(|window| window == KEY)?;
    let rest = text[at + KEY.len()..].trim_ascii_start().strip_prefix(b":")?.trim_ascii_start().strip_prefix(b"\"")?;
    let end = rest.iter().position(|&byte| byte == b'"' || byte == b'\\')?;
    if rest[end] != b'"' {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why `text` is malformed.
    fn reason(text: &str) -> String {
        parse(text).err().expect("a malformed line")
    }

    #[test]
    fn run_ids_are_found_in_broken_text_only_when_whole() {
        assert_eq!(run_id_in(br#"{"event":"x","run_id": "r-1","con"#).as_deref(), Some("r-1"));
        assert_eq!(run_id_in(br#"{"content":"\"run_id\":\"no\"","run_id":"yes"}"#).as_deref(), Some("yes"));
        assert_eq!(run_id_in(br#"{"run_id":"cut-sho"#), None);
        assert_eq!(run_id_in(br#"{"run_id":"a\"b"}"#), None);
        assert_eq!(run_id_in(br#"{"run_id":7}"#), None);
    }

    #[test]
    fn values_from_the_input_are_shortened_in_reasons() {
        let long = "x".repeat(100_000);
        let x64 = "x".repeat(64);
        let x62 = "x".repeat(62);
        assert_eq!(
            reason(&format!("{{\"event\":\"{long}\",\"run_id\":\"r\"}}")),
            format!(
                "unknown event `{x64}…`; the events are `agent_start`, `tool_call`, `tool_result`, `compaction`, `agent_finish`"
            )
        );
        assert_eq!(
            reason(&format!("{{\"event\":\"agent_start\",\"run_id\":[\"{long}\"]}}")),
            format!("`run_id` must be a string, not [\"{x62}…")
        );
    }

    #[test]
    fn ids_may_be_numbers_and_is_error_may_be_spelled_error() {
        let (run_id, line) = parse(r#"{"event":"tool_result","run_id":7,"call_id":8,"error":true}"#).unwrap();
        assert_eq!(run_id, "7");
        assert!(matches!(line, Line::Result { call_id, is_error: true, tool: None } if call_id == "8"));
        assert_eq!(
            reason(r#"{"event":"tool_call","run_id":"r","tool":1,"call_id":"c"}"#),
            "`tool` must be a string, not 1"
        );
    }
}
