//! The API key a request carries, read for an error that echoes it and for the rate limit's
//! buckets; never stored.

use crate::http::Request;
use crate::wire::WireFormat;

/// The API key a request carries: in the headers of its own wire first, then in every other
/// wire's (in [`WireFormat::ALL`]'s order), then Azure's `api-key`. `authorization` is read as a
/// bearer token (its value whole when it names another scheme).
pub(super) fn api_key(request: &Request, wire: Option<WireFormat>) -> Option<String> {
    let own = wire.map_or(&[][..], |wire| wire.render().names().key_headers);
    let others = WireFormat::ALL.into_iter().filter(|other| Some(*other) != wire);
    let names = own.iter().chain(others.flat_map(|other| other.render().names().key_headers)).chain(&["api-key"]);
    let found = names.filter_map(|name| request.header(name).map(|value| (*name, value))).next();
    found.map(|(name, value)| match name {
        "authorization" => {
            let token = value.split_once(' ').filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"));
            token.map_or(value, |(_, token)| token.trim()).to_owned()
        }
        _ => value.to_owned(),
    })
}

/// The key a request's rate limit is counted under: its API key (as [`api_key`] finds it) or its
/// `key` query parameter (Gemini's); `None` (one anonymous key) without either.
pub(super) fn rate_key(request: &Request, wire: WireFormat) -> Option<String> {
    api_key(request, Some(wire)).or_else(|| request.query_param("key").map(str::to_owned))
}
