//! The seam a wire implements: the [`Render`] trait, and the [`Exchange`] through which the server
//! hands a request's wire-neutral facts to it.

use serde_json::Value;

use super::shared::{ErrorParts, KEEP_ALIVE, status_of_type};
use super::{Asked, Names, NotAnAnswerBody, Route};
use crate::step::{
    BareJsonError, Completion, HttpError, MalformedShape, NotAnAnswer, Preset, SseError, argument_pieces,
};
use crate::usage::TokenUsage;

/// One wire's routing, reading and rendering: the manual for adding a wire.
///
/// Every method returns whole bytes to send (an SSE event ends with its blank line; see
/// [`event`](super::shared::event) and [`data`](super::shared::data)); the server frames them in HTTP chunks and decides when each goes out.
/// A method never fails: a request body that is not what the wire expects reads as an empty
/// [`Asked`], and every answer renders.
///
/// **Streams, and what "truncated" means.** A streamed answer is [`preamble`](Self::preamble),
/// then one [`chunk`](Self::chunk) per text piece, then [`epilogue`](Self::epilogue). The finish
/// (OpenAI `finish_reason`, Anthropic `message_delta`'s `stop_reason`, Gemini's `finishReason`,
/// Responses' `response.completed`) must be in the epilogue and nowhere before it: a `truncate`
/// step ends the body after chunk *k*, so the client sees a stream that stops before the event
/// carrying the finish, which it must treat as cut, never as a short answer. `drop_stream` closes
/// the connection at the same point; `sse_error` sends [`error_event`](Self::error_event) there
/// instead of the rest.
pub(crate) trait Render: Sync {
    // Request side.

    /// The wire's fixed names: its label, path, base path and headers.
    fn names(&self) -> &'static Names;

    /// What `path` (without its query) says, if this wire serves it; by default, whether it is
    /// [`Names::path`].
    fn route(&self, path: &str) -> Option<Route> {
        (path == self.names().path).then(Route::default)
    }

    /// The path a client posts a request for `model` to; by default [`Names::path`].
    fn request_path(&self, _model: &str, _stream: bool) -> String {
        self.names().path.to_owned()
    }

    /// The facts of a request: `body` is its JSON (`None` when it is not JSON), `route` what its
    /// path said.
    fn read<'a>(&self, body: Option<&'a Value>, route: Route) -> Asked<'a>;

    // Error side.

    /// The error the API sends with `status` (the status table), or for the context-overflow and
    /// bad-key presets its own; the step's `type`, `message`, `code` and `param` override it.
    fn error_parts(&self, status: u16, preset: Preset) -> ErrorParts;

    /// The error of a mid-stream `sse_error` event, before the step's overrides.
    fn stream_error_parts(&self) -> ErrorParts;

    /// The error of a `bare_json_error` line (the API's answer to a bad key), before overrides.
    fn bare_error_parts(&self) -> ErrorParts;

    /// The HTTP status the API sends an error of `error_type` with: the status an `sse_error`
    /// gets when the request did not ask for a stream.
    fn status_of(&self, error_type: &str) -> u16 {
        status_of_type(error_type)
    }

    /// The error object as the API wraps it (body of an HTTP error, data of an error event).
    fn error_body(&self, parts: &ErrorParts) -> Value;

    /// The payload of a `malformed_chunk` when the step gives none: a text event cut off
    /// mid-JSON.
    fn default_malformed(&self) -> &'static str;

    /// The payload of a `malformed_chunk` of shape `unreadable` when the step gives none: a text
    /// event that is valid JSON with one field of a type no client of the wire reads.
    fn default_unreadable(&self) -> &'static str;

    // Answer side.

    /// The stream's opening event alone, before any content (what a hang after the start sends).
    fn opening(&self, x: &Exchange) -> String;

    /// The events before the first text chunk.
    ///
    /// **A forced call.** With [`Exchange::answer_tool`] (the request forces a tool call), the
    /// text is not the answer's text but the arguments of one call of that tool, as given (a
    /// typed answer's JSON): the preamble opens the call, each chunk carries a piece of its
    /// arguments (a wire whose calls come whole sends them in the epilogue instead), the epilogue
    /// finishes it as a tool call (or as cut by the token limit), and [`full_body`](Self::full_body)
    /// is the call.
    fn preamble(&self, x: &Exchange) -> Vec<String>;

    /// The event carrying text chunk number `i` (from 0).
    fn chunk(&self, x: &Exchange, i: usize, text: &str) -> String;

    /// The events after the last chunk of `text` (the whole text the chunks carried): the finish
    /// (see the trait docs), the usage of `output_tokens` counted chunks (unless pinned:
    /// [`Exchange::output_tokens`]), and the end marker if the wire has one.
    fn epilogue(&self, x: &Exchange, text: &str, output_tokens: u64) -> Vec<String>;

    /// A mid-stream error event.
    fn error_event(&self, x: &Exchange, parts: &ErrorParts) -> String;

    /// One keep-alive of a flood; `ping` asks for the wire's own ping event if it has one (else
    /// the SSE comment [`KEEP_ALIVE`]).
    fn keep_alive(&self, _ping: bool) -> String {
        KEEP_ALIVE.to_owned()
    }

    /// An event whose data is `data` (not JSON), under the event name the stream uses for text.
    fn malformed(&self, data: &str) -> String;

    /// Every event of a streamed [`Rich`] answer, its finish included (a tool call's when it has
    /// calls), each marked as a chunk (what `after_chunks` counts: one per reasoning, text and
    /// argument piece, in that order) or not. A fault falls before chunk *k*, or after the last
    /// chunk and before the events that follow it.
    fn rich_events(&self, x: &Exchange, a: &Rich<'_>) -> Vec<Sent>;

    /// A [`Rich`] answer as one JSON body.
    fn rich_body(&self, x: &Exchange, a: &Rich<'_>) -> String;

    /// The whole answer `text` as one JSON body, with its usage of `output_tokens` counted.
    fn full_body(&self, x: &Exchange, text: &str, output_tokens: u64) -> String;

    /// A whole answer's JSON up to and with the comma after its model: what an endless JSON body
    /// sends before its whitespace.
    fn json_opening(&self, x: &Exchange) -> String;

    /// A whole answer up to the opening quote of its text: what an endless text body sends before
    /// the text.
    fn text_opening(&self, x: &Exchange) -> String;

    /// The wire's own shapes of `not_an_answer`: `no_choices` (an answer with no content),
    /// `done_only` (a stream of its end alone) and `empty_chunk` (a stream whose content is
    /// empty). The other shapes are the same on every wire.
    fn empty_answer(&self, x: &Exchange, shape: NotAnAnswer) -> NotAnAnswerBody;

    // Test side.

    /// The reference reader: the text of a body this wire rendered (a stream, or a whole JSON
    /// answer when its first byte is `{`), and whether the answer finished with the end of the
    /// turn.
    fn read_back(&self, body: &[u8]) -> (String, bool);
}
/// One request's answer in its wire format: the wire-neutral facts, and the wire that renders
/// them (each method below hands them to it).
#[derive(Clone)]
pub(crate) struct Exchange {
    pub(crate) render: &'static dyn Render,
    pub(crate) seq: u64,
    /// The request's model, echoed in every answer.
    pub(crate) model: String,
    pub(crate) created: u64,
    /// The request's input tokens: the step's pinned count, or the words of the prompt.
    pub(crate) input_tokens: u64,
    /// The step's pinned counts: the output tokens when pinned, and the cache counts.
    pub(crate) usage: TokenUsage,
    /// See [`Asked::usage_asked`].
    pub(crate) usage_asked: bool,
    /// The tool whose arguments the answer's text is sent as, when the request forces a tool
    /// call (see [`Render::preamble`]).
    pub(crate) answer_tool: Option<String>,
    /// The answer ends as one the token limit cut: OpenAI `finish_reason: "length"`, Anthropic
    /// `stop_reason: "max_tokens"`.
    pub(crate) cut_by_token_limit: bool,
}

impl Exchange {
    /// The request id header and its value for this answer, if the wire sends one.
    pub(crate) fn request_id_header(&self) -> Option<(&'static str, String)> {
        self.render.names().request_id_header.map(|name| (name, format!("req_chaos{:012}", self.seq)))
    }

    /// The output tokens of an answer of `counted` chunks (by the rule), unless the step pins them.
    pub(crate) fn output_tokens(&self, counted: u64) -> u64 {
        self.usage.output_tokens.unwrap_or(counted)
    }

    /// The parts of an `http_error`, `context_overflow` or `invalid_api_key` body.
    pub(crate) fn http_error_parts(&self, e: &HttpError, preset: Preset) -> ErrorParts {
        let mut parts = self.render.error_parts(e.status, preset).overridden(&e.error_type, &e.message, &e.code);
        if e.param.is_some() {
            parts.param.clone_from(&e.param);
        }
        parts
    }

    /// The parts of an `sse_error` event.
    pub(crate) fn sse_error_parts(&self, e: &SseError) -> ErrorParts {
        self.render.stream_error_parts().overridden(&e.error_type, &e.message, &e.code)
    }

    /// The parts of a `bare_json_error` line: the provider's answer to a bad key unless set.
    pub(crate) fn bare_json_error_parts(&self, e: &BareJsonError) -> ErrorParts {
        self.render.bare_error_parts().overridden(&e.error_type, &e.message, &e.code)
    }

    /// The HTTP status that fits an error type, for an `sse_error` answered without streaming.
    pub(crate) fn status_for_type(&self, error_type: &str) -> u16 {
        self.render.status_of(error_type)
    }

    /// The error object as the provider wraps it.
    pub(crate) fn error_json(&self, parts: &ErrorParts) -> Value {
        self.render.error_body(parts)
    }

    /// The payload of a malformed chunk of `shape` when none is given.
    pub(crate) fn default_malformed(&self, shape: MalformedShape) -> &'static str {
        match shape {
            MalformedShape::Cut => self.render.default_malformed(),
            MalformedShape::Unreadable => self.render.default_unreadable(),
        }
    }

    /// See [`Render::opening`].
    pub(crate) fn opening(&self) -> String {
        self.render.opening(self)
    }

    /// See [`Render::preamble`].
    pub(crate) fn preamble(&self) -> Vec<String> {
        self.render.preamble(self)
    }

    /// See [`Render::chunk`].
    pub(crate) fn chunk(&self, i: usize, text: &str) -> String {
        self.render.chunk(self, i, text)
    }

    /// See [`Render::epilogue`].
    pub(crate) fn epilogue(&self, text: &str, output_tokens: u64) -> Vec<String> {
        self.render.epilogue(self, text, output_tokens)
    }

    /// See [`Render::error_event`].
    pub(crate) fn error_event(&self, parts: &ErrorParts) -> String {
        self.render.error_event(self, parts)
    }

    /// See [`Render::keep_alive`].
    pub(crate) fn keep_alive(&self, ping: bool) -> String {
        self.render.keep_alive(ping)
    }

    /// See [`Render::malformed`].
    pub(crate) fn malformed_event(&self, data: &str) -> String {
        self.render.malformed(data)
    }

    /// See [`Render::json_opening`].
    pub(crate) fn json_opening(&self) -> String {
        self.render.json_opening(self)
    }

    /// See [`Render::text_opening`].
    pub(crate) fn text_opening(&self) -> String {
        self.render.text_opening(self)
    }

    /// See [`Render::rich_events`].
    pub(crate) fn rich_events(&self, completion: &Completion) -> Vec<Sent> {
        self.render.rich_events(self, &Rich::of(completion, self.answer_tool.as_deref()))
    }

    /// See [`Render::rich_body`].
    pub(crate) fn rich_body(&self, completion: &Completion) -> String {
        self.render.rich_body(self, &Rich::of(completion, self.answer_tool.as_deref()))
    }

    /// See [`Render::full_body`].
    pub(crate) fn full_body(&self, text: &str, output_tokens: u64) -> String {
        self.render.full_body(self, text, output_tokens)
    }
}

/// One event of a streamed [`Rich`] answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sent {
    /// An event that carries no piece of the answer (an opening, a block's start or stop, the finish).
    Event(String),
    /// An event that carries one piece: of the reasoning, the text or a call's arguments (or, on a
    /// wire that sends a call whole, stands for one); the chunks `after_chunks` counts.
    Chunk(String),
}

impl Sent {
    /// The event's bytes, whether a chunk or not.
    pub(crate) fn into_string(self) -> String {
        match self {
            Self::Event(event) | Self::Chunk(event) => event,
        }
    }
}

/// An answer that streams more than text, wire-neutral: reasoning before its text, tool calls
/// after it (a `tool_use` step, a fault's answer with `reasoning` or `call`s). Cut into its
/// pieces here, so that every wire streams the same chunks.
pub(crate) struct Rich<'a> {
    /// The reasoning, whole, and its pieces (none without reasoning).
    pub(crate) reasoning: Option<&'a str>,
    pub(crate) reasoning_pieces: Vec<&'a str>,
    /// The text, whole, and its pieces (none when it is not streamed: a call's answer without text).
    pub(crate) text: &'a str,
    pub(crate) text_pieces: Vec<&'a str>,
    pub(crate) calls: Vec<RichCall<'a>>,
    /// The output tokens by the rule: one per text and argument piece.
    pub(crate) output_tokens: u64,
}

/// One tool call of a [`Rich`] answer.
pub(crate) struct RichCall<'a> {
    pub(crate) name: &'a str,
    /// The arguments as the JSON text the wire carries.
    pub(crate) arguments: String,
    /// That text cut into the streamed pieces.
    pub(crate) pieces: Vec<String>,
}

impl<'a> Rich<'a> {
    /// The answer `completion` streams; with `answer_tool` (a forced call) and no call of its own,
    /// its text is that tool's arguments, in the text's pieces.
    pub(crate) fn of(completion: &'a Completion, answer_tool: Option<&'a str>) -> Self {
        let mut calls: Vec<RichCall<'a>> = completion
            .calls
            .iter()
            .map(|(name, input)| RichCall {
                name,
                arguments: input.to_string(),
                pieces: argument_pieces(input, completion.argument_chunks),
            })
            .collect();
        let mut text_pieces: Vec<&str> = if completion.has_text() { completion.pieces().collect() } else { Vec::new() };
        if let (Some(name), true) = (answer_tool, calls.is_empty()) {
            let pieces = std::mem::take(&mut text_pieces).into_iter().map(str::to_owned).collect();
            calls.push(RichCall { name, arguments: completion.text.clone(), pieces });
        }
        let arguments: usize = calls.iter().map(|call| call.pieces.len()).sum();
        Self {
            reasoning: completion.reasoning.as_deref(),
            reasoning_pieces: completion.reasoning_pieces().collect(),
            text: if text_pieces.is_empty() { "" } else { &completion.text },
            output_tokens: (text_pieces.len() + arguments) as u64,
            text_pieces,
            calls,
        }
    }

    /// Whether the answer is a tool call.
    pub(crate) fn tool_use(&self) -> bool {
        !self.calls.is_empty()
    }
}

#[cfg(test)]
pub(crate) mod fixture {
    //! What each wire's unit tests share: an exchange, and the check that a wire reads back what
    //! it renders.

    use super::{Exchange, Render};
    use crate::step::Completion;
    use crate::usage::TokenUsage;

    /// Request 3 for model `m`, 2 input tokens, nothing pinned.
    pub(crate) fn exchange(render: &'static dyn Render, answer_tool: Option<&str>) -> Exchange {
        Exchange {
            render,
            seq: 3,
            model: "m".to_owned(),
            created: 7,
            input_tokens: 2,
            usage: TokenUsage::default(),
            usage_asked: true,
            answer_tool: answer_tool.map(str::to_owned),
            cut_by_token_limit: false,
        }
    }

    /// `render`'s reader finds the text of a whole stream, finished; of a stream cut before its
    /// epilogue, unfinished; and of a whole body, finished.
    pub(crate) fn reads_back_what_it_renders(render: &'static dyn Render) {
        let x = exchange(render, None);
        let completion = Completion::new("one two three");
        let mut stream: Vec<String> = x.preamble();
        stream.extend(completion.pieces().enumerate().map(|(i, piece)| x.chunk(i, piece)));
        let cut = stream.concat();
        stream.extend(x.epilogue("one two three", 3));
        let text = "one two three".to_owned();
        assert_eq!(render.read_back(stream.concat().as_bytes()), (text.clone(), true));
        assert_eq!(render.read_back(cut.as_bytes()), (text.clone(), false), "truncated: no finish");
        assert_eq!(render.read_back(x.full_body(&text, 3).as_bytes()), (text, true));
    }
}
