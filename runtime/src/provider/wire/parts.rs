//! A Chat Completions `content` as the servers send it: a string (every server), or a list of
//! typed parts (Mistral's reasoning models stream `[{"type": "thinking", "thinking": [{"type":
//! "text", "text": ".."}]}, {"type": "text", "text": ".."}]`). Text parts are the answer; thinking
//! parts are the model's reasoning, shown to a streaming caller and never part of the answer (as
//! Anthropic's thinking deltas and Gemini's thought summaries are).

use std::fmt;

use serde::Deserialize;
use serde::de::{SeqAccess, Visitor};

/// One `content` read: its text, and the reasoning it carried.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Content {
    /// The answer's text in it (the text parts, joined).
    pub(super) text: String,
    /// The text of its thinking parts, joined.
    pub(super) reasoning: String,
    /// A thinking part came (with text or not): a sign of life without content.
    pub(super) thinking: bool,
}

/// Read without buffering: a string costs what it did as a plain `String` field (the hot path of
/// every chunk), a list is walked part by part.
impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ContentVisitor)
    }
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or a list of content parts")
    }

    fn visit_str<E>(self, text: &str) -> Result<Content, E> {
        Ok(Content { text: text.to_owned(), ..Content::default() })
    }

    fn visit_string<E>(self, text: String) -> Result<Content, E> {
        Ok(Content { text, ..Content::default() })
    }

    fn visit_unit<E>(self) -> Result<Content, E> {
        Ok(Content::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut parts: A) -> Result<Content, A::Error> {
        let mut content = Content::default();
        while let Some(part) = parts.next_element::<Part>()? {
            match part.kind.as_deref() {
                Some("text") | None => content.text.push_str(part.text.as_deref().unwrap_or_default()),
                Some("thinking") => {
                    content.thinking = true;
                    thinking_text(part.thinking.as_ref(), &mut content.reasoning);
                }
                // `reference`, `image_url` and any part to come: not the answer's text.
                Some(_) => {}
            }
        }
        Ok(content)
    }
}

/// One part: its `type` and, for a text part, its `text`; for a thinking part, its own list (read
/// as any JSON: its shape varies, and one no server sends shows nothing rather than failing).
#[derive(Deserialize)]
struct Part {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<serde_json::Value>,
}

/// Appends the text of a thinking part's `thinking`: a string, or a list of text chunks.
fn thinking_text(thinking: Option<&serde_json::Value>, reasoning: &mut String) {
    match thinking {
        Some(serde_json::Value::String(text)) => reasoning.push_str(text),
        Some(serde_json::Value::Array(chunks)) => {
            for chunk in chunks {
                reasoning.push_str(chunk.get("text").and_then(serde_json::Value::as_str).unwrap_or_default());
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<Content, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn a_string_and_mistrals_parts_read_as_text_and_thinking() {
        assert_eq!(read(r#""Hi""#).unwrap(), Content { text: "Hi".into(), ..Content::default() });
        let parts = r#"[{"type":"thinking","thinking":[{"type":"text","text":"Let me see."}]},{"type":"text","text":"Paris"},{"type":"reference","reference_ids":[1]},{"type":"text","text":"."}]"#;
        let reasoning = |text: &str| text.to_owned();
        assert_eq!(
            read(parts).unwrap(),
            Content { text: "Paris.".into(), reasoning: reasoning("Let me see."), thinking: true }
        );
        let only_thinking = r#"[{"type":"thinking","thinking":[{"type":"text","text":"Hmm"}]}]"#;
        assert_eq!(
            read(only_thinking).unwrap(),
            Content { text: String::new(), reasoning: reasoning("Hmm"), thinking: true }
        );
        let odd = r#"[{"type":"thinking","thinking":{"what":1}}]"#;
        assert_eq!(read(odd).unwrap(), Content { thinking: true, ..Content::default() });
        assert_eq!(read("[]").unwrap(), Content::default());
    }

    /// A part of a shape no server sends is a shape this client does not read, not an empty answer.
    #[test]
    fn parts_of_another_shape_fail() {
        for json in ["7", r#"{"text":"Hi"}"#, r#"[{"type":"text","text":7}]"#, r#"["Hi"]"#] {
            let error = read(json).unwrap_err();
            assert_eq!(error.classify(), serde_json::error::Category::Data, "{json}");
        }
    }
}
