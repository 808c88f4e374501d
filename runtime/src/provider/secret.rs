//! The API key kept secret: a [`Secret`] redacts the key, and every piece of it long enough to
//! matter, from any text; [`display_url`] hides what a URL may carry of a key (its userinfo, query
//! and fragment) before the URL is shown.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;
use std::sync::Arc;

/// What replaces the API key, or a piece of it, wherever it would appear in a text.
pub(crate) const REDACTED: &str = "<redacted>";

/// The shortest piece of a key (in bytes) that is redacted on its own. A server that echoes part
/// of a key (its first or last characters, the key without its `sk-` prefix) must not get that part
/// into an error; shorter pieces are too common in ordinary text to hide, and reveal too little.
pub(crate) const FRAGMENT: usize = 8;

/// An API key. Its Debug shows `"<redacted>"`; texts that might contain it, or pieces of it, go
/// through [`Secret::redact`]. Cloning is cheap (one reference count).
#[derive(Clone)]
pub(crate) struct Secret(Arc<Inner>);

struct Inner {
    key: Box<str>,
    /// Every [`FRAGMENT`]-byte window of the key, packed by [`windows`]; empty for a shorter key.
    /// Built once, so that redacting a text is one pass over it.
    windows: HashSet<u64, BuildHasherDefault<WindowHasher>>,
}

impl Secret {
    /// The key, or `None` when it is empty.
    pub(crate) fn new(key: Option<String>) -> Option<Self> {
        key.filter(|key| !key.is_empty()).map(|key| {
            let windows = windows(key.as_bytes()).map(|(_, packed)| packed).collect();
            Self(Arc::new(Inner { key: key.into_boxed_str(), windows }))
        })
    }

    /// The key itself, for a request header only.
    pub(crate) fn expose(&self) -> &str {
        &self.0.key
    }

    /// `text` with every run of [`FRAGMENT`] or more consecutive bytes of the key replaced by
    /// `"<redacted>"` (the whole key, its first or last characters, the key without a prefix...);
    /// runs that overlap or touch become one `"<redacted>"`. A key shorter than [`FRAGMENT`] is
    /// redacted where it appears whole. The same holds for the key percent-encoded (a gateway's key
    /// with `/`, `+` or `=`, echoed in a URL or a form): a run counts the key's bytes it decodes to,
    /// so `%2F` is one byte of the key, as `/` is. Borrows `text` when nothing in it is redacted.
    pub(crate) fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let runs = self.runs(text);
        if runs.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut redacted = String::with_capacity(text.len());
        let mut copied = 0;
        for run in runs {
            redacted.push_str(&text[copied..run.start]);
            redacted.push_str(REDACTED);
            copied = run.end;
        }
        redacted.push_str(&text[copied..]);
        Cow::Owned(redacted)
    }

    /// The byte ranges of `text` to redact, in order, merged, on character boundaries: the key's
    /// pieces as they are, and (only in a text with a `%`) as they are once percent-decoded.
    fn runs(&self, text: &str) -> Vec<Range<usize>> {
        let mut found = Vec::new();
        self.pieces(text.as_bytes(), &mut |piece| found.push(piece));
        if let Some((decoded, origin)) = percent_decoded(text) {
            self.pieces(&decoded, &mut |piece| found.push(origin[piece.start]..origin[piece.end]));
            found.sort_unstable_by_key(|piece| piece.start);
        }
        let mut runs: Vec<Range<usize>> = Vec::new();
        for piece in found {
            // A key that is not ASCII can match part of a character: the whole character goes.
            let run = floor_char_boundary(text, piece.start)..ceil_char_boundary(text, piece.end);
            match runs.last_mut() {
                Some(last) if run.start <= last.end => last.end = last.end.max(run.end),
                _ => runs.push(run),
            }
        }
        runs
    }

    /// Hands `found` every range of `bytes` that is a piece of the key to redact, in order: each
    /// [`FRAGMENT`]-byte window of the key, or for a shorter key each place it appears whole.
    fn pieces(&self, bytes: &[u8], found: &mut impl FnMut(Range<usize>)) {
        if self.0.windows.is_empty() {
            let key = self.0.key.as_bytes();
            let mut from = 0;
            while let Some(at) = bytes[from..].windows(key.len()).position(|window| window == key) {
                found(from + at..from + at + key.len());
                from += at + key.len();
            }
            return;
        }
        for (start, packed) in windows(bytes) {
            if self.0.windows.contains(&packed) {
                found(start..start + FRAGMENT);
            }
        }
    }
}

/// `text` percent-decoded (`%2F` -> `/`; a `%` without two hex digits stays as it is), and for each
/// decoded byte where it starts in `text` (one more entry: the end); `None` when nothing decodes.
/// Decoded bytes need not be UTF-8: only the key's bytes are looked for in them.
fn percent_decoded(text: &str) -> Option<(Vec<u8>, Vec<usize>)> {
    let bytes = text.as_bytes();
    let hex = |at: usize| bytes.get(at).and_then(|&byte| char::from(byte).to_digit(16));
    // Nothing is allocated for a text without an escape: the common case, on every failure.
    let first = (0..bytes.len()).find(|&at| bytes[at] == b'%' && hex(at + 1).is_some() && hex(at + 2).is_some())?;
    let mut decoded = bytes[..first].to_vec();
    let mut origin: Vec<usize> = (0..first).collect();
    let mut index = first;
    while index < bytes.len() {
        origin.push(index);
        match (bytes[index], hex(index + 1), hex(index + 2)) {
            (b'%', Some(high), Some(low)) => {
                // Two hex digits make one byte: the cast cannot lose anything.
                decoded.push((high * 16 + low) as u8);
                index += 3;
            }
            (byte, _, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    origin.push(bytes.len());
    Some((decoded, origin))
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// `text` with the key (if any) and its pieces redacted ([`Secret::redact`]).
pub(crate) fn redact(text: &str, secret: Option<&Secret>) -> String {
    match secret {
        Some(secret) => secret.redact(text).into_owned(),
        None => text.to_owned(),
    }
}

/// Every [`FRAGMENT`]-byte window of `bytes`: its start and its bytes packed in a `u64`
/// (little-endian), rolled one byte at a time.
fn windows(bytes: &[u8]) -> impl Iterator<Item = (usize, u64)> + '_ {
    let mut packed = 0u64;
    bytes.iter().enumerate().filter_map(move |(index, &byte)| {
        packed = (packed >> 8) | (u64::from(byte) << 56);
        let start = (index + 1).checked_sub(FRAGMENT)?;
        Some((start, packed))
    })
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

/// Hashes a packed window with one multiplication. The windows already are the data, and the
/// server's text cannot add to the set it is looked up in, so SipHash's resistance to chosen
/// collisions would only cost time on every byte of every redacted text.
#[derive(Default)]
struct WindowHasher(u64);

impl Hasher for WindowHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        // The table picks buckets with the low bits: fold the well-mixed high bits into them.
        self.0 ^ (self.0 >> 32)
    }
}

/// `url` as it may be shown in a message or in Debug output: a key pasted into it does not show.
///
/// The userinfo's user name and password (`https://user:sk-...@host`), every query value
/// (`?key=sk-...`, `?api_key=...`; a query item without `=` as a whole) and the fragment become
/// `<redacted>`; the scheme, host, port, path and query names stay, so the URL still says where
/// calls go. A text that does not start with `scheme://` is hidden whole: it may be a key pasted in
/// the wrong place. Any text is accepted, valid URL or not; nothing is decoded or normalized.
/// Borrows `url` when it has nothing to hide.
///
/// # Examples
///
/// ```
/// use agentic_runtime::provider::display_url;
///
/// assert_eq!(
///     display_url("https://me:sk-123@host/v1?key=sk-123&v=2"),
///     "https://<redacted>:<redacted>@host/v1?key=<redacted>&v=<redacted>",
/// );
/// assert_eq!(display_url("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
/// ```
pub fn display_url(url: &str) -> Cow<'_, str> {
    let Some(authority_start) = scheme_end(url) else {
        return Cow::Borrowed(hidden(url));
    };
    // As URL parsers do: the authority ends at the path, the query or the fragment, and the
    // userinfo at the authority's last `@`.
    let authority_end = url[authority_start..].find(['/', '\\', '?', '#']).map_or(url.len(), |at| authority_start + at);
    let userinfo_end = url[authority_start..authority_end].rfind('@').map(|at| authority_start + at);
    let fragment_start = url[authority_end..].find('#').map(|at| authority_end + at);
    let query_end = fragment_start.unwrap_or(url.len());
    let query_start = url[authority_end..query_end].find('?').map(|at| authority_end + at);
    if userinfo_end.is_none() && query_start.is_none() && fragment_start.is_none() {
        return Cow::Borrowed(url);
    }

    let mut shown = String::with_capacity(url.len() + 4 * REDACTED.len());
    shown.push_str(&url[..authority_start]);
    let host_start = match userinfo_end {
        Some(at) => {
            let userinfo = &url[authority_start..at];
            let (user, password) = match userinfo.split_once(':') {
                Some((user, password)) => (user, Some(password)),
                None => (userinfo, None),
            };
            shown.push_str(hidden(user));
            if let Some(password) = password {
                shown.push(':');
                shown.push_str(hidden(password));
            }
            at
        }
        None => authority_start,
    };
    shown.push_str(&url[host_start..query_start.unwrap_or(query_end)]);
    if let Some(start) = query_start {
        shown.push('?');
        for (index, item) in url[start + 1..query_end].split('&').enumerate() {
            if index > 0 {
                shown.push('&');
            }
            match item.split_once('=') {
                Some((name, value)) => {
                    shown.push_str(name);
                    shown.push('=');
                    shown.push_str(hidden(value));
                }
                None => shown.push_str(hidden(item)),
            }
        }
    }
    if let Some(start) = fragment_start {
        shown.push('#');
        shown.push_str(hidden(&url[start + 1..]));
    }
    Cow::Owned(shown)
}

/// Where the part after `scheme://` starts, when `url` starts with a scheme.
fn scheme_end(url: &str) -> Option<usize> {
    let at = url.find("://")?;
    let scheme = &url[..at];
    let valid = scheme.starts_with(|first: char| first.is_ascii_alphabetic())
        && scheme.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'-' | b'.'));
    valid.then_some(at + 3)
}

/// `"<redacted>"` for a part with something in it; an empty part stays empty.
fn hidden(part: &str) -> &str {
    if part.is_empty() { "" } else { REDACTED }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENAI: &str = "sk-proj-Zq7vK2mN9xR4tB8wL1pC6hJ3fD5gS0yE";
    const ANTHROPIC: &str = "sk-ant-api03-Zq7vK2mN9xR4tB8wL1pC6hJ3fD5gS0yEaB-cD_eF";

    fn secret(key: &str) -> Secret {
        Secret::new(Some(key.to_owned())).unwrap()
    }

    fn redacted(key: &str, text: &str) -> String {
        secret(key).redact(text).into_owned()
    }

    #[test]
    fn the_first_and_last_twelve_characters_are_redacted() {
        let first = &ANTHROPIC[..12];
        let last = &ANTHROPIC[ANTHROPIC.len() - 12..];
        assert_eq!(redacted(ANTHROPIC, &format!("key {first}... rejected")), "key <redacted>... rejected");
        assert_eq!(redacted(ANTHROPIC, &format!("key ...{last} rejected")), "key ...<redacted> rejected");
    }

    #[test]
    fn the_key_without_its_prefix_is_redacted() {
        let without_sk = &OPENAI["sk-".len()..];
        assert_eq!(redacted(OPENAI, &format!("bad key '{without_sk}'")), "bad key '<redacted>'");
        let without_prefix = &ANTHROPIC["sk-ant-api03-".len()..];
        assert_eq!(redacted(ANTHROPIC, &format!("bad key '{without_prefix}'")), "bad key '<redacted>'");
        assert_eq!(redacted(ANTHROPIC, &format!("{}:", &ANTHROPIC[3..])), "<redacted>:");
    }

    #[test]
    fn eight_characters_are_a_fragment_and_seven_are_not() {
        let eight = &OPENAI[10..18];
        let seven = &OPENAI[10..17];
        assert_eq!(redacted(OPENAI, &format!("[{eight}]")), "[<redacted>]");
        assert_eq!(redacted(OPENAI, &format!("[{seven}]")), format!("[{seven}]"));
        let text = format!("[{seven}]");
        assert!(matches!(secret(OPENAI).redact(&text), Cow::Borrowed(_)), "nothing to redact: borrowed");
    }

    #[test]
    fn two_fragments_the_whole_key_and_touching_fragments() {
        let text = format!("a {} b {} c", &OPENAI[..9], &OPENAI[20..30]);
        assert_eq!(redacted(OPENAI, &text), "a <redacted> b <redacted> c");
        assert_eq!(redacted(OPENAI, &format!("{OPENAI}{OPENAI} and {OPENAI}")), "<redacted> and <redacted>");
        // Two pieces that touch (the last 12 then the first 12) are one run.
        let touching = format!("x{}{}x", &OPENAI[OPENAI.len() - 12..], &OPENAI[..12]);
        assert_eq!(redacted(OPENAI, &touching), "x<redacted>x");
    }

    #[test]
    fn a_fragment_straddling_other_text_is_redacted_to_its_edges() {
        // `sk-proj-` (8 characters) starts the key; "proj-Zq7" follows in it; the 'x' after them is not the key.
        assert_eq!(redacted(OPENAI, "token=sk-proj-Zq7x;"), "token=<redacted>x;");
        assert_eq!(redacted(OPENAI, "proj-Zq7vK2"), "<redacted>");
        assert_eq!(redacted(OPENAI, "Xsk-proj-Zq7vK2mN9xR4tB8wL1pC6hJ3fD5gS0yEX"), "X<redacted>X");
    }

    #[test]
    fn non_ascii_text_around_fragments_stays_valid() {
        let text = format!("é{}日本{}\u{1f600}", &OPENAI[..12], &OPENAI[OPENAI.len() - 9..]);
        assert_eq!(redacted(OPENAI, &text), "é<redacted>日本<redacted>\u{1f600}");
        assert_eq!(redacted(OPENAI, "日本語のテキスト、鍵なし"), "日本語のテキスト、鍵なし");
    }

    #[test]
    fn a_non_ascii_key_never_splits_a_character() {
        // The key's bytes match inside characters of the text: whole characters go, none is split.
        let key = "ééééé";
        let text = "aéééééb ééééx";
        let out = redacted(key, text);
        assert_eq!(out, "a<redacted>b <redacted>x");
        // A match that starts inside a character (U+2029 ends with the byte that follows `\xc3` in
        // the key) and ends inside one: both characters go whole.
        assert_eq!(redacted(key, "\u{2029}\u{e9}\u{e9}\u{e9}\u{e9}!"), "<redacted>!");
    }

    #[test]
    fn a_short_key_is_redacted_only_whole() {
        assert_eq!(redacted("abc123", "abc123 and abc12"), "<redacted> and abc12");
        assert_eq!(redacted("12345678", "x1234567812345678"), "x<redacted>");
        assert!(matches!(secret("abc123").redact("nothing"), Cow::Borrowed("nothing")));
        assert_eq!(redacted(OPENAI, "short"), "short");
        assert_eq!(redact("no key", None), "no key");
        assert_eq!(format!("{:?}", secret(OPENAI)), "<redacted>");
        assert!(Secret::new(Some(String::new())).is_none());
    }

    #[test]
    fn the_key_percent_encoded_is_redacted_by_the_same_rule() {
        // A gateway's key with `/`, `+` and `=`, echoed URL-encoded (either case of hex digits).
        let key = "gw-Ab/cD+eF=gH/iJ+kL==";
        let encoded = "gw-Ab%2FcD%2BeF%3DgH%2FiJ%2BkL%3D%3D";
        assert_eq!(redacted(key, &format!("bad key: {encoded}.")), "bad key: <redacted>.");
        assert_eq!(redacted(key, "key=gw-Ab%2fcD%2beF%3dgH%2fiJ%2bkL%3d%3d&x=1"), "key=<redacted>&x=1");
        // Partly encoded, and a piece of 8 key bytes (3 of them encoded, 14 text bytes).
        assert_eq!(redacted(key, "[gw-Ab%2FcD+eF=gH%2f]"), "[<redacted>]");
        assert_eq!(redacted(key, "<%2BeF%3DgH%2Fi>"), "<<redacted>>");
        // 7 bytes of the key, however long encoded, are not a piece; nor is a malformed escape.
        assert_eq!(redacted(key, "<%2BeF%3DgH%2F>"), "<%2BeF%3DgH%2F>");
        assert_eq!(redacted(key, "100% gw-Ab/c %zz %2"), "100% gw-Ab/c %zz %2");
        assert!(matches!(secret(key).redact("50%2F off"), Cow::Borrowed(_)));
        // Next to the key as it is, and a short key encoded whole.
        assert_eq!(redacted(key, &format!("{key} {encoded}")), "<redacted> <redacted>");
        assert_eq!(redacted("a/b+c", "k=a%2Fb%2Bc; a/b+c"), "k=<redacted>; <redacted>");
        // An encoded byte that is not UTF-8 beside text that is: the output stays valid.
        assert_eq!(redacted(key, "é%FF%2BeF%3DgH%2FiJé"), "é%FF<redacted>é");
    }

    #[test]
    fn no_eight_character_window_of_the_key_survives() {
        let text = format!(
            "{} | {} | {} | {} | {OPENAI}",
            &OPENAI[..12],
            &OPENAI[OPENAI.len() - 12..],
            &OPENAI[3..],
            &OPENAI[5..21]
        );
        let out = redacted(OPENAI, &text);
        for window in OPENAI.as_bytes().windows(FRAGMENT) {
            let window = std::str::from_utf8(window).unwrap();
            assert!(!out.contains(window), "{window} in {out}");
        }
        assert_eq!(out, "<redacted> | <redacted> | <redacted> | <redacted> | <redacted>");
    }

    #[test]
    fn urls_hide_userinfo_query_values_and_fragments() {
        let cases = [
            ("https://api.example.com/v1", "https://api.example.com/v1"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            ("https://user:sk-abc@host/v1", "https://<redacted>:<redacted>@host/v1"),
            ("https://sk-abc@host:443/v1", "https://<redacted>@host:443/v1"),
            ("https://:sk-abc@host", "https://:<redacted>@host"),
            ("https://user:p@ss@host/", "https://<redacted>:<redacted>@host/"),
            ("https://host/v1?key=sk-abc", "https://host/v1?key=<redacted>"),
            ("https://host/v1?api_key=sk-abc&x=&sk-bare", "https://host/v1?api_key=<redacted>&x=&<redacted>"),
            ("https://u:k@host/p?key=v#frag", "https://<redacted>:<redacted>@host/p?key=<redacted>#<redacted>"),
            ("https://host/p#?key=v", "https://host/p#<redacted>"),
            ("https://host/a@b/c", "https://host/a@b/c"),
            ("ftp://u:sk-abc@host", "ftp://<redacted>:<redacted>@host"),
            // Not a URL: perhaps the key itself, in the base URL's place.
            ("sk-proj-Zq7vK2mN9xR4tB8wL1pC6hJ3fD5gS0yE", "<redacted>"),
            ("user:sk-abc@host/v1", "<redacted>"),
            ("localhost:8080/v1?key=sk-abc", "<redacted>"),
            ("://host", "<redacted>"),
            ("", ""),
            ("https://hôst/é?clé=日本", "https://hôst/é?clé=<redacted>"),
        ];
        for (url, shown) in cases {
            assert_eq!(display_url(url), shown, "{url}");
        }
        assert!(matches!(display_url("https://host/v1"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_config_error_never_shows_the_base_url() {
        let names = super::super::http::EnvNames {
            provider: "openai",
            keys: &["OPENAI_API_KEY"],
            base_url: "OPENAI_BASE_URL",
            default_base_url: "https://api.openai.com/v1",
        };
        for url in [format!("ftp://user:{OPENAI}@host"), format!("http://user:{OPENAI}@[::1/v1?key={OPENAI}")] {
            let lookup = |name: &str| (name == "OPENAI_BASE_URL").then(|| url.clone());
            let error = names.read(lookup).unwrap_err();
            let text = format!("{error} {error:?}");
            assert!(!text.contains(&OPENAI[3..11]), "{text}");
        }
    }
}
