//! Taking a key out of what an error holds ([`Classify::redact`](super::Classify::redact)): the
//! pieces the implementations for other clients' errors share (a text, a JSON value, a serde error).

use std::borrow::Cow;

/// Gives a text back without any piece of the key (borrowed when there was none).
pub(crate) type Redact<'r> = &'r dyn Fn(&str) -> Cow<'_, str>;

/// `text` without the key.
#[cfg(any(feature = "async-openai", feature = "genai"))]
pub(crate) fn text(text: String, redact: Redact<'_>) -> String {
    match redact(&text) {
        Cow::Owned(shown) => shown,
        Cow::Borrowed(_) => text,
    }
}

/// `text`, if any, without the key.
#[cfg(feature = "async-openai")]
pub(crate) fn optional(text: Option<String>, redact: Redact<'_>) -> Option<String> {
    text.map(|text| self::text(text, redact))
}

/// `value` with every string in it (names too) without the key.
#[cfg(feature = "genai")]
pub(crate) fn json(value: serde_json::Value, redact: Redact<'_>) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(string) => Value::String(text(string, redact)),
        Value::Array(items) => Value::Array(items.into_iter().map(|item| json(item, redact)).collect()),
        Value::Object(fields) => {
            Value::Object(fields.into_iter().map(|(name, field)| (text(name, redact), json(field, redact))).collect())
        }
        other => other,
    }
}

/// `headers` with every value that shows a piece of the key replaced by its text without it (a
/// server may echo the key in a header).
#[cfg(any(feature = "tower", feature = "genai"))]
pub(crate) fn headers(headers: &mut http::HeaderMap, redact: Redact<'_>) {
    for value in headers.values_mut() {
        let Ok(text) = value.to_str() else { continue };
        if let Cow::Owned(shown) = redact(text) {
            // `<redacted>` is a valid header value, as was what was around it.
            *value = http::HeaderValue::from_str(&shown).unwrap_or(http::HeaderValue::from_static("<redacted>"));
        }
    }
}

/// A serde error whose message quotes what it could not read (`invalid type: string "sk-..."`):
/// one of the same message without the key (its line and column are lost; its words stay).
#[cfg(any(feature = "async-openai", feature = "genai"))]
pub(crate) fn serde(error: serde_json::Error, redact: Redact<'_>) -> serde_json::Error {
    match redact(&error.to_string()) {
        Cow::Owned(shown) => <serde_json::Error as serde::de::Error>::custom(shown),
        Cow::Borrowed(_) => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hide(text: &str) -> Cow<'_, str> {
        if text.contains("sk-1") { Cow::Owned(text.replace("sk-1", "<redacted>")) } else { Cow::Borrowed(text) }
    }

    #[test]
    fn a_header_that_shows_the_key_loses_it_and_the_others_stay() {
        let mut map = http::HeaderMap::new();
        map.insert("x-echo", http::HeaderValue::from_static("your key sk-1 is wrong"));
        map.insert("content-type", http::HeaderValue::from_static("application/json"));
        headers(&mut map, &hide);
        assert_eq!(map["x-echo"], "your key <redacted> is wrong");
        assert_eq!(map["content-type"], "application/json");
    }

    #[cfg(any(feature = "async-openai", feature = "genai"))]
    #[test]
    fn a_text_keeps_its_words_and_loses_the_key() {
        assert_eq!(text("bad key sk-1".into(), &hide), "bad key <redacted>");
        assert_eq!(text("nothing".into(), &hide), "nothing");
    }

    #[cfg(feature = "genai")]
    #[test]
    fn every_string_of_a_json_value_loses_the_key() {
        let value = serde_json::json!({"error": {"message": ["sk-1"], "sk-1": 1, "n": 2}});
        let shown = json(value, &hide);
        assert_eq!(shown, serde_json::json!({"error": {"message": ["<redacted>"], "<redacted>": 1, "n": 2}}));
    }
}
