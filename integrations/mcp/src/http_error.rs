//! What went wrong between our HTTP client and a server ([`HttpError`]), never with the URL in it:
//! reqwest's errors lose theirs ([`reqwest::Error::without_url`]), a redirect names an origin alone.

use reqwest_013 as reqwest;

use crate::text::describe;

/// What went wrong sending a request, or reading its answer; never with the URL in it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    /// The server answered with a redirect, which is not followed.
    #[error("{status}, a redirect to {target}")]
    Redirect {
        /// The status, 3xx.
        status: u16,
        /// Where it pointed: an origin (`scheme://host:port`), never a path or a query.
        target: String,
    },
    /// reqwest's error, without its URL.
    #[error("{}", describe(.0))]
    Request(reqwest::Error),
}

impl From<reqwest::Error> for HttpError {
    fn from(error: reqwest::Error) -> Self {
        Self::Request(error.without_url())
    }
}

impl HttpError {
    /// True when the server was never reached (nothing was sent).
    pub(crate) fn is_connect(&self) -> bool {
        matches!(self, Self::Request(error) if error.is_connect())
    }
}
