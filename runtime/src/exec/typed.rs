//! Typed answers (`Runtime::exec_json`): the schema the model is asked to follow, and the check of
//! each answer against the type, whose failure goes back to the model like a validator's reason.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::classify::Reason;
use crate::message::StopReason;
use crate::provider::ResponseSchema;

/// A check of an answer's text: `Err(why)` when it is not the data asked for.
pub(crate) type Check<'c> = &'c (dyn Fn(&str) -> Result<(), String> + Sync);

/// How an answer's text is checked: as JSON of a type (a plain function), or by a caller's check.
#[derive(Clone, Copy)]
enum Checker<'c> {
    Type(fn(&str) -> Result<(), String>),
    Caller(Check<'c>),
}

/// What an exec's answer must be: JSON of a type (or that passes a check), described to the model
/// by its schema.
pub(crate) struct Expected<'c> {
    /// The JSON schema, sent with every call of the exec.
    pub(crate) schema: ResponseSchema,
    /// Whether a text is the JSON asked for, and if not, why (line, column and field).
    check: Checker<'c>,
}

impl std::fmt::Debug for Expected<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expected").field("schema", &self.schema.name).finish_non_exhaustive()
    }
}

/// Why an answer is not the data asked for: the rule, the reason for the error, and what the model
/// is told on the next attempt.
pub(crate) struct Unfit {
    pub(crate) rule: Reason,
    pub(crate) why: String,
    pub(crate) feedback: String,
}

impl Expected<'_> {
    /// The expectation of JSON of `T`.
    pub(crate) fn of<T: DeserializeOwned + JsonSchema>() -> Self {
        let schema = schemars::schema_for!(T);
        let mut schema = serde_json::to_value(&schema).unwrap_or(serde_json::Value::Bool(true));
        strict(&mut schema);
        Self { schema: ResponseSchema::new(&T::schema_name(), schema), check: Checker::Type(parses_as::<T>) }
    }
}

/// Whether `text` is JSON of `T`.
fn parses_as<T: DeserializeOwned>(text: &str) -> Result<(), String> {
    parse::<T>(text).map(drop)
}

impl<'c> Expected<'c> {
    /// The expectation of JSON that follows `schema` as `check` judges it.
    pub(crate) fn checked(schema: ResponseSchema, check: Check<'c>) -> Self {
        Self { schema, check: Checker::Caller(check) }
    }

    /// Why the answer `text`, which stopped for `stop_reason`, is not the data asked for, if it is not.
    pub(crate) fn judge(&self, text: &str, stop_reason: StopReason) -> Option<Unfit> {
        let name = &self.schema.name;
        if stop_reason == StopReason::Length {
            return Some(Unfit {
                rule: Reason::Truncated,
                why: format!("the `{name}` JSON was cut off by the token limit before it was complete"),
                feedback: format!(
                    "Your previous reply was cut off by the token limit before the `{name}` JSON was complete. \
                     Answer again with the complete JSON only, and shorter."
                ),
            });
        }
        let error = match self.check {
            Checker::Type(check) => check(text),
            Checker::Caller(check) => check(text),
        }
        .err()?;
        Some(Unfit {
            rule: Reason::Unparsable,
            why: format!("the answer is not `{name}` JSON: {error}"),
            feedback: format!(
                "Your previous reply was not valid `{name}` JSON: {error}. Answer again with only the JSON, fixing that."
            ),
        })
    }
}

/// Shapes a schema for OpenAI's strict structured outputs, which refuse any other: every object
/// closed (`additionalProperties: false`) and every property required. An `Option` field's schema
/// already admits `null` (which serde reads as absent); a field with a serde default gets a value
/// from the model. Applied to every subschema, definitions included.
fn strict(schema: &mut serde_json::Value) {
    use serde_json::Value;
    let Value::Object(object) = schema else { return };
    if let Some(Value::Object(properties)) = object.get("properties") {
        // Sorted: the same list whether or not serde_json keeps the fields' order (its
        // `preserve_order` feature, which a dependency such as genai turns on for the whole build).
        let mut names: Vec<&String> = properties.keys().collect();
        names.sort();
        let names: Vec<Value> = names.into_iter().cloned().map(Value::from).collect();
        object.insert("required".to_owned(), Value::from(names));
        object.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    for (_, child) in object.iter_mut() {
        match child {
            Value::Object(_) => strict(child),
            Value::Array(items) => items.iter_mut().for_each(strict),
            _ => {}
        }
    }
}

/// `text` as JSON of `T`, or why not: serde's message with its line and column, and the path of the
/// field that failed when it is not the top level (`items[0].price: invalid type: ...`).
pub(crate) fn parse<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let mut deserializer = serde_json::Deserializer::from_str(text.trim());
    let value: T = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        if path == "." { error.into_inner().to_string() } else { format!("{path}: {}", error.into_inner()) }
    })?;
    deserializer.end().map_err(|error| error.to_string())?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema, PartialEq)]
    struct Invoice {
        currency: String,
        total: f64,
    }

    #[test]
    fn a_parse_error_names_the_field_line_and_column() {
        assert_eq!(parse::<Invoice>(r#"{"currency": "EUR", "total": 12.5}"#).unwrap().total, 12.5);
        let missing = parse::<Invoice>(r#"{"total": 1}"#).unwrap_err();
        assert_eq!(missing, "missing field `currency` at line 1 column 12");
        let wrong = parse::<Invoice>(r#"{"currency": "EUR", "total": "x"}"#).unwrap_err();
        assert_eq!(wrong, r#"total: invalid type: string "x", expected f64 at line 1 column 32"#);
        assert!(parse::<Invoice>(r#"{"currency": "EU"#).unwrap_err().contains("EOF while parsing"));
        assert!(parse::<Invoice>(r#"{"currency": "EUR", "total": 1} and more"#).unwrap_err().contains("trailing"));
    }

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Order {
        id: u64,
        note: Option<String>,
        lines: Vec<Line>,
    }

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Line {
        sku: String,
        #[serde(default)]
        quantity: u32,
    }

    #[test]
    fn schemas_are_shaped_for_strict_mode_and_still_parse_what_they_describe() {
        let schema = Expected::of::<Order>().schema.schema;
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["required"], serde_json::json!(["id", "lines", "note"]));
        assert_eq!(schema["properties"]["note"]["type"], serde_json::json!(["string", "null"]));
        let line = &schema["$defs"]["Line"];
        assert_eq!(line["additionalProperties"], false);
        assert_eq!(line["required"], serde_json::json!(["quantity", "sku"]));
        assert_eq!(line["properties"]["quantity"]["type"], "integer");
        // What a strict model sends for an absent optional field parses.
        assert!(parse::<Order>(r#"{"id": 1, "note": null, "lines": [{"sku": "a", "quantity": 2}]}"#).is_ok());
    }

    #[test]
    fn a_cut_answer_says_so_and_asks_for_a_shorter_one() {
        let expected = Expected::of::<Invoice>();
        assert_eq!(expected.schema.name, "Invoice");
        let unfit = expected.judge(r#"{"currency": "EU"#, StopReason::Length).unwrap();
        assert_eq!(unfit.rule, Reason::Truncated);
        assert!(unfit.feedback.contains("shorter"), "{}", unfit.feedback);
        assert!(expected.judge(r#"{"currency": "EUR", "total": 2}"#, StopReason::Stop).is_none());
    }
}
