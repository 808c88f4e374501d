//! Why a decoder could not read what a server sent ([`DecodeError`]), told apart where it happens:
//! data that is not the JSON it should be (a corrupted stream, worth another call) or JSON of a
//! shape the wire does not read (the same on every call: layer 1 stops at its second sight), and
//! the parse helpers that name the field a shape failed at.

use serde::Deserialize;
use serde_json::Value;
use serde_json::error::Category;

/// Why a decoder could not read one event or one whole answer.
#[derive(Debug)]
pub(crate) enum DecodeError {
    /// Data that is not the JSON it should be (cut, garbled), or an answer the model botched (a
    /// broken function call): another call may read.
    Corrupted(serde_json::Error),
    /// Valid JSON of a shape this wire does not read (a field of another type, a finish reason it
    /// does not know): what could not be read, in words that stay the same from one call to the
    /// next (a field's path and what it held, never an offset or the data itself), so that two
    /// calls that fail on it are seen to fail alike.
    Unreadable(String),
}

impl DecodeError {
    /// A shape this wire does not read: `what` names the field and what it held.
    #[cold]
    pub(crate) fn unreadable(what: impl Into<String>) -> Self {
        Self::Unreadable(what.into())
    }
}

/// `?` on a serde error: a data error (valid JSON, a value of the wrong type) is a shape the wire
/// does not read; a syntax error or an end too early, a corrupted stream. The parse helpers
/// ([`parse`], [`read`]) add the field's path; this conversion, for the errors they did not make,
/// drops only the offset.
impl From<serde_json::Error> for DecodeError {
    #[cold]
    fn from(error: serde_json::Error) -> Self {
        match error.classify() {
            Category::Data => Self::Unreadable(without_position(&error)),
            _ => Self::Corrupted(error),
        }
    }
}

/// `data` parsed as a `T`; a shape `T` does not read names the field it failed at.
#[inline]
pub(crate) fn parse<'a, T: Deserialize<'a>>(data: &'a str) -> Result<T, DecodeError> {
    serde_json::from_str(data).map_err(|error| shape_of(error, || path_in_text::<T>(data)))
}

/// `value` read as a `T`; a shape `T` does not read names the field it failed at.
#[inline]
pub(crate) fn read<'a, T: Deserialize<'a>>(value: &'a Value) -> Result<T, DecodeError> {
    T::deserialize(value).map_err(|error| shape_of(error, || path_in_value::<T>(value)))
}

/// The error of a failed parse; for a shape, with the path `path` finds (read again on this cold
/// path only: the success path pays nothing for it).
#[cold]
fn shape_of(error: serde_json::Error, path: impl FnOnce() -> Option<String>) -> DecodeError {
    if error.classify() != Category::Data {
        return DecodeError::Corrupted(error);
    }
    let what = without_position(&error);
    match path().filter(|path| path != ".") {
        Some(path) => DecodeError::Unreadable(format!("`{path}`: {what}")),
        None => DecodeError::Unreadable(what),
    }
}

fn path_in_text<'a, T: Deserialize<'a>>(data: &'a str) -> Option<String> {
    let mut deserializer = serde_json::Deserializer::from_str(data);
    serde_path_to_error::deserialize::<_, T>(&mut deserializer).err().map(|error| error.path().to_string())
}

fn path_in_value<'a, T: Deserialize<'a>>(value: &'a Value) -> Option<String> {
    serde_path_to_error::deserialize::<_, T>(value).err().map(|error| error.path().to_string())
}

/// A serde error's text without its ` at line L column C`: the offset moves with what came before
/// (an id, a timestamp), the failure does not.
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    match text.strip_suffix(&suffix) {
        Some(what) => what.to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Chunk {
        #[serde(default)]
        choices: Vec<Choice>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Choice {
        #[serde(default)]
        content: Option<String>,
    }

    fn unreadable(result: Result<Chunk, DecodeError>) -> String {
        match result {
            Err(DecodeError::Unreadable(what)) => what,
            other => panic!("not a shape: {other:?}"),
        }
    }

    /// A shape names its field and what it held, the same wherever the field sits in the data.
    #[test]
    fn a_shape_names_its_field_and_not_its_offset() {
        let short = r#"{"choices":[{"content":{"parts":1}}]}"#;
        let long = r#"{"id":"a-much-longer-id-than-before","choices":[{"content":{"parts":1}}]}"#;
        let expected = "`choices[0].content`: invalid type: map, expected a string";
        assert_eq!(unreadable(parse::<Chunk>(short)), expected);
        assert_eq!(unreadable(parse::<Chunk>(long)), expected);
        let value: Value = serde_json::from_str(long).unwrap();
        assert_eq!(unreadable(read::<Chunk>(&value)), expected);
        // At the root: no path.
        assert_eq!(unreadable(parse::<Chunk>("7")), "invalid type: integer `7`, expected struct Chunk");
    }

    /// Data that is not JSON, or JSON cut short, is a corrupted stream.
    #[test]
    fn data_that_is_not_json_is_corrupted() {
        for data in [r#"{"choices":[{"content":"#, "{not json", ""] {
            assert!(matches!(parse::<Chunk>(data), Err(DecodeError::Corrupted(_))), "{data}");
        }
        let syntax = serde_json::from_str::<Value>("{").unwrap_err();
        assert!(matches!(DecodeError::from(syntax), DecodeError::Corrupted(_)));
        let data = serde_json::from_str::<u32>(r#""x""#).unwrap_err();
        assert!(
            matches!(DecodeError::from(data), DecodeError::Unreadable(what) if what == "invalid type: string \"x\", expected u32")
        );
    }
}
