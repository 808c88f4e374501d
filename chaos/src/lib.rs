//! A fault-injecting HTTP server that speaks four model APIs: OpenAI's Chat Completions and
//! Responses, Anthropic's Messages and Google's Gemini.
//!
//! `agentic-chaos` answers `POST /v1/chat/completions` (OpenAI-compatible), `POST /v1/messages`
//! (Anthropic), `POST /v1beta/models/{model}:streamGenerateContent` and `:generateContent`
//! (Gemini) and `POST /v1/responses` (OpenAI's Responses) on 127.0.0.1 ([`WireFormat`]; each
//! wire's module documents its shapes), streamed (SSE) or as one JSON body, and fails on purpose,
//! request by request, as a [`Scenario`] says: HTTP errors with the
//! provider's body and headers, a socket closed before the headers, a stream dropped or truncated
//! mid-way, an SSE error event, a stall, a hang (before, in or after the headers, or mid-stream),
//! a malformed chunk, a context overflow, a bad key, an error that echoes the key, endless answers
//! (keep-alives, empty chunks, text, an error or JSON body that never ends), a 200 that is an
//! HTML page, and at the trust boundary a redirect, an error body that stalls, a 200 that is not an
//! answer, a head a client must refuse, a JSON error as a bare line on an event stream, and a
//! stream that falls silent after its first event. It can also answer with tool calls (the
//! `tool_use` step), on every wire, and it answers a request that forces a tool call as a real
//! model does ([forced tool choice](#forced-tool-choice)). A scenario can script each
//! [conversation](#conversations) on its own, so that concurrent clients do not take each
//! other's steps. Every
//! answer echoes the request's `model` and reports token usage as the real APIs do, by a
//! [rule](#token-usage) a test can compute by hand. It can simulate a model's
//! [context window](#context-window): a conversation larger than it gets the provider's
//! context-overflow answer, so a test can prove that a shortened conversation fits. It can play
//! scripted [outages](#outages): from one time to another every request gets a 503 (or any
//! step), so a test can watch a client fail over and recover. It can enforce a per-key
//! [rate limit](#rate-limits) (requests and tokens per minute) with the providers' own 429s and
//! rate-limit headers, so a test can watch a client pace itself. It journals
//! every request, so a test can assert how many calls a retry policy made and what each one carried
//! (including the names of the tools it offered, and the size of its conversation).
//!
//! ```
//! use agentic_chaos::{ChaosServer, Scenario, Step, StepKind};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let scenario = Scenario::new()
//!     .then(Step::http_error(429).retry_after_secs(2))
//!     .then_times(2, Step::drop_stream(3))
//!     .otherwise(Step::ok("fine"));
//! let server = ChaosServer::start(scenario).await?;
//! // Clients use server.openai_base_url() (http://127.0.0.1:PORT/v1)
//! // or server.anthropic_base_url() (http://127.0.0.1:PORT).
//!
//! // Any HTTP client will do; a raw one shows the bytes.
//! let mut socket = tokio::net::TcpStream::connect(server.addr()).await?;
//! let body = r#"{"model": "m", "messages": [], "stream": true}"#;
//! let request = format!(
//!     "POST /v1/chat/completions HTTP/1.1\r\nhost: chaos\r\ncontent-type: application/json\r\n\
//!      content-length: {}\r\nconnection: close\r\n\r\n{body}",
//!     body.len()
//! );
//! socket.write_all(request.as_bytes()).await?;
//! let mut response = String::new();
//! socket.read_to_string(&mut response).await?;
//! assert!(response.starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
//! assert!(response.contains("retry-after: 2\r\n"));
//! assert!(response.contains(r#""code":"rate_limit_exceeded""#));
//!
//! let journal = server.journal();
//! assert_eq!(journal[0].step.unwrap().kind, StepKind::HttpError);
//! # Ok(())
//! # }
//! ```
//!
//! # Steps
//!
//! Each request to a model endpoint consumes the next step (unless it is larger than the
//! [context window](#context-window)), of its own conversation's script when the scenario is
//! scripted [per conversation](#conversations); a step with `times: n` answers `n`
//! requests in a row; after the last step the `default` step (`ok` unless set) answers all further
//! requests. "Chunks" are the text chunks of the stream: OpenAI `chat.completion.chunk`s carrying
//! `delta.content` (the first also carries `"role": "assistant"`), Anthropic
//! `content_block_delta`s with `text_delta`s. A fault "after K chunks" comes after the first K
//! chunks of the step's text (after all of them if K is larger). With `reasoning`, the reasoning's
//! pieces (one per word) come first among the chunks; with `calls`, each call's argument pieces
//! come after the text's: K counts across all of them, the same on every wire, so a fault can fall
//! inside the reasoning or in the middle of a tool call. [`Step::chunk_count`] says how many chunks
//! a step streams.
//!
//! | kind | streamed (`"stream": true`) | not streamed |
//! | --- | --- | --- |
//! | `ok` | the full stream: OpenAI chunks, a `finish_reason: "stop"` chunk, (a usage chunk if `stream_options.include_usage`), `data: [DONE]`; Anthropic `message_start`, `content_block_start`, `ping`, `content_block_delta` × N, `content_block_stop`, `message_delta` (`end_turn`), `message_stop`; with `"stop": "length"` the answer ends as the token limit cuts one, `finish_reason: "length"` / `stop_reason: "max_tokens"`; with `reasoning`, the reasoning first (see the fields) | the whole answer as one JSON body (`chat.completion` / `message`), with the same stop reason |
//! | `http_error` | status, headers (`retry-after`, `retry-after-ms`, `x-should-retry`, any other) and the provider's error body (with `stated_limit`, the rate limit in it, as OpenRouter states it), see [`HttpError`] | same |
//! | `context_overflow` | the provider's real 400 body, see [`Step::context_overflow`] | same |
//! | `invalid_api_key` | the provider's real 401 body, see [`Step::invalid_api_key`] | same |
//! | `close_before_headers` | the request is read, then the socket closes without a byte | same |
//! | `drop_stream` | headers, K chunks, then the socket closes without the chunked body's end: a body error, not a clean end; with `calls`, K may fall in the middle of a call's arguments (so for `truncate`, `sse_error`, `malformed_chunk` and `stall`) | headers (full `content-length`), half the body, socket closed |
//! | `truncate` | headers, K chunks, then a clean end of the body, without the final events or `[DONE]` | half the body, declared as the whole (invalid JSON) |
//! | `sse_error` | K chunks, an error event (Anthropic `event: error` + `{"type":"error","error":{..}}`; OpenAI `data: {"error":{..}}`), a clean end | an HTTP error with that body, status by type, see [`SseError`] |
//! | `malformed_chunk` | K chunks, a `data:` line that is not JSON (or, with `shape` `"unreadable"`, valid JSON of a shape no client of the wire reads), then the rest of the stream as usual | a 200 whose body is that text |
//! | `stall` | a pause of `ms` before the headers (or after K chunks with `after_chunks`), then the answer of an `ok` step | the pause before the headers (or between headers and body) |
//! | `hang` | silence until the client hangs up or the server stops: before the headers; with `"at": "in_headers"` after the status line and header lines but before the blank line that ends the head; with `"at": "after_headers"` after the whole head; with `"at": "after_start"` after the stream's opening event alone (OpenAI the role chunk, Anthropic `message_start`: no content block, no ping); with `after_chunks` after K chunks. See [`Hang`] | same; after the headers (with the full `content-length`) with `after_chunks`; after the chunked head and the answer object's opening with `after_start` |
//! | `keep_alive_flood` | the headers, then `: keep-alive` SSE comments (Anthropic: `event: ping` events with `ping`) every `interval_ms`, nothing else, until the client hangs up; with `after_chunks` the stream's first events and K chunks come first. See [`KeepAliveFlood`] | a 200 `application/json` whose chunked body is a newline every interval |
//! | `empty_chunk_flood` | the stream's first events, K chunks, then valid chunks with empty text (OpenAI `delta.content: ""`, Anthropic `text_delta` with `text: ""`) every `interval_ms`, until the client hangs up. See [`EmptyChunkFlood`] | as `endless_json` |
//! | `endless_text` | the stream's first events, then the text's chunks over and over every `interval_ms`, never the final events, until the client hangs up. See [`EndlessText`] | a 200 `application/json` body that opens the answer and its text string, then sends the text over and over |
//! | `endless_json` | a 200 `application/json`, chunked, whose body opens the answer object and then sends a newline every `interval_ms`, until the client hangs up. See [`EndlessJson`] | same |
//! | `wrong_content_type` | a 200 with `content_type` (`text/html; charset=utf-8`) and `body` (a small HTML login page). See [`WrongContentType`] | same |
//! | `redirect` | `status` (307) with a `location` (the request's own URL, `http://127.0.0.1:PORT/v1/...`: a loop), `content-length: 0`, no body. See [`Redirect`] | same |
//! | `not_an_answer` | a 200 that is well formed and not an answer, by `shape`: `{}`, `{"status":"ok"}`, `[]`, the answer object without choices or content, a list of models (JSON); a stream of `[DONE]` only or of an empty chunk (event streams). See [`NotAnAnswer`] | same |
//! | `bad_head` | a head a client must refuse, by `shape`: a 200 with 200 extra headers, a 200 with a header of 1 MiB, or the status line `HTTP/1.1 abc not-a-status`; then the socket closes. See [`BadHead`] | same |
//! | `bare_json_error` | a 200 `text/event-stream` whose body is the provider's JSON error (a bad key) as one bare line, no `data:` nor `event:`, then a clean end. See [`BareJsonError`] | same |
//! | `tool_use` | a complete answer whose content is tool calls: OpenAI `delta.tool_calls[{index, id, type: "function", function: {name, arguments}}]` chunks (each call's arguments split over several chunks), `finish_reason: "tool_calls"`, `[DONE]`; Anthropic `content_block_start` with `{"type": "tool_use", "id", "name", "input": {}}`, `input_json_delta` chunks of `partial_json`, `content_block_stop`, `message_delta` with `stop_reason: "tool_use"`; an optional text comes first. See [`ToolUse`]; with `reasoning`, the reasoning first | the whole answer: OpenAI `message.tool_calls` and `finish_reason: "tool_calls"`, Anthropic `tool_use` content blocks and `stop_reason: "tool_use"` |
//!
//! # Scenario files
//!
//! A scenario file is a JSON object with `steps` (a list, may be empty), an optional `default`
//! step, an optional `context_window` (an integer ≥ 1, in bytes: see
//! [Context window](#context-window)), optional `outages` (see [Outages](#outages)), an optional
//! `rate_limit` (see [Rate limits](#rate-limits)) and an optional `per_conversation` (`true`: each
//! conversation has its own script, see [Conversations](#conversations)). Every step is an object with `kind` and the fields that kind takes; an unknown field, or a
//! field the kind does not take, is an error naming the file and the field
//! ([`ScenarioError`]).
//!
//! ```
//! # use agentic_chaos::Scenario;
//! let scenario = Scenario::from_json_str(r#"
//! {
//!   "steps": [
//!     {"kind": "http_error", "status": 429, "retry_after": 2, "times": 2},
//!     {"kind": "http_error", "status": 529, "retry_after_ms": 150, "x_should_retry": true,
//!      "headers": {"anthropic-ratelimit-requests-remaining": "0"}},
//!     {"kind": "http_error", "status": 500, "error_type": "api_error", "message": ""},
//!     {"kind": "http_error", "status": 502, "body": "<html>Bad Gateway</html>",
//!      "headers": {"content-type": "text/html"}},
//!     {"kind": "close_before_headers"},
//!     {"kind": "drop_stream", "after_chunks": 3, "text": "one two three four five"},
//!     {"kind": "truncate", "after_chunks": 1, "chunks": 4},
//!     {"kind": "sse_error", "after_chunks": 2, "error_type": "overloaded_error", "message": "Overloaded"},
//!     {"kind": "malformed_chunk", "after_chunks": 1, "data": "{not json"},
//!     {"kind": "stall", "ms": 20, "text": "{\"total\": 12", "stop": "length"},
//!     {"kind": "stall", "ms": 20, "after_chunks": 2},
//!     {"kind": "hang", "after_chunks": 1},
//!     {"kind": "context_overflow"},
//!     {"kind": "invalid_api_key", "times": 3},
//!     {"kind": "tool_use", "calls": [{"name": "get_weather", "input": {"city": "Paris"}}], "text": "Let me check."},
//!     {"kind": "hang", "at": "in_headers"},
//!     {"kind": "hang", "at": "after_headers"},
//!     {"kind": "keep_alive_flood", "ping": true, "after_chunks": 1, "interval_ms": 0},
//!     {"kind": "empty_chunk_flood", "after_chunks": 2},
//!     {"kind": "endless_text", "text": "all work and no play ", "interval_ms": 0},
//!     {"kind": "endless_json", "interval_ms": 1000},
//!     {"kind": "http_error", "status": 503, "endless_body": true, "interval_ms": 0},
//!     {"kind": "invalid_api_key", "echo_key": "last12"},
//!     {"kind": "http_error", "status": 429, "retry_after": "99999999999999999999999"},
//!     {"kind": "wrong_content_type"},
//!     {"kind": "redirect", "status": 308, "location": "http://127.0.0.1:9/v1/messages"},
//!     {"kind": "http_error", "status": 429, "stall_body_after": 10},
//!     {"kind": "http_error", "status": 429, "message": "Rate limit exceeded: free-models-per-day.",
//!      "stated_limit": {"limit": 50, "remaining": 0, "reset_in_ms": 18000000}},
//!     {"kind": "not_an_answer", "shape": "models_list"},
//!     {"kind": "bad_head", "shape": "garbage_status"},
//!     {"kind": "bare_json_error"},
//!     {"kind": "hang", "at": "after_start"},
//!     {"kind": "ok", "text": "Recovered.", "chunks": 2, "chunk_delay_ms": 5,
//!      "usage": {"input_tokens": 1200, "cache_read_input_tokens": 1024}}
//!   ],
//!   "default": {"kind": "ok", "text": "fine"}
//! }
//! "#)?;
//! assert_eq!(scenario.scripted_requests(), 36);
//! # Ok::<(), agentic_chaos::ScenarioError>(())
//! ```
//!
//! | field | type | kinds | meaning |
//! | --- | --- | --- | --- |
//! | `kind` | string | all | the step, see the table above |
//! | `times` | integer ≥ 1 | all but `default` | how many requests in a row this step answers (1) |
//! | `text` | string | `ok`, the stream faults, the floods, `endless_text` (not empty), `tool_use` | the answer, or the text whose first chunks a fault sends (`Hello from the chaos server.`); for `endless_text`, the text sent over and over; for `tool_use`, the text before the calls (none) |
//! | `chunks` | integer, 1 to 100 000 | same | split the text into this many chunks of equal length (one per word); for `tool_use`, split each call's arguments into this many pieces (3) |
//! | `chunk_delay_ms` | integer | `ok`, the stream faults, `keep_alive_flood`, `empty_chunk_flood` | pause before each chunk (0) |
//! | `after_chunks` | integer, 0 to 100 000 | `drop_stream`, `truncate`, `sse_error`, `malformed_chunk`, `empty_chunk_flood` (0); `stall`, `hang` (before the headers), `keep_alive_flood` (right after the headers) | K, the chunks sent before the fault |
//! | `at` | `"before_headers"`, `"in_headers"`, `"after_headers"`, `"after_start"` | `hang` (`before_headers`), not with `after_chunks` | where the silence starts |
//! | `interval_ms` | integer | `keep_alive_flood`, `empty_chunk_flood`, `endless_text`, `endless_json`, and the HTTP errors with `endless_body` | the pause between two pieces of the endless part ([`DEFAULT_INTERVAL_MS`], 10); 0 sends them as fast as the client reads (a blank body then comes in lines of 1023 blanks) |
//! | `ping` | bool | `keep_alive_flood` | Anthropic requests get `event: ping` events instead of comments (false) |
//! | `ms` | integer | `stall` (required) | the pause |
//! | `status` | integer, 400 to 599 | `http_error` (required), `context_overflow` (400), `invalid_api_key` (401), `sse_error` (unstreamed status); for `redirect` 301, 302, 303, 307 or 308 (307) | HTTP status |
//! | `shape` | string | `not_an_answer`: `"json_object"` (the default), `"status_ok"`, `"json_array"`, `"no_choices"`, `"models_list"`, `"done_only"`, `"empty_chunk"`; `bad_head`: `"many_headers"` (the default), `"huge_header"`, `"garbage_status"`; `malformed_chunk`: `"cut"` (the default), `"unreadable"` | what the 200 carries, see [`NotAnAnswer`]; what the head is, see [`BadHead`]; what the chunk is when no `data` is given, see [`MalformedShape`] |
//! | `location` | string, an absolute URL | `redirect` | the `location` header (the request's own URL on this server: a redirect loop) |
//! | `endless_body` | bool | `http_error`, `context_overflow`, `invalid_api_key` | the body, chunked, then a newline every `interval_ms` forever (false) |
//! | `stall_body_after` | integer | same, not with `endless_body` | send the head (the whole body's `content-length`) and this many bytes of the body, then silence until the client hangs up; 0 sends the head only (the whole body at once) |
//! | `stated_limit` | `{"limit", "remaining", "reset_in_ms"}`, integers | `http_error`, not with `body` | the rate limit stated in the error body, as OpenRouter does: the error object's `code` is the status as a number (unless `code` is set) and its `metadata.headers` hold `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (ms since the UNIX epoch, `reset_in_ms` after the answer). See [`StatedLimit`] |
//! | `echo_key` | `"whole"`, `"first12"`, `"last12"`, `"without_prefix"` | same and `sse_error` | append this piece of the request's API key to the error message, see [`EchoKey`] |
//! | `retry_after` | integer or string | `http_error`, `context_overflow`, `invalid_api_key` | `retry-after` header: seconds, or any text such as an HTTP-date or a number no clock can hold (`"1e300"`) |
//! | `retry_after_ms` | integer | same | `retry-after-ms` header |
//! | `x_should_retry` | bool | same | `x-should-retry` header |
//! | `param` | string | same | OpenAI's `param` |
//! | `body` | string | same, `wrong_content_type` | this body instead of the provider-shaped one; for `wrong_content_type`, the page (an HTML login page) |
//! | `content_type` | string | `wrong_content_type` | the `content-type` (`text/html; charset=utf-8`) |
//! | `error_type`, `message`, `code` | string | same, `sse_error` and `bare_json_error` | the error's `type`, `message` (may be empty), OpenAI `code` |
//! | `headers` | object | all but `close_before_headers`, `not_an_answer`, `bad_head` | extra response headers |
//! | `data` | string | `malformed_chunk` | the text after `data: ` (a text chunk of the wire format, cut off mid-JSON) |
//! | `calls` | list of `{"name": string, "input": object}`, at most 1 000 | `tool_use` (required, not empty); `drop_stream`, `truncate`, `sse_error`, `malformed_chunk`, `stall` (not empty) | the tool calls, in order; `input` defaults to `{}`. On a fault: the answer is these calls, streamed after the text (none when `text` is `""`), each call's arguments in `argument_chunks` pieces that `after_chunks` counts after the text's chunks; Gemini, which never splits a call, sends an SSE comment for each piece but the last, which is the whole call |
//! | `argument_chunks` | integer ≥ 1 | `drop_stream`, `truncate`, `sse_error`, `malformed_chunk`, `stall`, with `calls` | how many pieces each call's arguments stream in (3) |
//! | `reasoning` | string, not empty | `ok`, `tool_use`, `drop_stream`, `truncate`, `sse_error`, `malformed_chunk`, `stall` | reasoning streamed before the answer, one chunk per word, in each wire's shape: OpenAI `delta.reasoning_content`, Anthropic a `thinking` block (`thinking_delta`s, a `signature_delta`), Gemini parts with `"thought": true`, Responses a `reasoning` item (`response.reasoning_summary_text.delta`s); a whole answer carries it too. See [`Completion::reasoning`] (none) |
//! | `stop` | `"length"` | `ok`, `stall`, `malformed_chunk` | the token limit cut the answer: it ends with OpenAI `finish_reason: "length"`, Anthropic `stop_reason: "max_tokens"` (also for a forced tool's `tool_use` block), streamed or not; the `text` is sent as given, so give the cut text. See [`Completion::cut_by_token_limit`] (the answer ends normally) |
//! | `usage` | `{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "reasoning_tokens"}`, integers, each optional | same as `text` | pin these counts of the reported usage; the others follow the [rule](#token-usage), the cache and reasoning counts are 0. See [`TokenUsage`] |
//!
//! ## Limits
//!
//! So that no scenario can make the server run out of memory, a file is refused at load, naming
//! the field, when an answer would have more than [`MAX_CHUNKS`] (100 000) chunks (`chunks`,
//! `after_chunks`, the words of a `text` streamed one per word, a `tool_use` step's argument
//! pieces in all), when a text is longer than [`MAX_TEXT_BYTES`] (8 MiB: `text`, `body`,
//! `message`, `data`, a header value, a call's `input`), or when a `tool_use` step has more than
//! [`MAX_TOOL_CALLS`] (1 000) calls. The server itself cuts chunks on the fly and writes under
//! backpressure: a step built in Rust with a larger count costs time, not memory, and an endless
//! answer holds at most a few kilobytes, sleeps while its client does not read, and ends when the
//! client hangs up ([`ChaosServer::open_connections`] shows it) or the server stops.
//!
//! [`Scenario::to_json`] writes this format, so a scenario built in Rust can be saved for the CLI.
//!
//! # Token usage
//!
//! Every answer reports its usage where the real API does: OpenAI in a last chunk with
//! `"choices": []` and `usage` (`prompt_tokens`, `completion_tokens`, `total_tokens`,
//! `prompt_tokens_details.cached_tokens`), before `data: [DONE]`, only when the request asked for
//! it with `"stream_options": {"include_usage": true}`; Anthropic in `message_start` (the input
//! and cache counts, `output_tokens: 1`) and in `message_delta` (`output_tokens`); both in a whole
//! JSON answer's `usage`. So a fault after the stream's first events (`drop_stream`, `truncate`,
//! `sse_error`, a `hang` after K chunks, the floods, `endless_text`) still reports the input
//! tokens on Anthropic, never on OpenAI, whose usage comes last. The counts:
//!
//! - **input tokens**: the whitespace-separated words of the request's prompt, at least 1: its
//!   `system` and each message's `content` (a string, or the `text` and `content` of its parts, so
//!   that tool results count; tool calls' arguments, roles and ids do not). `"system": "Answer
//!   briefly."` and one user message `"What is the answer?"` make 6.
//! - **output tokens**: the answer's text chunks (one per word unless `chunks` says otherwise, so
//!   `"The answer is 42."` makes 4) and its calls' argument pieces; for `tool_use`, its argument
//!   pieces plus 1 for its text. The reasoning's chunks are not counted (pin `reasoning_tokens`).
//! - **cache counts**: 0.
//!
//! A step's `usage` pins any of these counts (see [`TokenUsage`]). Every answer also carries the
//! request's `model` (`chaos-model` when it names none).
//!
//! # Context window
//!
//! With a context window of N bytes ([`Scenario::with_context_window`], `"context_window": N` in
//! a scenario file), a `POST` to a model endpoint whose conversation is larger than N bytes (N + 1
//! or more; N fits) is answered as the `context_overflow` step answers, in the request's wire
//! format: status 400 and the provider's real body (see [`Step::context_overflow`]). It consumes no
//! step: the steps answer only the requests that fit, so the next request that fits gets the step
//! the refused one would have had. The journal marks it: `over_window: true`, and a
//! [`StepRef`] with `index: None`, `kind: context_overflow`, `repeat: 0`
//! ([`StepRef::is_context_window`]). Without a window every request reaches the steps.
//!
//! The size of the conversation is the length in bytes (UTF-8, not characters) of the text the
//! request carries, by one rule for every wire (the rules below name the Chat Completions and
//! Anthropic fields; each wire's module says which of its fields count the same way):
//!
//! - the top-level `system` (Anthropic): a string, or a list of blocks counted as below;
//! - for each item of the `messages` array, whatever its `role` (so OpenAI `system` and `tool`
//!   messages count through their `content`):
//!   - its `content`: a string; or a list of blocks, each counting its `text` (when a string), its
//!     `content` (an Anthropic `tool_result`'s: a string, or a list of blocks, by this same rule)
//!     and its `input` (an Anthropic `tool_use`'s, as compact JSON: `{"city": "Paris"}` counts as
//!     `{"city":"Paris"}`, 16 bytes); anything else (`null`, a number) counts 0;
//!   - the `function.arguments` string of each of its OpenAI `tool_calls`, as sent.
//!
//! Nothing else counts: roles, names, ids, types, images, the `tools` offered, `model` and the
//! other parameters, nor the JSON around the text. A body that is not JSON counts 0 (and fits). For
//! example, an OpenAI system message `"Be brief."` (9), a user message `"Weather?"` (8), an
//! assistant message with `content: null` and a tool call whose `arguments` are
//! `{"city":"Paris"}` (16), and a tool message `"sunny"` (5) make 38 bytes; the same conversation
//! in Anthropic's format (`system`, a `tool_use` block with `input: {"city": "Paris"}`, a
//! `tool_result` block with `content: "sunny"`) makes 38 too. The journal records each request's
//! size as `context_bytes`, window or not, and how many messages it held as `messages`.
//!
//! # Outages
//!
//! An outage ([`Scenario::with_outage`], [`Outage`]) is a window of the scenario's clock, from
//! `from` (included) to `until` (excluded), during which every `POST` to a model endpoint is
//! answered by the outage's step (a 503 with the provider's body unless set; any step will do: a
//! 429 with `retry-after`, a hang, a socket closed before the headers), in the request's wire
//! format, before the context window or the steps see it. It consumes no step: the first request
//! after the window gets the step the outage's requests would have had. Outside the windows the
//! scenario answers as before; where windows overlap, the first listed answers.
//!
//! The clock starts with the server, and again at each reset ([`ChaosServer::reset`],
//! [`ChaosServer::set_scenario`], `POST /_chaos/reset`); it is the journal's `at_ms`, and it is
//! tokio's: in a test on paused time, `tokio::time::advance` moves the server into and out of its
//! outages at once. tokio's auto-advance jumps the paused clock to the next timer only when a turn
//! of the runtime wakes no task at all; over loopback a request and its answer always have bytes
//! in flight, so the clock moves only when the test advances it or when every task waits on a
//! timer (a step's pause, a hang until the client's timeout, a client's backoff). The server sets
//! no timer of its own while it reads a request or answers one without a pause.
//!
//! In a scenario file, `"outages"` is a list of at most [`MAX_OUTAGES`] (64) objects:
//!
//! ```
//! # use agentic_chaos::Scenario;
//! let scenario = Scenario::from_json_str(r#"
//! {
//!   "outages": [
//!     {"from_ms": 0, "until_ms": 3000},
//!     {"from_ms": 10000, "until_ms": 12000, "step": {"kind": "http_error", "status": 429, "retry_after": 1}}
//!   ],
//!   "steps": [{"kind": "ok", "text": "Recovered."}]
//! }
//! "#)?;
//! assert_eq!(scenario.outages().len(), 2);
//! # Ok::<(), agentic_chaos::ScenarioError>(())
//! ```
//!
//! | field | type | meaning |
//! | --- | --- | --- |
//! | `from_ms` | integer, 0 to 86 400 000 ([`MAX_OUTAGE_MS`], a day) | when the outage starts, in milliseconds of the scenario's clock (0) |
//! | `until_ms` | integer, more than `from_ms`, at most a day (required) | when it ends: the first millisecond answered as before |
//! | `step` | a step object without `times` | the answer during the outage (`{"kind": "http_error", "status": 503}`) |
//!
//! The journal marks a request an outage answered: `outage: true`, and a [`StepRef`] with
//! `index: None`, the outage step's `kind`, `repeat: 0` and `outage: Some(i)`, the window's
//! position ([`StepRef::is_outage`]).
//!
//! # Rate limits
//!
//! A rate limit ([`Scenario::with_rate_limit`], [`RateLimit`]) gives every API key its own token
//! buckets, one per configured number: `requests`, `tokens` (input and output together),
//! `input_tokens`, `output_tokens`, each per `window` (a minute unless set, so the numbers are
//! RPM, TPM, ITPM and OTPM). A bucket starts full, at the scenario's start or reset, and refills
//! continuously, `n / window` per second, up to `n`, on the scenario's clock (tokio's, as for
//! [outages](#outages): `tokio::time::advance` refills it in a test on paused time).
//!
//! **The key** is the request's API key: `authorization: Bearer K`, `x-api-key`,
//! `x-goog-api-key` or `api-key` (as for `echo_key`), else Gemini's `key` query parameter; a
//! request with none counts under one anonymous key. The server keeps a fingerprint of the key,
//! never the key, and tracks at most [`MAX_RATE_KEYS`] keys with partly used buckets (past them a
//! new key shares the anonymous key's buckets).
//!
//! **The cost** of a model request is 1 request, its input tokens (what its answer reports as
//! input: the step's pinned `usage.input_tokens`, else the prompt's words by the
//! [rule](#token-usage)) and its output tokens (what an answer that finishes reports: an `ok`,
//! `stall` or `tool_use` step's pinned `usage.output_tokens`, else its chunks as the answer counts
//! them; every other step, the context window's answer included, reports 0). The whole cost is
//! charged at admission, when the request has been read: the server knows its scripted answer then.
//!
//! **Admission** comes after the outages (a server that is down counts nothing) and before the
//! context window and the steps. A request whose cost exceeds what is left of any bucket gets a
//! **429** in its wire's own rate-limit body (OpenAI and Responses: type and code
//! `rate_limit_exceeded`; Anthropic `rate_limit_error`; Gemini `RESOURCE_EXHAUSTED`), with
//! `retry-after` the whole seconds (rounded up) until every bucket holds enough, and on the OpenAI
//! wires `retry-after-ms` (rounded up); it consumes no step and takes nothing from the buckets. A
//! request larger than a whole bucket can never pass: its 429 has no `retry-after`. The journal
//! marks the 429: `rate_limited: true`, and a [`StepRef`] with `index: None`, `kind: http_error`,
//! `repeat: 0` and `rate_limited: true` ([`StepRef::is_rate_limited`]).
//!
//! **Headers.** Every response to a model request (answers, errors, outages' answers, the 429s)
//! carries its wire's rate-limit headers for the configured limits, as the buckets stand after
//! the request's charge: `remaining` is the whole units left (rounded down), `reset` the time until
//! the bucket is full again.
//!
//! | wire | headers | `reset` |
//! | --- | --- | --- |
//! | Chat Completions, Responses | `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (no input or output limits: OpenAI has none) | a Go duration, rounded up to the millisecond: `0s`, `500ms`, `1.5s`, `1m0.5s`, `1h2m3s` |
//! | Anthropic | `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}` | an RFC 3339 instant in UTC with milliseconds, from the wall clock: `2026-12-01T18:55:00.500Z` |
//! | Gemini | none (Google sends none); the limits are enforced all the same | |
//!
//! In a scenario file, `"rate_limit"` is an object with at least one of the four numbers (each at
//! least 1) and an optional `window_ms`, from 1 to [`MAX_RATE_WINDOW_MS`] (a day):
//!
//! ```
//! # use agentic_chaos::Scenario;
//! let scenario = Scenario::from_json_str(r#"
//! {
//!   "rate_limit": {"requests": 120, "tokens": 40000, "input_tokens": 30000, "output_tokens": 8000,
//!                  "window_ms": 60000},
//!   "steps": [{"kind": "ok", "text": "Paced.", "usage": {"input_tokens": 500, "output_tokens": 20}}]
//! }
//! "#)?;
//! let limit = scenario.rate_limit().unwrap();
//! assert_eq!((limit.max_requests(), limit.max_tokens()), (Some(120), Some(40_000)));
//!
//! let err = Scenario::from_json_str(r#"{"rate_limit": {"requests": 0}}"#).unwrap_err();
//! assert_eq!(err.field(), Some("rate_limit.requests"));
//! # Ok::<(), agentic_chaos::ScenarioError>(())
//! ```
//!
//! # Conversations
//!
//! By default a scenario's script is one queue: each model request takes the next step,
//! whichever client sent it, so concurrent clients take each other's steps. A scenario scripted
//! per conversation ([`Scenario::per_conversation`], `"per_conversation": true`) gives each
//! conversation its own place in the script: its first request gets the first step, its next
//! request the next, and after its last step the default, however many conversations run at once.
//!
//! **A conversation is recognised by its opening**, the same way on every wire: its system prompt
//! (Anthropic's `system`, Gemini's `systemInstruction`, Responses' `instructions`) and the texts
//! of its first user message and of every message before it (an OpenAI `system` or `developer`
//! message; Responses' `input` when it is a string; a Gemini content without a role counts as the
//! user's). A tool loop's follow-up requests resend the opening with the calls and results after
//! it, so they continue the conversation; a request with another opening starts a new
//! conversation at the top of the script. Two clients that open with the same texts are one
//! conversation: give each its own first message (a run number will do) when they must be told
//! apart. A conversation whose history is rewritten before its first user message (compacted) is
//! a new one. Models, tools, the wire and the key do not count.
//!
//! **The bound.** The server keeps the places of at most [`MAX_CONVERSATIONS`] (10 000)
//! conversations; past them it forgets the one that has gone longest without a request (if it
//! comes back, it starts the script again). A reset forgets them all. The journal numbers each
//! request's conversation, from 0 in the order the server first saw them
//! ([`JournalEntry::conversation`]). Outages, the context window and the rate limit apply to every
//! request as before, and consume no step of the conversation.
//!
//! # Forced tool choice
//!
//! A request can force the model to call a tool; the server then answers as a real model does,
//! whatever the step scripts. The wires say it so:
//!
//! | wire | a given tool | any tool |
//! | --- | --- | --- |
//! | Anthropic | `tool_choice: {"type": "tool", "name"}` | `tool_choice: {"type": "any"}` |
//! | Chat Completions | `tool_choice: {"type": "function", "function": {"name"}}` | `tool_choice: "required"` |
//! | Responses | `tool_choice: {"type": "function", "name"}` | `tool_choice: "required"` |
//! | Gemini | `toolConfig.functionCallingConfig` `{"mode": "ANY", "allowedFunctionNames": [name]}` | `"mode": "ANY"`, with several `allowedFunctionNames` (one of them) or none (any offered) |
//!
//! Anything else (`auto`, `none`, no choice) lets the steps answer as written.
//!
//! - **A given tool**: a step that answers in text (`ok`, `stall`, and the faults that send part
//!   of a text) answers with one call of that tool instead, whose arguments are the step's text
//!   as given (so `Step::ok(r#"{"total": 12}"#)` sends the call with `{"total": 12}`), streamed in
//!   the step's chunks, ending as a tool call (`tool_use`, `tool_calls`; `max_tokens` / `length`
//!   when cut by the token limit); a `tool_use` step answers with one call of that tool, its
//!   first call of it if it has one, else its first call renamed, with that call's input; its
//!   text and other calls are dropped (a model made to call a tool says nothing first).
//! - **Any tool**: a text answer becomes a call of the last tool offered (or the last allowed one
//!   on Gemini), its arguments the text: the last, because a client that carries a typed answer
//!   in a tool offers that tool last (as agentic's Anthropic provider does). A `tool_use` step's
//!   calls go out as written, without its text.
//!
//! Each wire renders the call in its own shape (see its module): Anthropic a `tool_use` block
//! with `input_json_delta`s (whole: `input`, the text parsed as JSON, or a JSON string when it is
//! not JSON); Chat Completions `delta.tool_calls[0].function.arguments` pieces (whole:
//! `message.tool_calls`); Responses a `function_call` item with
//! `response.function_call_arguments.delta`s; Gemini, whose calls come whole, the `functionCall`
//! with its `args` (parsed as for Anthropic) in the last response, the text's pieces going as SSE
//! comments. Steps that send no answer (errors, hangs, bodies that are no answer) are unchanged.
//! The journal names the tool an answer was made to call instead of what its step scripted
//! ([`JournalEntry::forced_tool`]).
//!
//! # Over HTTP
//!
//! Besides the model endpoints the server answers `GET /_chaos/journal` (the [journal](JournalEntry)
//! as a JSON array) and `POST /_chaos/reset` (start the scenario over and clear the journal; with
//! a scenario JSON as the body, serve that one from now on). These control requests are not
//! journaled and consume no step. Any other path is a 404 with a JSON error, journaled; a
//! non-POST request to a model endpoint is a 405, journaled, and consumes no step either.
//!
//! # Keys
//!
//! The journal records whether a request had an `authorization`, `x-api-key` or `api-key` header,
//! never its value; the server keeps no other trace of the headers. Only an error step with
//! `echo_key` reads the key, to send a piece of it back in that one response, and a
//! [rate limit](#rate-limits), which keeps a fingerprint of it (a hash), never the key.
#![deny(missing_docs)]
#![warn(unreachable_pub, missing_debug_implementations)]

mod boundary;
mod context;
mod conversation;
mod error;
mod forced;
mod http;
mod journal;
mod outage;
mod rate_limit;
mod scenario;
mod script;
mod server;
mod silent;
mod spec;
mod step;
mod usage;
pub mod wire;

pub use error::ScenarioError;
pub use journal::{JournalEntry, StepRef};
pub use outage::{MAX_OUTAGE_MS, MAX_OUTAGES, Outage};
pub use rate_limit::{DEFAULT_RATE_WINDOW, MAX_RATE_KEYS, MAX_RATE_WINDOW_MS, RateLimit};
pub use scenario::Scenario;
pub use script::MAX_CONVERSATIONS;
pub use server::ChaosServer;
pub use silent::{MAX_SILENT_CONNECTIONS, SilentServer};
pub use spec::{MAX_CHUNKS, MAX_TEXT_BYTES, MAX_TOOL_CALLS};
pub use step::{
    BadHead, BareJsonError, Completion, DEFAULT_INTERVAL_MS, DEFAULT_TEXT, EchoKey, EmptyChunkFlood, EndlessJson,
    EndlessText, Hang, HttpError, Interrupt, KeepAliveFlood, Malformed, MalformedShape, NotAnAnswer, Redirect,
    SseError, Stall, StatedLimit, Step, StepKind, ToolUse, WrongContentType,
};
pub use usage::TokenUsage;
pub use wire::WireFormat;
