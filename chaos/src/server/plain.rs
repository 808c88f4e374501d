//! A plain JSON response: the body of the 400, 404 and 405 answers and of the control routes.

use serde_json::json;

use crate::http::{self, Conn};

/// The JSON error body of a request the server refuses with `status` (a bad request, a 404, a
/// 405), in the shape every wire's clients read: `{"error": {"type", "message"}}`.
pub(super) fn generic_error(status: u16, message: &str) -> String {
    let error_type = match status {
        404 => "not_found_error",
        405 => "method_not_allowed",
        413 => "request_too_large",
        _ => "invalid_request_error",
    };
    json!({"error": {"type": error_type, "message": message}}).to_string()
}

/// A response with a JSON `body` and `headers` beside its type and length.
pub(super) fn send_json(conn: &mut Conn, status: u16, body: &str, headers: &[(&str, &str)], keep_alive: bool) {
    let length = body.len().to_string();
    let mut all = vec![("content-type", "application/json"), ("content-length", length.as_str())];
    all.extend_from_slice(headers);
    conn.send(&http::head(status, &all, keep_alive));
    conn.send(body.as_bytes());
}
