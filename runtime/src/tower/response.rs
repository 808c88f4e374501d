//! Responses the layer can judge: the status and headers of every response, and the body of an
//! error response, read (bounded) and put back in front of the rest, so that the response handed
//! back is the one the server sent. A success's body is never touched: a stream stays a stream.

use std::future::Future;

use bytes::{Buf, Bytes};
use http_body::Body;
use http_body_util::BodyExt as _;
use tokio::time::Instant;

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

/// A response the retry layer can judge.
///
/// Implemented for `reqwest::Response` (0.12, and 0.13 with the features `async-openai` or
/// `reqwest-middleware`) and for `http::Response` of a boxed body
/// (`http_body_util::combinators::{BoxBody, UnsyncBoxBody}`, what hyper's and axum's bodies box
/// into); implement it for a response of your own.
pub trait HttpResponse: Sized {
    /// The status code.
    fn status(&self) -> u16;

    /// The response's headers (the server's hints are read from them).
    fn headers(&self) -> &http::HeaderMap;

    /// Reads at most `limit` bytes of the body, until `deadline`, and gives the response back whole:
    /// its body is what was read, then the rest. Called for an error status only (400 and above).
    fn read_error_body(self, limit: usize, deadline: Instant) -> impl Future<Output = (Self, ErrorBody)> + Send;

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

/// Reads at most `limit` bytes of `body` until `deadline`: what was read, how the read ended, and
/// the first frame's bytes past the limit (the rest stays in `body`).
pub(crate) async fn read_prefix<B>(body: &mut B, limit: usize, deadline: Instant) -> (ErrorBody, Bytes)
where
    B: Body + Unpin,
    B::Data: Buf,
{
    let mut read = Vec::new();
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(frame) => frame,
            Err(_) => return (ErrorBody::stalled(read), Bytes::new()),
        };
        // The end, or a failure mid-way: what arrived is kept, the caller reads the rest (and its error).
        let Some(Ok(frame)) = frame else { return (ErrorBody::whole(read), Bytes::new()) };
        let Ok(mut data) = frame.into_data() else { continue };
        let mut chunk = data.copy_to_bytes(data.remaining());
        let room = limit - read.len();
        if chunk.len() > room {
            let past = chunk.split_off(room);
            read.extend_from_slice(&chunk);
            return (ErrorBody::cut(read), past);
        }
        read.extend_from_slice(&chunk);
    }
}

/// `read` and `past` (what [`read_prefix`] took) in front of the rest of `body`.
pub(crate) fn put_back<B>(read: &[u8], past: Bytes, body: B) -> Prefixed<B> {
    let mut front = Bytes::copy_from_slice(read);
    if !past.is_empty() {
        let mut both = Vec::with_capacity(front.len() + past.len());
        both.extend_from_slice(&front);
        both.extend_from_slice(&past);
        front = Bytes::from(both);
    }
    Prefixed { front: Some(front).filter(|front| !front.is_empty()), rest: body }
}

pin_project_lite::pin_project! {
    /// A body whose first bytes were already read: those, then the rest.
    pub(crate) struct Prefixed<B> {
        front: Option<Bytes>,
        #[pin]
        rest: B,
    }
}

impl<B> Body for Prefixed<B>
where
    B: Body,
    B::Data: Buf,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        if let Some(front) = this.front.take() {
            return std::task::Poll::Ready(Some(Ok(http_body::Frame::data(front))));
        }
        this.rest.poll_frame(cx).map(|frame| {
            frame.map(|frame| frame.map(|frame| frame.map_data(|mut data| data.copy_to_bytes(data.remaining()))))
        })
    }

    fn is_end_stream(&self) -> bool {
        self.front.is_none() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let mut hint = self.rest.size_hint();
        let front = self.front.as_ref().map_or(0, |front| front.len() as u64);
        hint.set_lower(hint.lower().saturating_add(front));
        if let Some(upper) = hint.upper() {
            hint.set_upper(upper.saturating_add(front));
        }
        hint
    }
}

/// [`HttpResponse`] for a reqwest's `Response`: its body is read through the `http::Response` it
/// converts into, and the response rebuilt with its URL.
macro_rules! reqwest_response {
    ($reqwest:ident) => {
        impl HttpResponse for $reqwest::Response {
            fn status(&self) -> u16 {
                self.status().as_u16()
            }

            fn headers(&self) -> &http::HeaderMap {
                self.headers()
            }

            async fn read_error_body(self, limit: usize, deadline: Instant) -> (Self, ErrorBody) {
                use $reqwest::ResponseBuilderExt as _;
                let url = self.url().clone();
                let (parts, mut body) = http::Response::<$reqwest::Body>::from(self).into_parts();
                let (read, past) = read_prefix(&mut body, limit, deadline).await;
                let body = $reqwest::Body::wrap(put_back(read.bytes(), past, body));
                let mut builder = http::Response::builder().status(parts.status).version(parts.version).url(url);
                if let Some(headers) = builder.headers_mut() {
                    *headers = parts.headers;
                }
                if let Some(extensions) = builder.extensions_mut() {
                    extensions.extend(parts.extensions);
                }
                let response = builder.body(body).expect("the parts of a response make a response");
                ($reqwest::Response::from(response), read)
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

reqwest_response!(reqwest);
#[cfg(any(feature = "async-openai", feature = "reqwest-middleware"))]
reqwest_response!(reqwest_013);

/// [`HttpResponse`] for an `http::Response` of a boxed body type.
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

            async fn read_error_body(self, limit: usize, deadline: Instant) -> (Self, ErrorBody) {
                let (parts, mut body) = self.into_parts();
                let (read, past) = read_prefix(&mut body, limit, deadline).await;
                let body = http_body_util::combinators::$boxed::new(put_back(read.bytes(), past, body));
                (http::Response::from_parts(parts, body), read)
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
