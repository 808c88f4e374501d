//! A request to its answer: a model route's request is read by its wire, journaled and answered
//! by its step; any other path is a 404, a model route's non-POST a 405.

use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::answer::{After, Answer};
use super::control::control_route;
use super::key::api_key;
use super::plain::{generic_error, send_json};
use super::state::{Recorded, Shared};
use crate::http::{Conn, Request};
use crate::usage::input_tokens;
use crate::wire::render::Exchange;
use crate::wire::{Asked, WireFormat};

/// Answer one request; what the connection does next.
pub(super) async fn respond(conn: &mut Conn, shared: &Shared, request: Request) -> io::Result<After> {
    let keep_alive = request.keep_alive;
    if let Some(control) = request.path.strip_prefix("/_chaos/") {
        control_route(conn, shared, &request, control);
        return Ok(After::KeepAlive);
    }
    let route = WireFormat::route(&request.path);
    let body: Option<Value> = route.as_ref().and_then(|_| serde_json::from_slice(&request.body).ok());
    let wire = route.as_ref().map(|(wire, _)| *wire);
    let asked = match route {
        Some((wire, route)) => wire.render().read(body.as_ref(), route),
        None => Asked::default(),
    };
    let Recorded { seq, step, rate_headers, answer_tool } = shared.record(&request, wire, &asked);
    let (Some(wire), Some(step)) = (wire, step) else {
        let (status, message, allow) = match wire {
            Some(wire) => (405, format!("{} accepts only POST", wire.path()), Some(("allow", "POST"))),
            None => (404, format!("no route for {} {}; {}", request.method, request.path, routes()), None),
        };
        let body = generic_error(status, &message);
        send_json(conn, status, &body, allow.as_slice(), keep_alive);
        return Ok(After::KeepAlive);
    };
    let pinned = step.usage();
    let exchange = Exchange {
        render: wire.render(),
        seq,
        model: asked.model.unwrap_or_else(|| "chaos-model".to_owned()),
        created: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        input_tokens: input_tokens(&pinned, &asked.conversation),
        usage: pinned,
        usage_asked: asked.usage_asked,
        answer_tool,
        cut_by_token_limit: step.cut_by_token_limit(),
    };
    let api_key = api_key(&request, Some(wire));
    let path = request.path;
    let mut answer = Answer { conn, exchange, stream: asked.stream, keep_alive, api_key, path, rate_headers };
    answer.step(step).await
}

/// The routes the server answers, for the 404 text: "the chaos server answers POST
/// /v1/chat/completions (OpenAI) and POST /v1/messages (Anthropic)".
fn routes() -> String {
    let routes: Vec<String> =
        WireFormat::ALL.iter().map(|wire| format!("POST {} ({})", wire.path(), wire.render().names().label)).collect();
    let text = match routes.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    };
    format!("the chaos server answers {text}")
}
