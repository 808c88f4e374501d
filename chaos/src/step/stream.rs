//! The faults of a stream: a drop or a truncation after some chunks, a stall, a hang, a
//! malformed chunk.

use super::*;

/// How an [`Interrupt`] ends the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InterruptKind {
    Drop,
    Truncate,
}

/// A stream cut short after some chunks: the `drop_stream` and `truncate` steps.
///
/// A non-streaming request gets the headers (with the full `content-length`) and half of the JSON
/// body: `drop_stream` then cuts the connection, `truncate` declares only that half and ends
/// cleanly, so the client gets a body that is not valid JSON.
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let cut = Step::drop_stream(2).text("one two three four");
/// let short = Step::truncate(1).chunks(4);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupt {
    pub(crate) after_chunks: u32,
    pub(crate) kind: InterruptKind,
    pub(crate) completion: Completion,
}

impl Interrupt {
    pub(super) fn new(after_chunks: u32, kind: InterruptKind) -> Self {
        Self { after_chunks, kind, completion: Completion::default() }
    }
}

completion_setters!(Interrupt);

/// A pause: the `stall` step. After the pause the answer goes on as in an `ok` step.
///
/// By default the pause comes before the headers; with [`after_chunks`](Stall::after_chunks) it
/// comes after that many text chunks (a non-streaming request then gets its headers, the pause,
/// and its body).
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let slow_start = Step::stall(20);
/// let slow_middle = Step::stall(20).after_chunks(2).text("one two three");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stall {
    pub(crate) ms: u64,
    pub(crate) after_chunks: Option<u32>,
    pub(crate) completion: Completion,
}

impl Stall {
    pub(super) fn new(ms: u64) -> Self {
        Self { ms, after_chunks: None, completion: Completion::default() }
    }

    /// Pause after `k` text chunks instead of before the headers.
    pub fn after_chunks(mut self, k: u32) -> Self {
        self.after_chunks = Some(k);
        self
    }
}

completion_setters!(Stall);
cut_setter!(Stall);

/// Silence until the client hangs up or the server stops: the `hang` step.
///
/// By default nothing is sent, not even the headers. Later points:
///
/// | builder | JSON | sent before the silence |
/// | --- | --- | --- |
/// | [`in_headers`](Hang::in_headers) | `"at": "in_headers"` | the status line and every header line of the answer, but not the blank line that ends the head |
/// | [`after_headers`](Hang::after_headers) | `"at": "after_headers"` | the whole head (a 200 event stream, or `application/json` with the full `content-length` when not streamed), no body byte |
/// | [`after_start`](Hang::after_start) | `"at": "after_start"` | the head and the stream's opening event alone, then nothing at all, not even a ping: OpenAI a chunk whose delta is `{"role":"assistant"}`, Anthropic `message_start` (not streamed: the head, chunked, and the answer object's opening, as [`EndlessJson`] sends it) |
/// | [`after_chunks(k)`](Hang::after_chunks) | `"after_chunks": k` | the head, the stream's first events and `k` text chunks (not streamed: the head) |
///
/// Use it to test timeouts and deadlines.
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let silent = Step::hang();
/// let half_a_head = Step::hang().in_headers();
/// let no_body = Step::hang().after_headers();
/// let started = Step::hang().after_start();
/// let stuck = Step::hang().after_chunks(1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hang {
    pub(crate) at: HangAt,
    pub(crate) completion: Completion,
}

/// Where a [`Hang`] falls silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HangAt {
    BeforeHeaders,
    InHeaders,
    AfterHeaders,
    AfterStart,
    AfterChunks(u32),
}

impl Hang {
    pub(super) fn new() -> Self {
        Self { at: HangAt::BeforeHeaders, completion: Completion::default() }
    }

    /// Hang after the headers and `k` text chunks instead of before the headers.
    pub fn after_chunks(mut self, k: u32) -> Self {
        self.at = HangAt::AfterChunks(k);
        self
    }

    /// Hang in the middle of the head: after the status line and the header lines, before the
    /// blank line that ends the head.
    pub fn in_headers(mut self) -> Self {
        self.at = HangAt::InHeaders;
        self
    }

    /// Hang after the whole head, before the first byte of the body.
    pub fn after_headers(mut self) -> Self {
        self.at = HangAt::AfterHeaders;
        self
    }

    /// Hang after the head and the stream's opening event (OpenAI the role chunk, Anthropic
    /// `message_start`), before any content block or ping: the silence of a stream that has
    /// started and sends no heartbeat. [`after_chunks(0)`](Hang::after_chunks) sends Anthropic's
    /// `content_block_start` and `ping` too.
    pub fn after_start(mut self) -> Self {
        self.at = HangAt::AfterStart;
        self
    }
}

completion_setters!(Hang);

/// A chunk a client cannot read in the middle of the stream: the `malformed_chunk` step.
///
/// After `after_chunks` text chunks the stream carries a text chunk cut off mid-JSON — OpenAI
/// `data: {"id":"chatcmpl-chaos","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":`,
/// Anthropic `event: content_block_delta` + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`
/// — then goes on to its normal end. A non-streaming request gets a 200 whose body is that text.
///
/// With [`shape`](Malformed::shape) [`MalformedShape::Unreadable`] the chunk is valid JSON instead,
/// a text event with one field of a type no client of the wire reads: the same on every request,
/// as a format a client does not read is (not a corrupted stream). See [`MalformedShape`].
///
/// # Examples
///
/// ```
/// use agentic_chaos::{MalformedShape, Step};
///
/// let garbled = Step::malformed_chunk(1).data("{not json");
/// let foreign = Step::malformed_chunk(1).shape(MalformedShape::Unreadable);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub(crate) after_chunks: u32,
    pub(crate) completion: Completion,
    pub(crate) data: Option<String>,
    pub(crate) shape: MalformedShape,
}

/// What a `malformed_chunk` sends when it gives no `data`: the scenario field `shape`.
///
/// | shape | JSON | the chunk |
/// | --- | --- | --- |
/// | [`Cut`](MalformedShape::Cut) (the default) | `"cut"` | a text event cut off mid-JSON (see [`Malformed`]) |
/// | [`Unreadable`](MalformedShape::Unreadable) | `"unreadable"` | a whole text event, valid JSON with one field of another type: OpenAI `{"id":"chatcmpl-chaos","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":{"value":"Hello"}}}]}` (`content` an object); Anthropic `{"type":"content_block_delta","index":"first","delta":{"type":"text_delta","text":"Hello"}}` (`index` a string); Gemini `{"candidates":[{"index":0,"content":{"parts":[{"text":{"value":"Hello"}}]}}]}` (`text` an object); Responses `{"type":"response.output_text.delta","output_index":"first","content_index":0,"delta":"Hello"}` (`output_index` a string) |
///
/// # Examples
///
/// ```
/// use agentic_chaos::MalformedShape;
///
/// assert_eq!(MalformedShape::default(), MalformedShape::Cut);
/// assert_eq!(MalformedShape::Unreadable.as_str(), "unreadable");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MalformedShape {
    /// A text event cut off mid-JSON: a corrupted stream.
    #[default]
    Cut,
    /// Valid JSON of a shape no client of the wire reads.
    Unreadable,
}

impl MalformedShape {
    /// Every shape, in the order of the table above.
    pub const ALL: [Self; 2] = [Self::Cut, Self::Unreadable];

    /// The name used in scenario files, e.g. `"unreadable"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Cut => "cut",
            Self::Unreadable => "unreadable",
        }
    }
}

impl Malformed {
    pub(super) fn new(after_chunks: u32) -> Self {
        Self { after_chunks, completion: Completion::default(), data: None, shape: MalformedShape::default() }
    }

    /// What the chunk is when no [`data`](Malformed::data) is given.
    ///
    /// # Default
    ///
    /// [`MalformedShape::Cut`].
    pub fn shape(mut self, shape: MalformedShape) -> Self {
        self.shape = shape;
        self
    }

    /// The text after `data: ` (one line).
    ///
    /// # Default
    ///
    /// A text chunk of the request's wire format, cut off mid-JSON (see above).
    ///
    /// # Panics
    ///
    /// If the text contains CR or LF (it would no longer be one line).
    pub fn data(mut self, data: impl Into<String>) -> Self {
        let data = data.into();
        assert!(!data.contains(['\r', '\n']), "the malformed chunk's data must be one line, without CR or LF");
        self.data = Some(data);
        self
    }
}

completion_setters!(Malformed);
cut_setter!(Malformed);
