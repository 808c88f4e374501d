//! Responses the layer can judge and hand back: the status and headers of every response; the body
//! of an error response, read (bounded), which is all of it that is handed back; a success's body
//! bounded in time ([`BodyBounds`]), its bytes as the server sent them.

use std::future::Future;

use bytes::{Buf, Bytes};
use http_body::Body;
use http_body_util::BodyExt as _;
use tokio::time::Instant;

use super::bounded::BodyBounds;
use crate::provider::BodyEnd;
use crate::resilient::GaveUp;

/// What was read of an error response's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorBody {
    bytes: Vec<u8>,
    end: BodyEnd,
}

impl ErrorBody {
    /// The whole body (it ended, or failed mid-way: what arrived is kept).
    pub fn whole(bytes: Vec<u8>) -> Self {
        Self { bytes, end: BodyEnd::Whole }
    }

    /// The body's first bytes: it was longer than the read's limit.
    pub fn cut(bytes: Vec<u8>) -> Self {
        Self { bytes, end: BodyEnd::Cut }
    }

    /// What arrived before the read's deadline: the rest did not come in time.
    pub fn stalled(bytes: Vec<u8>) -> Self {
        Self { bytes, end: BodyEnd::Stalled }
    }

    /// The bytes read.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub(crate) fn end(&self) -> BodyEnd {
        self.end
    }
}

/// A response the retry layer can judge, and hand back bounded.
///
/// Implemented for `reqwest::Response` (reqwest 0.13, the client of async-openai and
/// reqwest-middleware too) and for `http::Response` of a boxed body
/// (`http_body_util::combinators::{BoxBody, UnsyncBoxBody}`, what hyper's and axum's bodies box
/// into); implement it for a response of your own.
pub trait HttpResponse: Sized {
    /// The status code.
    fn status(&self) -> u16;

    /// The response's headers (the server's hints are read from them).
    fn headers(&self) -> &http::HeaderMap;

    /// The response's headers, to take a key a server echoed out of them before the response is
    /// handed back.
    fn headers_mut(&mut self) -> &mut http::HeaderMap;

    /// Reads at most `limit` bytes of the body, until `deadline`, and gives the response back with
    /// what was read as its whole body (the rest is not read: dropped with the connection). Called
    /// for an error status only (400 and above).
    fn read_error_body(self, limit: usize, deadline: Instant) -> impl Future<Output = (Self, ErrorBody)> + Send;

    /// The response with `body` as its whole body, its `content-length` saying so: an error response
    /// the layers gave up on is handed back with what the layer read of it, the key taken out.
    fn with_body(self, body: Bytes) -> Self;

    /// The response of a success, its body bounded in time by `bounds` ([`BodyBounds::around`]):
    /// what the layer hands back for a status below 400. The default leaves it as it is: for a
    /// response type of your own, the body is the client's to bound.
    fn bounded(self, bounds: BodyBounds) -> Self {
        let _ = bounds;
        self
    }

    /// The mark an inner retry layer left on this error response when it gave up on it and handed
    /// it back ([`HttpResponse::mark_gave_up`]): a layer around it then does not call again. The
    /// default finds none (a response type without extensions is judged as the server's alone).
    fn gave_up(&self) -> Option<GaveUp> {
        None
    }

    /// Marks an error response the layers gave up on, before they hand it back: kept in its
    /// `http::Extensions` by the implementations here; the default keeps nothing.
    fn mark_gave_up(&mut self, mark: GaveUp) {
        let _ = mark;
    }
}

/// Reads at most `limit` bytes of `body` until `deadline`: what was read, and how the read ended.
pub(crate) async fn read_prefix<B>(body: &mut B, limit: usize, deadline: Instant) -> ErrorBody
where
    B: Body + Unpin,
    B::Data: Buf,
{
    let mut read = Vec::new();
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(frame) => frame,
            Err(_) => return ErrorBody::stalled(read),
        };
        // The end, or a failure mid-way: what arrived is kept.
        let Some(Ok(frame)) = frame else { return ErrorBody::whole(read) };
        let Ok(mut data) = frame.into_data() else { continue };
        let room = limit - read.len();
        if data.remaining() > room {
            read.extend_from_slice(&data.copy_to_bytes(room));
            return ErrorBody::cut(read);
        }
        read.extend_from_slice(&data.copy_to_bytes(data.remaining()));
    }
}

/// `headers` saying that the body is `length` bytes, whole: what the layer hands back is no longer
/// chunked, nor as long as the server said.
fn set_length(headers: &mut http::HeaderMap, length: usize) {
    headers.remove(http::header::TRANSFER_ENCODING);
    headers.insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(length));
}

/// [`HttpResponse`] for a reqwest's `Response`: its body is read and replaced through the
/// `http::Response` it converts into, and the response rebuilt with its URL.
impl HttpResponse for reqwest::Response {
    fn status(&self) -> u16 {
        self.status().as_u16()
    }

    fn headers(&self) -> &http::HeaderMap {
        self.headers()
    }

    fn headers_mut(&mut self) -> &mut http::HeaderMap {
        self.headers_mut()
    }

    async fn read_error_body(self, limit: usize, deadline: Instant) -> (Self, ErrorBody) {
        let url = self.url().clone();
        let (mut parts, mut body) = http::Response::<reqwest::Body>::from(self).into_parts();
        let read = read_prefix(&mut body, limit, deadline).await;
        set_length(&mut parts.headers, read.bytes().len());
        let body = reqwest::Body::from(Bytes::copy_from_slice(read.bytes()));
        (joined(url, parts, body), read)
    }

    fn with_body(self, body: Bytes) -> Self {
        let url = self.url().clone();
        let (mut parts, _) = http::Response::<reqwest::Body>::from(self).into_parts();
        set_length(&mut parts.headers, body.len());
        joined(url, parts, reqwest::Body::from(body))
    }

    fn bounded(self, bounds: BodyBounds) -> Self {
        let url = self.url().clone();
        let (parts, body) = http::Response::<reqwest::Body>::from(self).into_parts();
        joined(url, parts, reqwest::Body::wrap(bounds.around(body)))
    }

    fn gave_up(&self) -> Option<GaveUp> {
        self.extensions().get::<GaveUp>().copied()
    }

    fn mark_gave_up(&mut self, mark: GaveUp) {
        self.extensions_mut().insert(mark);
    }
}

/// The response of `parts` and `body`, with its URL (which `http::Response` does not carry).
fn joined(url: reqwest::Url, parts: http::response::Parts, body: reqwest::Body) -> reqwest::Response {
    use reqwest::ResponseBuilderExt as _;
    let mut builder = http::Response::builder().status(parts.status).version(parts.version).url(url);
    if let Some(headers) = builder.headers_mut() {
        *headers = parts.headers;
    }
    if let Some(extensions) = builder.extensions_mut() {
        extensions.extend(parts.extensions);
    }
    reqwest::Response::from(builder.body(body).expect("the parts of a response make a response"))
}

/// [`HttpResponse`] for an `http::Response` of a boxed body type. Its success's body is left as it
/// is: its error type is the service's, which a bound could not make.
macro_rules! boxed_response {
    ($boxed:ident, $($bound:tt)+) => {
        impl<E> HttpResponse for http::Response<http_body_util::combinators::$boxed<Bytes, E>>
        where
            E: $($bound)+,
        {
            fn status(&self) -> u16 {
                self.status().as_u16()
            }

            fn headers(&self) -> &http::HeaderMap {
                self.headers()
            }

            fn headers_mut(&mut self) -> &mut http::HeaderMap {
                self.headers_mut()
            }

            async fn read_error_body(self, limit: usize, deadline: Instant) -> (Self, ErrorBody) {
                let (parts, mut body) = self.into_parts();
                let read = read_prefix(&mut body, limit, deadline).await;
                let response = http::Response::from_parts(parts, body).with_body(Bytes::copy_from_slice(read.bytes()));
                (response, read)
            }

            fn with_body(self, body: Bytes) -> Self {
                let (mut parts, _) = self.into_parts();
                set_length(&mut parts.headers, body.len());
                let whole = http_body_util::Full::new(body).map_err(|never| match never {});
                http::Response::from_parts(parts, http_body_util::combinators::$boxed::new(whole))
            }

            fn gave_up(&self) -> Option<GaveUp> {
                self.extensions().get::<GaveUp>().copied()
            }

            fn mark_gave_up(&mut self, mark: GaveUp) {
                self.extensions_mut().insert(mark);
            }
        }
    };
}

boxed_response!(BoxBody, Send + Sync + 'static);
boxed_response!(UnsyncBoxBody, Send + 'static);
