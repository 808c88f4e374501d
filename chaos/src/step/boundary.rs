//! The steps of the trust boundary: a 200 of the wrong content type, a redirect, a 200 that is
//! not an answer, a head a client must refuse.

use super::*;

/// A 200 that is not a model's answer: the `wrong_content_type` step, e.g. the login page of a
/// captive portal or an SSO proxy in front of the API.
///
/// Whether or not the request asked for a stream: status 200, `content-type`
/// [`content_type`](WrongContentType::content_type), a `content-length` and
/// [`body`](WrongContentType::body).
///
/// # Examples
///
/// ```
/// use agentic_chaos::Step;
///
/// let login_page = Step::wrong_content_type();
/// let plain = Step::wrong_content_type().content_type("text/plain").body("upstream said no");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongContentType {
    pub(crate) content_type: String,
    pub(crate) body: String,
    pub(crate) headers: Vec<(String, String)>,
}

impl WrongContentType {
    /// The content type sent unless set.
    pub const DEFAULT_CONTENT_TYPE: &str = "text/html; charset=utf-8";

    /// The body sent unless set: a small HTML login page.
    pub const DEFAULT_BODY: &str = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n\
        <body><h1>Sign in to continue</h1>\n\
        <form method=\"post\" action=\"/login\"><input name=\"username\"> \
        <input name=\"password\" type=\"password\"> <button>Sign in</button></form>\n\
        </body></html>\n";

    pub(super) fn new() -> Self {
        Self {
            content_type: Self::DEFAULT_CONTENT_TYPE.to_owned(),
            body: Self::DEFAULT_BODY.to_owned(),
            headers: Vec::new(),
        }
    }

    /// The `content-type` header.
    ///
    /// # Default
    ///
    /// [`WrongContentType::DEFAULT_CONTENT_TYPE`], `text/html; charset=utf-8`.
    ///
    /// # Panics
    ///
    /// If the value contains CR, LF or NUL.
    pub fn content_type(mut self, content_type: impl Into<String>) -> Self {
        let content_type = content_type.into();
        check_header("content-type", &content_type);
        self.content_type = content_type;
        self
    }

    /// The body.
    ///
    /// # Default
    ///
    /// [`WrongContentType::DEFAULT_BODY`], a small HTML login page.
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.body = body.into();
        self
    }
}

/// A redirect: the `redirect` step, to see that a client does not follow a model endpoint's
/// redirect blindly (to another host, with its key, or round and round).
///
/// Whether or not the request asked for a stream: [`status`](Redirect::status), a `location`
/// header, `content-length: 0` and no body. Without a [`location`](Redirect::location) the
/// `location` is the request's own URL on this server, `http://127.0.0.1:PORT<request path>` (the
/// path without its query): a redirect loop. Every request, a redirected one too, consumes a step
/// as usual, so a loop needs `times` (or the default step) to go on.
///
/// # Examples
///
/// ```
/// use agentic_chaos::{Scenario, Step};
///
/// let elsewhere = Step::redirect().status(308).location("http://127.0.0.1:9/v1/messages");
/// let round_and_round = Scenario::new().then_times(20, Step::redirect());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub(crate) status: u16,
    pub(crate) location: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
}

impl Redirect {
    /// The status sent unless set: 307 Temporary Redirect, which a client must repeat with the
    /// same method and body.
    pub const DEFAULT_STATUS: u16 = 307;

    /// The statuses a redirect may have (a scenario file refuses any other).
    pub const STATUSES: [u16; 5] = [301, 302, 303, 307, 308];

    pub(super) fn new() -> Self {
        Self { status: Self::DEFAULT_STATUS, location: None, headers: Vec::new() }
    }

    /// The status: 301, 302, 303, 307 or 308. A scenario file refuses any other; here the status
    /// is sent as given.
    ///
    /// # Default
    ///
    /// [`Redirect::DEFAULT_STATUS`], 307.
    pub fn status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    /// The `location` header: an absolute URL (`scheme://...`). A scenario file refuses any
    /// other; here it is sent as given.
    ///
    /// # Default
    ///
    /// The request's own URL on this server: a redirect loop.
    ///
    /// # Panics
    ///
    /// If the URL contains CR, LF or NUL.
    pub fn location(mut self, url: impl Into<String>) -> Self {
        let url = url.into();
        check_header("location", &url);
        self.location = Some(url);
        self
    }
}

/// Whether `url` is absolute: a scheme (a letter, then letters, digits, `+`, `-` or `.`), then `://`.
pub(crate) fn absolute_url(url: &str) -> bool {
    url.split_once("://").is_some_and(|(scheme, _)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

/// The shape of a 200 that is not an answer: the `not_an_answer` step, whose scenario field
/// `shape` takes the names below.
///
/// Each is served the same whether or not the request asked for a stream, with the request id
/// header, and then the connection stays open for the next request. `<model>` is the request's
/// `model`.
///
/// | shape | JSON | content type | body |
/// | --- | --- | --- | --- |
/// | [`JsonObject`](NotAnAnswer::JsonObject) (the default) | `"json_object"` | `application/json` | `{}` |
/// | [`StatusOk`](NotAnAnswer::StatusOk) | `"status_ok"` | `application/json` | `{"status":"ok"}`, a health check's answer |
/// | [`JsonArray`](NotAnAnswer::JsonArray) | `"json_array"` | `application/json` | `[]` |
/// | [`NoChoices`](NotAnAnswer::NoChoices) | `"no_choices"` | `application/json` | OpenAI `{"id":..,"object":"chat.completion","created":..,"model":<model>,"choices":[]}`; Anthropic `{"id":..,"type":"message","role":"assistant","model":<model>,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{..}}` (0 output tokens) |
/// | [`ModelsList`](NotAnAnswer::ModelsList) | `"models_list"` | `application/json` | `{"object":"list","data":[{"id":<model>,"object":"model","owned_by":"chaos"}]}`, what `GET /v1/models` answers |
/// | [`DoneOnly`](NotAnAnswer::DoneOnly) | `"done_only"` | `text/event-stream` | OpenAI `data: [DONE]` alone; Anthropic `message_start` then `message_stop` (no content block, no `message_delta`) |
/// | [`EmptyChunk`](NotAnAnswer::EmptyChunk) | `"empty_chunk"` | `text/event-stream` | OpenAI one chunk whose delta is `{"role":"assistant"}` alone (`finish_reason: null`), then `data: [DONE]`; Anthropic `message_start`, `content_block_start` (text `""`), `content_block_stop`, `message_stop`, no stop reason |
///
/// JSON bodies have a `content-length`; event streams are chunked and end cleanly.
///
/// # Examples
///
/// ```
/// use agentic_chaos::{NotAnAnswer, Step, StepKind};
///
/// let step = Step::not_an_answer(NotAnAnswer::ModelsList);
/// assert_eq!(step.kind(), StepKind::NotAnAnswer);
/// assert_eq!(NotAnAnswer::default(), NotAnAnswer::JsonObject);
/// assert_eq!(NotAnAnswer::DoneOnly.as_str(), "done_only");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum NotAnAnswer {
    /// `{}`.
    #[default]
    JsonObject,
    /// `{"status":"ok"}`.
    StatusOk,
    /// `[]`.
    JsonArray,
    /// The provider's answer object with no choice (OpenAI) or no content block (Anthropic).
    NoChoices,
    /// A list of models.
    ModelsList,
    /// A stream that ends at once: OpenAI `[DONE]`, Anthropic `message_start` + `message_stop`.
    DoneOnly,
    /// A stream whose one content chunk or block is empty.
    EmptyChunk,
}

impl NotAnAnswer {
    /// Every shape, in the order of the table above.
    pub const ALL: [Self; 7] = [
        Self::JsonObject,
        Self::StatusOk,
        Self::JsonArray,
        Self::NoChoices,
        Self::ModelsList,
        Self::DoneOnly,
        Self::EmptyChunk,
    ];

    /// The name used in scenario files, e.g. `"models_list"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::JsonObject => "json_object",
            Self::StatusOk => "status_ok",
            Self::JsonArray => "json_array",
            Self::NoChoices => "no_choices",
            Self::ModelsList => "models_list",
            Self::DoneOnly => "done_only",
            Self::EmptyChunk => "empty_chunk",
        }
    }
}

/// The shape of a response head that a client must refuse: the `bad_head` step, whose scenario
/// field `shape` takes the names below.
///
/// Whether or not the request asked for a stream, the server sends the head, then closes the
/// socket. The well-formed heads declare `content-type: application/json`, `content-length: 0`
/// and `connection: close`, with the request id header.
///
/// | shape | JSON | head |
/// | --- | --- | --- |
/// | [`ManyHeaders`](BadHead::ManyHeaders) (the default) | `"many_headers"` | a 200 with [`BadHead::EXTRA_HEADERS`] (200) extra headers `x-chaos-1: 1` to `x-chaos-200: 200`, past the 100 that common clients (hyper, so reqwest) accept |
/// | [`HugeHeader`](BadHead::HugeHeader) | `"huge_header"` | a 200 with one header `x-chaos-huge` whose value is [`BadHead::HUGE_HEADER_BYTES`] (1 MiB) of `a`, past the 400 KiB or so that hyper (so reqwest) buffers for a head |
/// | [`GarbageStatus`](BadHead::GarbageStatus) | `"garbage_status"` | the status line `HTTP/1.1 abc not-a-status`, then the usual headers |
///
/// # Examples
///
/// ```
/// use agentic_chaos::{BadHead, Step, StepKind};
///
/// assert_eq!(Step::bad_head(BadHead::HugeHeader).kind(), StepKind::BadHead);
/// assert_eq!(BadHead::default(), BadHead::ManyHeaders);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BadHead {
    /// A 200 with 200 extra headers.
    #[default]
    ManyHeaders,
    /// A 200 with a header of 1 MiB.
    HugeHeader,
    /// A status line whose status is not a number.
    GarbageStatus,
}

impl BadHead {
    /// Every shape, in the order of the table above.
    pub const ALL: [Self; 3] = [Self::ManyHeaders, Self::HugeHeader, Self::GarbageStatus];

    /// How many extra headers [`ManyHeaders`](BadHead::ManyHeaders) sends.
    pub const EXTRA_HEADERS: usize = 200;

    /// The length of the value [`HugeHeader`](BadHead::HugeHeader) sends, in bytes: 1 MiB.
    pub const HUGE_HEADER_BYTES: usize = 1024 * 1024;

    /// The name used in scenario files, e.g. `"huge_header"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ManyHeaders => "many_headers",
            Self::HugeHeader => "huge_header",
            Self::GarbageStatus => "garbage_status",
        }
    }
}

header_setter!(WrongContentType, Redirect);
