//! Every trace line within the bound its readers read ([`MAX_LINE_BYTES`]): an event whose line
//! would be longer has its longest texts cut, each with a note saying how much.

use serde_json::Value;

#[cfg(doc)]
use super::MAX_LINE_BYTES;
use super::TraceEvent;
use crate::util::cut::{NOTE_BYTES, cut, json_len};

/// `event` as one JSON line (without its `\n`) of at most `max` bytes.
///
/// The line as it is when it fits; else the event's texts (a result's content, a call's
/// arguments, a final text, ids and names), largest first, are cut until it fits. Lengths are
/// counted as written, JSON escapes included (a control character takes 6 bytes). A call's
/// arguments, when cut, become a string: the start of their JSON text.
///
/// # Errors
///
/// If the event cannot be serialized, or does not fit even with every text cut (a `max` of a few
/// hundred bytes).
pub(crate) fn line(event: &TraceEvent, max: usize) -> Result<String, String> {
    let line = serde_json::to_string(event).map_err(|error| error.to_string())?;
    if line.len() <= max {
        return Ok(line);
    }
    let mut event = event.clone();
    let mut length = line.len();
    let mut cut_fields = Vec::new();
    loop {
        let mut fields = fields(&mut event);
        let largest = (0..fields.len())
            .filter(|index| !cut_fields.contains(index))
            .max_by_key(|&index| fields[index].written_len());
        let Some(index) = largest else {
            return Err(format!("a trace line of {length} bytes does not fit in {max} even with every text cut"));
        };
        cut_fields.push(index);
        let field = &mut fields[index];
        let budget = field.written_len().saturating_sub(length - max);
        field.cut_to(budget);
        let line = serde_json::to_string(&event).map_err(|error| error.to_string())?;
        if line.len() <= max {
            return Ok(line);
        }
        length = line.len();
    }
}

/// A text of an event that may be cut.
enum Field<'a> {
    Text(&'a mut String),
    Json(&'a mut Value),
}

impl Field<'_> {
    /// Its length in the line, without quotes.
    fn written_len(&self) -> usize {
        match self {
            Field::Text(text) => text.chars().map(json_len).sum(),
            Field::Json(value) => value.to_string().len(),
        }
    }

    /// Cuts it to `budget` bytes as written, its note included.
    fn cut_to(&mut self, budget: usize) {
        let note = |cut: usize, total: usize| format!(" [cut for the trace: {cut} of {total} bytes not written]");
        // The note's own escaping: it has none, so its length is its bytes.
        let budget = budget.max(NOTE_BYTES);
        match self {
            Field::Text(text) => {
                let total = text.chars().map(json_len).sum();
                **text = cut(std::mem::take(*text), budget, total, json_len, note);
            }
            Field::Json(value) => {
                let json = value.to_string();
                let total = json.chars().map(json_len).sum();
                **value = Value::String(cut(json, budget, total, json_len, note));
            }
        }
    }
}

/// The texts of `event` that may be cut; `event` is not among them, so every line still says what
/// it is.
fn fields(event: &mut TraceEvent) -> Vec<Field<'_>> {
    match event {
        TraceEvent::AgentStart { run_id, function, .. } => {
            let mut fields = vec![Field::Text(run_id)];
            fields.extend(function.as_mut().map(Field::Text));
            fields
        }
        TraceEvent::ToolCall { run_id, tool, arguments, call_id, .. } => {
            vec![Field::Text(run_id), Field::Text(tool), Field::Json(arguments), Field::Text(call_id)]
        }
        TraceEvent::ToolResult { run_id, call_id, content, tool, .. } => {
            let mut fields = vec![Field::Text(run_id), Field::Text(call_id), Field::Text(content)];
            fields.extend(tool.as_mut().map(Field::Text));
            fields
        }
        TraceEvent::Compaction { run_id, compactor, .. } => vec![Field::Text(run_id), Field::Text(compactor)],
        TraceEvent::AgentFinish { run_id, final_text, .. } => vec![Field::Text(run_id), Field::Text(final_text)],
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(content: &str) -> TraceEvent {
        TraceEvent::ToolResult {
            ts_ms: 1,
            run_id: "r".into(),
            call_id: "c".into(),
            is_error: true,
            content: content.into(),
            tool: Some("t".into()),
        }
    }

    #[test]
    fn a_line_that_fits_is_written_as_it_is() {
        let event = result("boom");
        assert_eq!(line(&event, 1024).unwrap(), serde_json::to_string(&event).unwrap());
    }

    #[test]
    fn escapes_count_so_a_line_of_control_characters_fits_too() {
        // 10 000 bytes of `\u0001`: 60 000 bytes once escaped.
        let event = result(&"\u{1}".repeat(10_000));
        let written = line(&event, 4096).unwrap();
        assert!(written.len() <= 4096, "{}", written.len());
        let TraceEvent::ToolResult { content, run_id, .. } = serde_json::from_str(&written).unwrap() else {
            panic!("{written}")
        };
        assert_eq!(run_id, "r");
        assert!(content.ends_with(" [cut for the trace: 9354 of 10000 bytes not written]"), "{content}");
    }

    #[test]
    fn the_largest_texts_are_cut_first_and_arguments_become_a_string() {
        let event = TraceEvent::ToolCall {
            ts_ms: 1,
            run_id: "r".into(),
            tool: "t".repeat(3000),
            arguments: json!({"text": "é".repeat(5000)}),
            call_id: "c".into(),
        };
        let written = line(&event, 4096).unwrap();
        assert!(written.len() <= 4096);
        let TraceEvent::ToolCall { tool, arguments, call_id, .. } = serde_json::from_str(&written).unwrap() else {
            panic!("{written}")
        };
        assert_eq!((tool.len(), call_id.as_str()), (3000, "c"), "the tool name fit once the arguments were cut");
        assert!(arguments.as_str().unwrap().starts_with("{\"text\":\"éé"), "{arguments}");
    }

    #[test]
    fn a_bound_too_small_for_the_fixed_part_is_an_error() {
        let error = line(&result(&"x".repeat(1000)), 10).unwrap_err();
        assert!(error.starts_with("a trace line of "), "{error}");
    }
}
