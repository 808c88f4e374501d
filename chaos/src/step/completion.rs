//! A completion: an answer's text and how it is cut into chunks (the `ok` step's, and the part of
//! a faulty stream sent before its fault).

use super::*;

/// The model's completion a step sends: the text of an answer and how it is streamed; the `ok`
/// step, and the part of a faulty stream that is sent before the fault. (A runtime's `Reply` is
/// what its client makes of it.)
///
/// # Default
///
/// Text [`DEFAULT_TEXT`], one chunk per word (each word keeps the space after it), no delay, the
/// usage by the [rule](crate#token-usage).
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let step = Step::ok("The answer is 42.").chunks(2).chunk_delay_ms(5);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub(crate) text: String,
    pub(crate) chunks: Option<u32>,
    pub(crate) chunk_delay_ms: u64,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) usage: TokenUsage,
    /// The answer ends as one the token limit cut (see [`Completion::cut_by_token_limit`]).
    pub(crate) cut_by_token_limit: bool,
    /// The reasoning streamed before the text (see [`Completion::reasoning`]).
    pub(crate) reasoning: Option<String>,
    /// The tool calls streamed after the text: a fault's answer that is a tool call (see
    /// [`Interrupt::call`]).
    pub(crate) calls: Vec<(String, serde_json::Value)>,
    /// How many pieces each call's arguments are streamed in.
    pub(crate) argument_chunks: u32,
}

impl Default for Completion {
    fn default() -> Self {
        Self::new(DEFAULT_TEXT)
    }
}

impl Completion {
    /// A completion with `text`.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            chunks: None,
            chunk_delay_ms: 0,
            headers: Vec::new(),
            usage: TokenUsage::default(),
            cut_by_token_limit: false,
            reasoning: None,
            calls: Vec::new(),
            argument_chunks: ToolUse::DEFAULT_ARGUMENT_CHUNKS,
        }
    }

    /// Stream `reasoning` before the answer, one piece per word (each word keeps the space after
    /// it), in each wire's real shape: OpenAI `delta.reasoning_content` chunks (DeepSeek's);
    /// Anthropic a `thinking` content block (`thinking_delta`s, then a `signature_delta`) before
    /// the text block; Gemini parts with `"thought": true`; Responses a `reasoning` output item
    /// (`response.reasoning_summary_text.delta`s) before the message. A whole answer carries it
    /// too (`message.reasoning_content`, a `thinking` block, a thought part, a `reasoning` item
    /// with its summary). Its pieces are chunks: they come first in the count `after_chunks`
    /// counts (see [`Step::chunk_count`]); they are not output tokens (pin
    /// [`TokenUsage::with_reasoning`] for those). In a scenario file: `"reasoning": ".."`.
    ///
    /// # Default
    ///
    /// None (an empty text is none too).
    pub fn reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning = Some(reasoning.into()).filter(|reasoning| !reasoning.is_empty());
        self
    }

    /// Split the text into `n` chunks of about the same number of characters (at least 1).
    ///
    /// # Default
    ///
    /// One chunk per word.
    pub fn chunks(mut self, n: u32) -> Self {
        self.chunks = Some(n.max(1));
        self
    }

    /// Wait `ms` milliseconds before each text chunk. A non-streaming request waits the sum before
    /// its answer.
    ///
    /// # Default
    ///
    /// 0.
    pub fn chunk_delay_ms(mut self, ms: u64) -> Self {
        self.chunk_delay_ms = ms;
        self
    }

    /// Pin the counts of the usage the answer reports (OpenAI's usage chunk or body, Anthropic's
    /// `message_start` and `message_delta`).
    ///
    /// # Default
    ///
    /// The counts of the [rule](crate#token-usage).
    pub fn usage(mut self, usage: TokenUsage) -> Self {
        self.usage = usage;
        self
    }

    /// End the answer as one that the token limit cut: OpenAI `finish_reason: "length"`,
    /// Anthropic `stop_reason: "max_tokens"` (also when a forced tool answers, `tool_choice.type ==
    /// "tool"`: its `tool_use` block then ends with `max_tokens`), streamed or not. The text is
    /// sent as given, so give the cut text itself, e.g. JSON that stops mid-string. In a scenario
    /// file: `"stop": "length"`.
    ///
    /// # Default
    ///
    /// The answer ends normally: `"stop"` / `"end_turn"` (`"tool_use"` for a forced tool).
    pub fn cut_by_token_limit(mut self) -> Self {
        self.cut_by_token_limit = true;
        self
    }

    /// The text of the answer.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text cut into the chunks that the stream sends, lazily: a count as large as
    /// `chunks(u32::MAX)` costs no memory, only time.
    pub fn pieces(&self) -> impl Iterator<Item = &str> + '_ {
        match self.chunks {
            None => Pieces::words(&self.text),
            Some(n) => Pieces::even(&self.text, n as usize),
        }
    }

    /// How many chunks [`pieces`](Completion::pieces) yields.
    pub(crate) fn text_chunk_count(&self) -> usize {
        match self.chunks {
            None => Pieces::words(&self.text).count(),
            Some(n) => n as usize,
        }
    }

    /// The reasoning's pieces, one per word; none without reasoning.
    pub(crate) fn reasoning_pieces(&self) -> impl Iterator<Item = &str> + '_ {
        self.reasoning.as_deref().map(Pieces::words).into_iter().flatten()
    }

    /// Whether the answer streams more than text: reasoning or tool calls.
    pub(crate) fn is_rich(&self) -> bool {
        self.reasoning.is_some() || !self.calls.is_empty()
    }

    /// Whether the text is streamed: always, but for a tool call's answer whose text is empty.
    pub(crate) fn has_text(&self) -> bool {
        self.calls.is_empty() || !self.text.is_empty()
    }

    /// The output tokens the answer reports by the rule: one per text chunk and per argument
    /// piece (the reasoning's are pinned apart, [`TokenUsage::with_reasoning`]).
    pub(crate) fn output_chunks(&self) -> usize {
        self.chunk_count() - self.reasoning_pieces().count()
    }

    /// Every chunk the stream sends, the ones a fault's `after_chunks` counts: the reasoning's
    /// pieces, the text's, then each call's argument pieces.
    pub(crate) fn chunk_count(&self) -> usize {
        let text = if self.has_text() { self.text_chunk_count() } else { 0 };
        let arguments: usize =
            self.calls.iter().map(|(_, input)| argument_pieces(input, self.argument_chunks).len()).sum();
        self.reasoning_pieces().count().saturating_add(text).saturating_add(arguments)
    }
}

/// A call's arguments (`input` as compact JSON) cut into `n` pieces of about the same length
/// (fewer when the JSON text is shorter).
pub(crate) fn argument_pieces(input: &serde_json::Value, n: u32) -> Vec<String> {
    let text = input.to_string();
    let n = (n as usize).min(text.chars().count()).max(1);
    split_even(&text, n)
}

/// The chunks of a text, cut on the fly.
#[derive(Debug, Clone)]
pub(crate) enum Pieces<'a> {
    /// Words, each keeping the whitespace that follows it (the first also what precedes it); one
    /// empty piece for an empty text.
    Words { rest: &'a str, started: bool },
    /// `left` more pieces of about the same number of characters; the first `extra` take one more.
    Even { rest: &'a str, base: usize, extra: usize, left: usize },
}

impl<'a> Pieces<'a> {
    pub(crate) fn words(text: &'a str) -> Self {
        Self::Words { rest: text, started: false }
    }

    pub(crate) fn even(text: &'a str, n: usize) -> Self {
        let n = n.max(1);
        let chars = text.chars().count();
        Self::Even { rest: text, base: chars / n, extra: chars % n, left: n }
    }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        match self {
            Self::Words { rest, started } => {
                if rest.is_empty() {
                    return if std::mem::replace(started, true) { None } else { Some("") };
                }
                *started = true;
                let (piece, tail) = rest.split_at(word_end(rest));
                *rest = tail;
                Some(piece)
            }
            Self::Even { rest, base, extra, left } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                let len = *base + usize::from(*extra > 0);
                *extra = extra.saturating_sub(1);
                let at = rest.char_indices().nth(len).map_or(rest.len(), |(at, _)| at);
                let (piece, tail) = rest.split_at(at);
                *rest = tail;
                Some(piece)
            }
        }
    }
}

/// The end of the first word of `text` and the whitespace around it.
fn word_end(text: &str) -> usize {
    let lead = text.len() - text.trim_start().len();
    let word = text[lead..].find(char::is_whitespace).map_or(text.len(), |at| lead + at);
    let after = &text[word..];
    word + (after.len() - after.trim_start().len())
}

/// `n` pieces of about the same number of characters; the first ones take the remainder.
pub(crate) fn split_even(text: &str, n: usize) -> Vec<String> {
    Pieces::even(text, n).map(str::to_owned).collect()
}

header_setter!(Completion);
