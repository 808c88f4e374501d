//! The compactor that has the model summarise the oldest turns.

use std::fmt::Write as _;

use crate::compact::turns::{last_turns, last_turns_start, messages_count, note_on_prompt};
use crate::compact::{CompactFuture, Compactor, Overflow};
use crate::message::{ContentBlock, Message};

/// Replaces the oldest turns of the conversation with a summary the exec's model writes, keeping
/// the prompt and the last `turns` turns; the system instruction is always kept. The summary is
/// added to the prompt, as a text block of its own.
///
/// The summary is one more model call ([`Overflow::ask`]): it runs through both layers with the
/// exec's policy (a transient failure is retried), counts against the exec's `max_calls` and
/// `budget_ms`, and sees the turns it replaces in full, as a transcript. When it fails, or when the
/// conversation is no more than the prompt and its last `turns` turns, the exec ends with kind
/// `context_overflow`, the error saying why.
///
/// # Examples
///
/// ```
/// use agentic_runtime::Runtime;
/// use agentic_runtime::compact::Summarize;
/// # use agentic_runtime::ScriptedProvider;
/// # let provider = ScriptedProvider::new([]);
///
/// let runtime = Runtime::builder(provider).with_compactor(Summarize::keeping(2)).build().unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summarize {
    turns: u32,
}

/// What the model is asked, before the transcript of the turns to summarise.
const INSTRUCTION: &str = "The conversation below no longer fits your context window. Summarise its \
turns after the task, for your own use: the conversation will go on from the task, your summary and \
its most recent turns, and these turns will be gone. Keep every fact, decision, tool result and open \
question the rest of the task needs; leave out repetition. Answer with the summary only.";

impl Summarize {
    /// Keeps the prompt and the last `turns` turns (0 counts as 1: the last turn holds the message
    /// the model answers).
    pub const fn keeping(turns: u32) -> Self {
        Self { turns: if turns == 0 { 1 } else { turns } }
    }

    /// How many of the last turns it keeps.
    pub const fn turns(&self) -> u32 {
        self.turns
    }

    async fn summarize(&self, overflow: &mut Overflow<'_>) -> Result<Vec<Message>, String> {
        let start = last_turns_start(overflow.messages(), self.turns);
        if start <= 1 {
            return Err(format!(
                "nothing to summarise: the conversation is the prompt and {} ({})",
                last_turns(self.turns),
                messages_count(overflow.messages().len())
            ));
        }
        let question = format!("{INSTRUCTION}\n\n{}", transcript(&overflow.messages()[..start]));
        let summary = overflow.ask(question).await.map_err(|why| format!("the summary call failed: {why}"))?;
        let summary = summary.trim();
        if summary.is_empty() {
            return Err("the model's summary was empty".to_owned());
        }
        let mut messages = overflow.take_messages();
        messages.drain(1..start);
        let note = format!(
            "[Summary of the {} of this conversation after this one, which were compacted to fit the context window:]\n{summary}",
            messages_count(start - 1)
        );
        note_on_prompt(&mut messages, note);
        Ok(messages)
    }
}

/// Keeps the last 2 turns: the one the model answers, and the one before, which it usually builds on.
impl Default for Summarize {
    fn default() -> Self {
        Self::keeping(2)
    }
}

impl Compactor for Summarize {
    fn name(&self) -> &str {
        "summarize"
    }

    fn compact<'a>(&'a self, mut overflow: Overflow<'a>) -> CompactFuture<'a> {
        Box::pin(async move { self.summarize(&mut overflow).await })
    }
}

/// The turns to summarise as text the model reads: the task first, then one paragraph per piece.
fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for (index, message) in messages.iter().enumerate() {
        let blocks = match message {
            Message::User { content } => content.as_slice(),
            Message::Assistant(message) => message.content.as_slice(),
        };
        for block in blocks {
            let _ = match (index, message, block) {
                (0, _, ContentBlock::Text { text }) => writeln!(out, "Task: {text}\n"),
                (_, Message::User { .. }, ContentBlock::Text { text }) => writeln!(out, "User: {text}\n"),
                (_, _, ContentBlock::Text { text }) => writeln!(out, "You: {text}\n"),
                (_, _, ContentBlock::ToolUse { id, name, input }) => {
                    writeln!(out, "You called the tool `{name}` (call {id}) with {input}\n")
                }
                (_, _, ContentBlock::ToolResult { tool_use_id, content, is_error }) => {
                    let what = if *is_error { "failed" } else { "returned" };
                    writeln!(out, "Tool call {tool_use_id} {what}: {content}\n")
                }
            };
        }
    }
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::AssistantMessage;

    #[test]
    fn the_transcript_names_each_piece() {
        let mut call = AssistantMessage::text("Let me look.");
        call.content.push(ContentBlock::ToolUse {
            id: "c1".into(),
            name: "search".into(),
            input: json!({"q": "rust"}),
        });
        let messages = [
            Message::user("Find rust."),
            Message::Assistant(call),
            Message::User {
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "c1".into(),
                    content: "timeout".into(),
                    is_error: true,
                }],
            },
            Message::Assistant(AssistantMessage::text("No luck.")),
            Message::user("Try again."),
        ];
        assert_eq!(
            transcript(&messages),
            "Task: Find rust.\n\nYou: Let me look.\n\nYou called the tool `search` (call c1) with {\"q\":\"rust\"}\n\n\
             Tool call c1 failed: timeout\n\nYou: No luck.\n\nUser: Try again."
        );
    }
}
