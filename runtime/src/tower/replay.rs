//! Requests the layer can send again: each attempt sends a copy made before the one before it went.

/// A request the retry layer can send more than once.
///
/// Implemented for `http::Request<B>` with a body that clones (`Bytes`, `String`, `Full<Bytes>`) and
/// `reqwest::Request` (a body that is a stream cannot be sent again). async-openai's
/// `HttpRequestFactory` (which builds each attempt's request anew) has a service of its own
/// (feature `async-openai`): [`Retry`](super::Retry) hands async-openai an error, not a response,
/// when it gives up.
pub trait Replay: Sized {
    /// A copy to send on the next attempt, made before this one is sent; `None` when this request
    /// cannot be sent twice: the layer then makes this one attempt and hands back what it got.
    fn replay(&self) -> Option<Self>;

    /// The API key the request carries, so that no piece of it shows in a decision, a log or a
    /// failure when the server echoes it: by default the value of `authorization` (after its
    /// scheme), `x-api-key`, `api-key` or `x-goog-api-key`, else a `key` in the query, for the
    /// request types with headers; `None` for one built later (name its key with
    /// [`RetryLayer::redacting`](super::RetryLayer::redacting)).
    fn api_key(&self) -> Option<&str> {
        None
    }
}

/// The API key in `headers` or the `query` of a request.
fn key_in<'r>(headers: &'r http::HeaderMap, query: Option<&'r str>) -> Option<&'r str> {
    if let Some(value) = headers.get(http::header::AUTHORIZATION).and_then(|value| value.to_str().ok()) {
        let key = value.split_once(' ').map_or(value, |(_, key)| key).trim();
        return Some(key).filter(|key| !key.is_empty());
    }
    let header = ["x-api-key", "api-key", "x-goog-api-key"].into_iter().find_map(|name| headers.get(name));
    if let Some(key) = header.and_then(|value| value.to_str().ok()) {
        return Some(key.trim()).filter(|key| !key.is_empty());
    }
    let query = query?.split('&').find_map(|pair| pair.strip_prefix("key="))?;
    Some(query).filter(|key| !key.is_empty())
}

impl<B: Clone> Replay for http::Request<B> {
    fn replay(&self) -> Option<Self> {
        Some(self.clone())
    }

    fn api_key(&self) -> Option<&str> {
        key_in(self.headers(), self.uri().query())
    }
}

/// [`Replay`] for a reqwest's `Request`.
impl Replay for reqwest::Request {
    fn replay(&self) -> Option<Self> {
        self.try_clone()
    }

    fn api_key(&self) -> Option<&str> {
        key_in(self.headers(), self.url().query())
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
    fn the_key_is_found_in_each_header_the_apis_use_and_in_the_query() {
        let request = |header: &str, value: &str| {
            http::Request::post("http://127.0.0.1:9/").header(header, value).body(()).unwrap()
        };
        assert_eq!(request("authorization", "Bearer sk-one").api_key(), Some("sk-one"));
        assert_eq!(request("x-api-key", "sk-ant-two").api_key(), Some("sk-ant-two"));
        assert_eq!(request("api-key", "azure-three").api_key(), Some("azure-three"));
        assert_eq!(request("x-goog-api-key", "AIza-four").api_key(), Some("AIza-four"));
        let in_query = http::Request::get("http://127.0.0.1:9/v1beta/models?alt=sse&key=AIza-five").body(()).unwrap();
        assert_eq!(in_query.api_key(), Some("AIza-five"));
        assert_eq!(request("content-type", "application/json").api_key(), None);
    }

    #[test]
    fn a_reqwest_request_with_a_streamed_body_is_sent_once() {
        let tls = crate::util::tls::client_config().unwrap();
        let client = reqwest::Client::builder().tls_backend_preconfigured(tls).build().unwrap();
        let bytes = client.post("http://127.0.0.1:9/").body("{}").build().unwrap();
        assert!(bytes.replay().is_some());
        let frames =
            futures_util::stream::iter([Ok::<_, std::io::Error>(http_body::Frame::data(bytes::Bytes::from("{}")))]);
        let body = reqwest::Body::wrap(http_body_util::StreamBody::new(frames));
        let streamed = client.post("http://127.0.0.1:9/").body(body).build().unwrap();
        assert!(streamed.replay().is_none());
    }
}
