//! A small, hand-written check of tool arguments against the tool's JSON schema.

use serde_json::{Map, Value};

/// Checks the `arguments` of a tool call against the tool's JSON `schema`; the error lists every
/// problem found, separated by `; `, each naming the argument (`city`, `options.units`,
/// `days[2]`).
///
/// # Scope
///
/// This is a deliberately small subset of JSON Schema, enough to catch a model's usual mistakes
/// before the tool runs:
///
/// - `type` (a name or a list of names: `object`, `array`, `string`, `number`, `integer`,
///   `boolean`, `null`; an unknown name accepts anything);
/// - for objects: `required`, the schemas of declared `properties` (recursively), and
///   `additionalProperties: false` (any other value of it is not checked);
/// - for arrays: `items` when it is one schema;
/// - `enum`.
///
/// Everything else (`$ref`, `anyOf`, `oneOf`, `allOf`, `not`, `format`, `pattern`, lengths and
/// ranges, `const`, ...) is not checked: the tool gets the value as it is. Whatever the schema,
/// the arguments themselves must be a JSON object, as both APIs send them.
///
/// # Examples
///
/// ```
/// use agentic_runtime::tool::check_arguments;
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
///     "required": ["city"],
/// });
/// assert!(check_arguments(&schema, &json!({"city": "Paris", "days": 3})).is_ok());
/// assert_eq!(
///     check_arguments(&schema, &json!({"days": "three"})).unwrap_err(),
///     "`city` is required; `days` must be an integer, not a string"
/// );
/// assert_eq!(
///     check_arguments(&schema, &json!(["Paris"])).unwrap_err(),
///     "the arguments must be a JSON object, not an array"
/// );
/// ```
pub fn check_arguments(schema: &Value, arguments: &Value) -> Result<(), String> {
    if !arguments.is_object() {
        return Err(format!("the arguments must be a JSON object, not {}", article(kind(arguments))));
    }
    let mut problems = Vec::new();
    check(schema, arguments, "", &mut problems);
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}

/// The JSON type of a value, as JSON Schema names it (`integer` for whole numbers).
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn article(kind: &str) -> String {
    match kind {
        "integer" | "array" | "object" => format!("an {kind}"),
        "null" => "null".to_owned(),
        _ => format!("a {kind}"),
    }
}

fn matches_type(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(number) => {
                number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|float| float.fract() == 0.0)
            }
            _ => false,
        },
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        // A type this check does not know: accept.
        _ => true,
    }
}

/// `name` for an argument at `path` (the top level has no name).
fn named(path: &str) -> String {
    format!("`{path}`")
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") }
}

fn check(schema: &Value, value: &Value, path: &str, problems: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        // `true`, `{}` or anything that is not a schema object: accept.
        return;
    };
    if let Some(types) = schema.get("type") {
        let names: Vec<&str> = match types {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !names.is_empty() && !names.iter().any(|name| matches_type(name, value)) {
            let expected: Vec<String> = names.iter().map(|name| article(name)).collect();
            let what = if path.is_empty() { "the arguments".to_owned() } else { named(path) };
            problems.push(format!("{what} must be {}, not {}", expected.join(" or "), article(kind(value))));
            return;
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum") {
        if !allowed.contains(value) {
            let what = if path.is_empty() { "the arguments".to_owned() } else { named(path) };
            let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            problems.push(format!("{what} must be one of {}, not {value}", allowed.join(", ")));
            return;
        }
    }
    match value {
        Value::Object(object) => check_object(schema, object, path, problems),
        Value::Array(items) => {
            if let Some(item_schema @ Value::Object(_)) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}[{index}]"), problems);
                }
            }
        }
        _ => {}
    }
}

fn check_object(schema: &Map<String, Value>, object: &Map<String, Value>, path: &str, problems: &mut Vec<String>) {
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                problems.push(format!("{} is required", named(&child(path, name))));
            }
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (key, item) in object {
        match properties.and_then(|properties| properties.get(key)) {
            Some(property) => check(property, item, &child(path, key), problems),
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                let known: Vec<String> =
                    properties.into_iter().flatten().map(|(name, _)| format!("`{name}`")).collect();
                let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
                problems.push(format!("{} is not expected (allowed: {known})", named(&child(path, key))));
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn types_required_nested_items_enum_and_additional_properties() {
        let schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": ["integer", "null"]},
                "units": {"type": "string", "enum": ["c", "f"]},
                "options": {
                    "type": "object",
                    "properties": {"hourly": {"type": "boolean"}},
                    "required": ["hourly"],
                    "additionalProperties": false,
                },
                "tags": {"type": "array", "items": {"type": "string"}},
                "anything": {},
            },
            "required": ["city"],
        });
        assert_eq!(check_arguments(&schema, &json!({"city": "Paris"})), Ok(()));
        assert_eq!(check_arguments(&schema, &json!({"city": "Paris", "days": null, "extra": 1})), Ok(()));
        assert_eq!(check_arguments(&schema, &json!({"city": "Paris", "days": 2.0})), Ok(()));
        assert_eq!(
            check_arguments(&schema, &json!({"city": 3, "days": 1.5})).unwrap_err(),
            "`city` must be a string, not an integer; `days` must be an integer or null, not a number"
        );
        assert_eq!(
            check_arguments(&schema, &json!({"city": "x", "units": "k"})).unwrap_err(),
            "`units` must be one of \"c\", \"f\", not \"k\""
        );
        assert_eq!(
            check_arguments(&schema, &json!({"city": "x", "options": {"daily": true}})).unwrap_err(),
            "`options.hourly` is required; `options.daily` is not expected (allowed: `hourly`)"
        );
        assert_eq!(
            check_arguments(&schema, &json!({"city": "x", "tags": ["a", 2], "anything": [null]})).unwrap_err(),
            "`tags[1]` must be a string, not an integer"
        );
    }

    #[test]
    fn the_arguments_must_be_an_object_whatever_the_schema() {
        assert_eq!(check_arguments(&json!({}), &json!({})), Ok(()));
        assert_eq!(check_arguments(&json!(true), &json!({"a": 1})), Ok(()));
        assert_eq!(
            check_arguments(&json!({}), &json!("{\"city\": ")).unwrap_err(),
            "the arguments must be a JSON object, not a string"
        );
        assert_eq!(
            check_arguments(&json!({}), &json!(null)).unwrap_err(),
            "the arguments must be a JSON object, not null"
        );
        assert_eq!(
            check_arguments(
                &json!({"type": "object", "properties": {}, "additionalProperties": false}),
                &json!({"x": 1})
            )
            .unwrap_err(),
            "`x` is not expected (allowed: none)"
        );
    }
}
