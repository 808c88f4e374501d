//! The endless answers: keep-alives, empty chunks, text or JSON that never end.

use super::*;

/// Keep-alives and nothing else: the `keep_alive_flood` step.
///
/// Streamed: the headers of a 200 event stream, then the SSE comment `: keep-alive` (a line, then
/// a blank line) every [`interval_ms`](KeepAliveFlood::interval_ms), until the client hangs up or the
/// server stops. With [`ping`](KeepAliveFlood::ping), Anthropic requests get what Anthropic really
/// sends instead, `event: ping` + `data: {"type": "ping"}` (OpenAI has no ping event: its requests
/// still get comments). With [`after_chunks(k)`](KeepAliveFlood::after_chunks) the stream's first
/// events (Anthropic `message_start`, `content_block_start`, `ping`) and `k` text chunks come first.
///
/// Not streamed: a 200 `application/json` whose chunked body is a newline every interval, the
/// whitespace some proxies send to keep a long request alive, and never any JSON.
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let comments = Step::keep_alive_flood();
/// let pings = Step::keep_alive_flood().ping().after_chunks(2).interval_ms(0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeepAliveFlood {
    pub(crate) after_chunks: Option<u32>,
    pub(crate) interval_ms: u64,
    pub(crate) ping: bool,
    pub(crate) completion: Completion,
}

impl KeepAliveFlood {
    pub(super) fn new() -> Self {
        Self {
            after_chunks: None,
            interval_ms: crate::DEFAULT_INTERVAL_MS,
            ping: false,
            completion: Completion::default(),
        }
    }

    /// Send the stream's first events and `k` text chunks before the keep-alives.
    ///
    /// # Default
    ///
    /// The keep-alives come right after the headers, before any event.
    pub fn after_chunks(mut self, k: u32) -> Self {
        self.after_chunks = Some(k);
        self
    }

    /// Anthropic requests get `event: ping` events instead of comments.
    ///
    /// # Default
    ///
    /// Comments for both formats.
    pub fn ping(mut self) -> Self {
        self.ping = true;
        self
    }
}

completion_setters!(KeepAliveFlood);
interval_setter!(KeepAliveFlood);

/// Valid chunks with no text, endlessly: the `empty_chunk_flood` step.
///
/// Streamed: the stream's first events (Anthropic `message_start`, `content_block_start`, `ping`),
/// [`after_chunks`](EmptyChunkFlood::after_chunks) text chunks, then every
/// [`interval_ms`](EmptyChunkFlood::interval_ms) a chunk whose text is empty, until the client hangs
/// up or the server stops: OpenAI `data: {"id":..,"object":"chat.completion.chunk",..,
/// "choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":null}]}` (the
/// first chunk of the answer also carries `"role":"assistant"`), Anthropic `event:
/// content_block_delta` + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`.
///
/// Not streamed: a 200 `application/json` whose body opens the answer object and then sends a
/// newline every interval, like [`EndlessJson`].
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let nothing_forever = Step::empty_chunk_flood().after_chunks(1).interval_ms(0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmptyChunkFlood {
    pub(crate) after_chunks: u32,
    pub(crate) interval_ms: u64,
    pub(crate) completion: Completion,
}

impl EmptyChunkFlood {
    pub(super) fn new() -> Self {
        Self { after_chunks: 0, interval_ms: crate::DEFAULT_INTERVAL_MS, completion: Completion::default() }
    }

    /// Send `k` text chunks before the empty ones.
    ///
    /// # Default
    ///
    /// 0.
    pub fn after_chunks(mut self, k: u32) -> Self {
        self.after_chunks = k;
        self
    }
}

completion_setters!(EmptyChunkFlood);
interval_setter!(EmptyChunkFlood);

/// An answer that never ends: the `endless_text` step, to prove that a client bounds the memory
/// an answer may take.
///
/// Streamed: the stream's first events, then the text's chunks (see [`Completion::chunks`]; empty
/// chunks are skipped) one every [`interval_ms`](EndlessText::interval_ms), over and over, never
/// the final events, until the client hangs up or the server stops. Not streamed: a 200
/// `application/json` whose body opens the answer object and its text string (OpenAI
/// `choices[0].message.content`, Anthropic `content[0].text`) and then sends the text, over and
/// over, never closing the string.
///
/// An empty text streams [`DEFAULT_TEXT`] instead (a scenario file refuses
/// it).
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let fast = Step::endless_text().text("all work and no play ").interval_ms(0);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndlessText {
    pub(crate) interval_ms: u64,
    pub(crate) completion: Completion,
}

impl EndlessText {
    pub(super) fn new() -> Self {
        Self { interval_ms: crate::DEFAULT_INTERVAL_MS, completion: Completion::default() }
    }

    /// The text sent over and over.
    ///
    /// # Default
    ///
    /// [`DEFAULT_TEXT`].
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.completion.text = text.into();
        self
    }

    /// Split the text into `n` chunks (see [`Completion::chunks`]).
    ///
    /// # Default
    ///
    /// One chunk per word.
    pub fn chunks(mut self, n: u32) -> Self {
        self.completion = self.completion.chunks(n);
        self
    }

    /// Add a response header.
    ///
    /// # Panics
    ///
    /// If the name is not an HTTP token or the value contains CR, LF or NUL.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.completion = self.completion.header(name, value);
        self
    }

    /// Pin the counts of the usage the stream's start reports (Anthropic's `message_start`; see
    /// [`Completion::usage`]).
    ///
    /// # Default
    ///
    /// The counts of the [rule](crate#token-usage).
    pub fn usage(mut self, usage: TokenUsage) -> Self {
        self.completion.usage = usage;
        self
    }
}

interval_setter!(EndlessText);

/// A JSON body that never ends: the `endless_json` step.
///
/// Whether or not the request asked for a stream: a 200 `application/json` with a chunked body
/// that opens the answer object — OpenAI `{"id":"chatcmpl-..","object":"chat.completion",
/// "created":..,"model":"..",`, Anthropic `{"id":"msg_..","type":"message","role":"assistant",
/// "model":"..",` — and then sends a newline every [`interval_ms`](EndlessJson::interval_ms) (valid
/// JSON whitespace), until the client hangs up or the server stops. A very large interval makes it
/// a stall after the opening.
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let trickle = Step::endless_json();
/// let stalled = Step::endless_json().interval_ms(3_600_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndlessJson {
    pub(crate) interval_ms: u64,
    pub(crate) headers: Vec<(String, String)>,
}

impl EndlessJson {
    pub(super) fn new() -> Self {
        Self { interval_ms: crate::DEFAULT_INTERVAL_MS, headers: Vec::new() }
    }
}

interval_setter!(EndlessJson);

header_setter!(EndlessJson);
