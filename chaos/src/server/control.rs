//! The control routes: `GET /_chaos/journal` and `POST /_chaos/reset`, neither journaled.

use super::plain::{generic_error, send_json};
use super::state::Shared;
use crate::http::{Conn, Request};
use crate::scenario::Scenario;

/// Answer a request to `/_chaos/{route}`.
pub(super) fn control_route(conn: &mut Conn, shared: &Shared, request: &Request, route: &str) {
    let keep_alive = request.keep_alive;
    match (request.method.as_str(), route) {
        ("GET", "journal") => {
            let body = serde_json::to_string(&shared.lock().journal).expect("the journal serializes");
            send_json(conn, 200, &body, &[], keep_alive);
        }
        ("POST", "reset") => {
            let text = String::from_utf8_lossy(&request.body);
            if text.trim().is_empty() {
                shared.reset(None);
            } else {
                match Scenario::from_json_str(&text) {
                    Ok(scenario) => shared.reset(Some(scenario)),
                    Err(e) => {
                        let body = generic_error(400, &e.to_string());
                        send_json(conn, 400, &body, &[], keep_alive);
                        return;
                    }
                }
            }
            send_json(conn, 200, r#"{"reset":true}"#, &[], keep_alive);
        }
        (_, "journal" | "reset") => {
            let body = generic_error(405, "use GET /_chaos/journal and POST /_chaos/reset");
            send_json(conn, 405, &body, &[], keep_alive);
        }
        _ => {
            let body = generic_error(404, "the control routes are GET /_chaos/journal and POST /_chaos/reset");
            send_json(conn, 404, &body, &[], keep_alive);
        }
    }
}
