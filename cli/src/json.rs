//! Reading JSON input field by field, with messages that name the field, say what was expected and
//! what was found, and suggest the nearest valid name for a misspelt one.
//!
//! Everywhere, `null` is the same as leaving an optional field out.

use serde_json::{Map, Value};

/// The fields of one JSON object, and where the object sits in the input (for messages).
pub(crate) struct Fields<'a> {
    object: &'a Map<String, Value>,
    /// Prefix of every field's name in messages: `""`, `"policy."`, `"outcomes[2]."`.
    prefix: &'a str,
}

impl<'a> Fields<'a> {
    /// The fields of `value`, which must be an object; `what` names it in the message otherwise.
    pub(crate) fn of(value: &'a Value, prefix: &'a str, what: &str) -> Result<Self, String> {
        match value {
            Value::Object(object) => Ok(Self { object, prefix }),
            other => Err(format!("{what} must be a JSON object, found {}", describe(other))),
        }
    }

    /// Refuses a field not in `allowed`, suggesting the nearest allowed name.
    pub(crate) fn only(&self, allowed: &[&str]) -> Result<(), String> {
        let Some(unknown) = self.object.keys().find(|key| !allowed.contains(&key.as_str())) else {
            return Ok(());
        };
        let mut message = format!("unknown field \"{}{unknown}\"", self.prefix);
        if let Some(nearest) = nearest(unknown, allowed) {
            message.push_str(&format!("; did you mean \"{}{nearest}\"?", self.prefix));
        }
        message.push_str(&format!(" (valid fields: {})", allowed.join(", ")));
        Err(message)
    }

    /// Whether the field is present and not null.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The field's value, unless absent or null.
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.object.get(key).filter(|value| !value.is_null())
    }

    /// The field's full name in messages, quoted: `"outcomes[2].status"`.
    pub(crate) fn name(&self, key: &str) -> String {
        format!("\"{}{key}\"", self.prefix)
    }

    /// A required string field.
    pub(crate) fn required_str(&self, key: &str) -> Result<&'a str, String> {
        match self.object.get(key) {
            None => Err(format!("missing field {} (a string)", self.name(key))),
            Some(Value::String(text)) => Ok(text),
            Some(other) => Err(self.wrong(key, "a string", other)),
        }
    }

    /// An optional string field.
    pub(crate) fn str(&self, key: &str) -> Result<Option<&'a str>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(self.wrong(key, "a string", other)),
        }
    }

    /// An optional boolean field.
    pub(crate) fn bool(&self, key: &str) -> Result<Option<bool>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(other) => Err(self.wrong(key, "true or false", other)),
        }
    }

    /// An optional whole-number field in `min..=max`.
    pub(crate) fn uint(&self, key: &str, min: u64, max: u64) -> Result<Option<u64>, String> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        match value.as_u64() {
            Some(number) if (min..=max).contains(&number) => Ok(Some(number)),
            _ => Err(self.wrong(key, &format!("a whole number from {min} to {max}"), value)),
        }
    }

    /// An optional HTTP status (100 to 599).
    pub(crate) fn status(&self, key: &str) -> Result<Option<u16>, String> {
        Ok(self.uint(key, 100, 599)?.map(|status| status as u16))
    }

    /// "`"field"` must be `expected`, found `value`".
    pub(crate) fn wrong(&self, key: &str, expected: &str, found: &Value) -> String {
        format!("{} must be {expected}, found {}", self.name(key), describe(found))
    }
}

/// A value as a message shows it: the scalar itself (a long string shortened), or its kind.
pub(crate) fn describe(value: &Value) -> String {
    const LONGEST: usize = 40;
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        Value::String(text) if text.chars().count() > LONGEST => {
            let start: String = text.chars().take(LONGEST).collect();
            format!("the string {}...", Value::String(start))
        }
        Value::String(text) => format!("the string {}", Value::String(text.clone())),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

/// A JSON syntax error in one line of input: serde_json's message, with the column only.
pub(crate) fn syntax_error_in_line(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match text.strip_suffix(&position) {
        Some(what) => format!("not valid JSON: {what} at column {}", error.column()),
        None => format!("not valid JSON: {text}"),
    }
}

/// The candidate nearest to `unknown`, for "did you mean": the policy rules' own matcher.
pub(crate) use agentic_runtime::policy::rules::nearest;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_name_the_field_and_what_was_found() {
        let value = json!({"status": "429", "flag": 1, "n": -1, "big": 1000});
        let fields = Fields::of(&value, "outcomes[2].", "x").unwrap();
        assert_eq!(
            fields.status("status").unwrap_err(),
            "\"outcomes[2].status\" must be a whole number from 100 to 599, found the string \"429\""
        );
        assert_eq!(
            fields.status("big").unwrap_err(),
            "\"outcomes[2].big\" must be a whole number from 100 to 599, found 1000"
        );
        assert!(fields.bool("flag").unwrap_err().ends_with("must be true or false, found 1"));
        assert!(fields.uint("n", 0, 10).unwrap_err().ends_with("found -1"));
        assert_eq!(fields.uint("absent", 0, 10), Ok(None));
        assert_eq!(Fields::of(&json!([1]), "", "line").err().unwrap(), "line must be a JSON object, found an array");
    }

    #[test]
    fn unknown_fields_get_a_suggestion() {
        let value = json!({"stop_reson": "stop"});
        let fields = Fields::of(&value, "", "x").unwrap();
        assert_eq!(
            fields.only(&["error_message", "stop_reason"]).unwrap_err(),
            "unknown field \"stop_reson\"; did you mean \"stop_reason\"? \
             (valid fields: error_message, stop_reason)"
        );
        assert_eq!(nearest("completely_else", &["status"]), None);
        assert_eq!(nearest("Max_Retry", &["max_retries", "max_calls"]), Some("max_retries"));
    }

    #[test]
    fn syntax_errors_give_the_column() {
        let error = serde_json::from_str::<Value>("{\"a\": }").unwrap_err();
        assert_eq!(syntax_error_in_line(&error), "not valid JSON: expected value at column 7");
    }
}
