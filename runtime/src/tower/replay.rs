//! Requests the layer can send again: each attempt sends a copy made before the one before it went.

/// A request the retry layer can send more than once.
///
/// Implemented for `http::Request<B>` with a body that clones (`Bytes`, `String`, `Full<Bytes>`),
/// `reqwest::Request` (a body that is a stream cannot be sent again), and with the feature
/// `async-openai` for its `HttpRequestFactory` (which builds each attempt's request anew).
pub trait Replay: Sized {
    /// A copy to send on the next attempt, made before this one is sent; `None` when this request
    /// cannot be sent twice: the layer then makes this one attempt and hands back what it got.
    fn replay(&self) -> Option<Self>;
}

impl<B: Clone> Replay for http::Request<B> {
    fn replay(&self) -> Option<Self> {
        Some(self.clone())
    }
}

impl Replay for reqwest::Request {
    fn replay(&self) -> Option<Self> {
        self.try_clone()
    }
}

#[cfg(any(feature = "async-openai", feature = "reqwest-middleware"))]
impl Replay for reqwest_013::Request {
    fn replay(&self) -> Option<Self> {
        self.try_clone()
    }
}

#[cfg(feature = "async-openai")]
impl Replay for async_openai::middleware::HttpRequestFactory {
    fn replay(&self) -> Option<Self> {
        Some(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_with_a_body_that_clones_is_sent_again_whole() {
        let request = http::Request::post("http://127.0.0.1:9/v1/chat/completions")
            .header("authorization", "Bearer sk-test")
            .body(String::from("{}"))
            .unwrap();
        let again = request.replay().unwrap();
        assert_eq!((again.method(), again.uri(), again.body()), (request.method(), request.uri(), request.body()));
        assert_eq!(again.headers(), request.headers());
    }

    #[test]
    fn a_reqwest_request_with_a_streamed_body_is_sent_once() {
        let client = reqwest::Client::new();
        let bytes = client.post("http://127.0.0.1:9/").body("{}").build().unwrap();
        assert!(bytes.replay().is_some());
        let frames =
            futures_util::stream::iter([Ok::<_, std::io::Error>(http_body::Frame::data(bytes::Bytes::from("{}")))]);
        let body = reqwest::Body::wrap(http_body_util::StreamBody::new(frames));
        let streamed = client.post("http://127.0.0.1:9/").body(body).build().unwrap();
        assert!(streamed.replay().is_none());
    }
}
