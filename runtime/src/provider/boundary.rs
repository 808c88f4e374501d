//! What the HTTP client refuses at the trust boundary, and how it says so: a redirect (never
//! followed, so the key and the prompt go nowhere else), a TLS certificate that is not trusted and
//! a response head it cannot read (configuration fixes both, not waiting). docs/design.md §3.

use super::secret::{Secret, redact};
use crate::error::ModelError;

/// The error of a 3xx: the client follows no redirect (see [`client`](super::http::endpoint::client)).
/// Permanent (the typed verdict of a 3xx): the same request gets the same redirect. The text names
/// the status and the origin the `Location` points to, never its path or query (where a key may
/// be), redacted.
pub(super) fn redirect_error(response: &reqwest::Response, secret: Option<&Secret>) -> ModelError {
    let status = response.status();
    let location = response.headers().get(reqwest::header::LOCATION).map(|value| value.as_bytes());
    let target = location_origin(response.url(), location);
    let same = if target == response.url().origin().ascii_serialization() { " (this same server)" } else { "" };
    let text = format!(
        "redirect to {target}{same}, not followed: a model API answers a POST itself, and following the \
         redirect would send the API key and the prompt to where it points; set the base URL to the server \
         that answers, if you trust it"
    );
    ModelError::http(status.as_u16(), redact(&text, secret))
}

/// The origin (`scheme://host[:port]`) a `Location` header points to, resolved against the
/// request's URL: never its userinfo, path, query or fragment.
fn location_origin(request: &reqwest::Url, location: Option<&[u8]>) -> String {
    let Some(location) = location else { return "nowhere (no `Location` header)".to_owned() };
    let resolved = std::str::from_utf8(location).ok().and_then(|location| request.join(location.trim()).ok());
    match resolved.map(|url| url.origin()) {
        Some(origin) if origin.is_tuple() => origin.ascii_serialization(),
        _ => "an invalid or non-HTTP `Location`".to_owned(),
    }
}

/// What is wrong with a certificate rustls refused, or `None` for a TLS failure of another kind
/// (a connection cut mid-handshake is transient).
pub(super) fn certificate_refused(error: &rustls::Error) -> Option<&'static str> {
    use rustls::CertificateError as Why;
    let rustls::Error::InvalidCertificate(why) = error else { return None };
    Some(match why {
        Why::Expired | Why::ExpiredContext { .. } => "the server's TLS certificate has expired",
        Why::NotValidYet | Why::NotValidYetContext { .. } => "the server's TLS certificate is not valid yet",
        Why::NotValidForName | Why::NotValidForNameContext { .. } => {
            "the server's TLS certificate is for another name than the base URL's host"
        }
        Why::Revoked => "the server's TLS certificate was revoked",
        _ => "the server's TLS certificate is not trusted (self-signed, or signed by an authority not trusted here)",
    })
}

/// How to fix a refused certificate; and why a retry cannot.
pub(super) const CERTIFICATE_FIX: &str = ": the client trusts the public certificate authorities built \
     into it (Mozilla's list), not the system's store; give the server a certificate one of them signed, or reach \
     a local server over `http://`; retrying cannot help";

/// What is wrong with a response head hyper could not parse, or `None` for another failure.
/// (hyper's `is_parse_too_large` exists only with its server feature: its text says it instead;
/// too many headers are "too large" too.)
pub(super) fn bad_head(error: &hyper::Error) -> Option<&'static str> {
    if error.is_parse() && error.to_string().contains("too large") {
        Some("the response head was too large (over the client's limits: 100 headers, 408 KiB)")
    } else if error.is_parse() {
        Some(
            "the response head was malformed (not an HTTP/1.1 status line and headers: a TLS server reached over \
             `http://`, or another protocol's port?)",
        )
    } else {
        None
    }
}

/// Where a bad response head comes from, and why a retry cannot fix it.
pub(super) const HEAD_FIX: &str = ": the same server sends the same head, so retrying cannot help; check \
     that the base URL points to the model API, and whether a proxy between (`HTTPS_PROXY`) adds headers";

/// What configuration, not waiting, must fix in a failed request of a user's own reqwest client (a
/// refused certificate, a response head it cannot read), or `None`: the same rules as the
/// providers' (`Classify for reqwest::Error`: reqwest wraps rustls 0.23 and hyper 1 errors, which
/// other clients on those share). `in_body`: the failure came while reading a body (reqwest's
/// `is_body() || is_decode()`), which is never a bad head.
pub(crate) fn configuration_fault(error: &(dyn std::error::Error + 'static), in_body: bool) -> Option<&'static str> {
    if let Some(refused) = cause::<rustls::Error>(error).and_then(certificate_refused) {
        return Some(refused);
    }
    if in_body {
        return None;
    }
    cause::<hyper::Error>(error).and_then(bad_head)
}

/// The first cause of type `T` in `error`'s chain, looking inside I/O errors too (whose `source`
/// skips the error they wrap: that is where a TLS error travels).
pub(super) fn cause<'e, T: std::error::Error + 'static>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e T> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(found) = error.downcast_ref::<T>() {
            return Some(found);
        }
        let wrapped = error.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref);
        if let Some(found) = wrapped.and_then(|inner| cause::<T>(inner)) {
            return Some(found);
        }
        next = error.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_shows_only_its_origin() {
        let request = reqwest::Url::parse("http://127.0.0.1:8080/v1/chat/completions?api-version=1").unwrap();
        let origin = |location: Option<&str>| location_origin(&request, location.map(str::as_bytes));
        assert_eq!(
            origin(Some("https://user:sk-secret@evil.example:8443/steal?key=sk-x#f")),
            "https://evil.example:8443"
        );
        assert_eq!(origin(Some("https://evil.example:443/")), "https://evil.example");
        assert_eq!(origin(Some(" /v2/chat ")), "http://127.0.0.1:8080");
        assert_eq!(origin(Some("//other:9/x")), "http://other:9");
        assert_eq!(origin(Some("http://[::1/")), "an invalid or non-HTTP `Location`");
        assert_eq!(origin(Some("mailto:sk-secret@example.com")), "an invalid or non-HTTP `Location`");
        assert_eq!(origin(None), "nowhere (no `Location` header)");
        assert_eq!(location_origin(&request, Some(b"http://h\xff/")), "an invalid or non-HTTP `Location`");
    }

    #[test]
    fn a_refused_certificate_is_found_inside_an_io_error_and_named() {
        use rustls::CertificateError as Why;
        let refused = |why: Why| {
            let io = std::io::Error::new(std::io::ErrorKind::InvalidData, rustls::Error::InvalidCertificate(why));
            let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(io);
            cause::<rustls::Error>(&*boxed).and_then(certificate_refused)
        };
        assert_eq!(refused(Why::Expired), Some("the server's TLS certificate has expired"));
        assert_eq!(
            refused(Why::NotValidForName),
            Some("the server's TLS certificate is for another name than the base URL's host")
        );
        assert!(refused(Why::UnknownIssuer).unwrap().starts_with("the server's TLS certificate is not trusted"));
        // A handshake cut short is not a certificate's fault: transient, as before.
        assert_eq!(certificate_refused(&rustls::Error::HandshakeNotComplete), None);
        let plain = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert!(cause::<rustls::Error>(&plain).is_none());
    }
}
