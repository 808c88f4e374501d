//! `agentic ask --schema FILE.json`: the answer must be JSON that the file's JSON Schema accepts.

use std::io::Read as _;
use std::path::Path;

use agentic_runtime::provider::ResponseSchema;
use serde_json::Value;

/// The most a schema file may hold: real schemas are a few KiB.
const MAX_SCHEMA_BYTES: u64 = 1024 * 1024;

/// The text of the file at `path`, or `None` when it holds more than [`MAX_SCHEMA_BYTES`]. The
/// read itself is bounded, not the size the file claims: a device (`/dev/zero`) or a pipe has a
/// size of 0 and no end.
fn read_bounded(path: &Path) -> std::io::Result<Option<String>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(MAX_SCHEMA_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SCHEMA_BYTES {
        return Ok(None);
    }
    String::from_utf8(bytes).map(Some).map_err(|error| {
        let at = error.utf8_error().valid_up_to();
        std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not valid UTF-8 (invalid byte at offset {at})"))
    })
}

/// A JSON Schema read from a file, ready to send and to check answers with.
pub(crate) struct SchemaFile {
    /// What the model is asked to follow, named by the schema's `title` or the file's stem.
    pub(crate) schema: ResponseSchema,
    validator: jsonschema::Validator,
}

impl SchemaFile {
    /// Reads and compiles the schema at `path`, or says what is wrong with it.
    pub(crate) fn load(path: &Path) -> Result<Self, String> {
        let shown = path.display();
        let text = read_bounded(path).map_err(|error| format!("cannot read the schema {shown}: {error}"))?;
        let Some(text) = text else {
            return Err(format!("the schema {shown} is over 1 MiB; a JSON Schema is a few KiB"));
        };
        let json: Value =
            serde_json::from_str(&text).map_err(|error| format!("the schema {shown} is not JSON: {error}"))?;
        let validator = jsonschema::validator_for(&json)
            .map_err(|error| format!("the schema {shown} is not a valid JSON Schema: {error}"))?;
        let name = json
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| path.file_stem().map(|stem| stem.to_string_lossy().into_owned()))
            .unwrap_or_default();
        Ok(Self { schema: ResponseSchema::new(&name, json), validator })
    }

    /// Whether `answer` follows the schema; if not, the first violation with where it is.
    pub(crate) fn check(&self, answer: &Value) -> Result<(), String> {
        match self.validator.iter_errors(answer).next() {
            None => Ok(()),
            Some(error) => {
                let at = error.instance_path().to_string();
                let at = if at.is_empty() { "the answer".to_owned() } else { format!("`{at}`") };
                Err(format!("{at} does not follow the schema: {error}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_file(text: &str) -> (agentic_test_support::temp_file::TempFile, Result<SchemaFile, String>) {
        let file = agentic_test_support::temp_file::TempFile::new("schema.json");
        std::fs::write(file.path(), text).unwrap();
        let loaded = SchemaFile::load(file.path());
        (file, loaded)
    }

    #[test]
    fn checks_answers_and_names_the_first_violation() {
        let (_file, loaded) = schema_file(
            r#"{"title": "Invoice", "type": "object", "required": ["total"],
                "properties": {"total": {"type": "number"}}}"#,
        );
        let schema = loaded.unwrap();
        assert_eq!(schema.schema.name, "Invoice");
        assert!(schema.check(&serde_json::json!({"total": 3})).is_ok());
        let missing = schema.check(&serde_json::json!({})).unwrap_err();
        assert!(missing.starts_with("the answer does not follow the schema: "), "{missing}");
        let wrong = schema.check(&serde_json::json!({"total": "x"})).unwrap_err();
        assert!(wrong.starts_with("`/total` does not follow the schema: "), "{wrong}");
    }

    #[test]
    fn a_bad_schema_file_says_what_is_wrong() {
        assert!(schema_file("not json").1.err().unwrap().contains("is not JSON"));
        assert!(schema_file(r#"{"type": 12}"#).1.err().unwrap().contains("is not a valid JSON Schema"));
    }
}
