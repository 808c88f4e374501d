//! Just enough HTTP/1.1, written by hand over a `TcpStream` so that every fault is exact: the
//! server decides which bytes reach the socket, when, and when the socket closes.
//!
//! Requests are parsed with `httparse` (hyper's parser), with `content-length` or chunked bodies,
//! `expect: 100-continue`, keep-alive and pipelining. Responses are written whole or as chunked
//! bodies; output is buffered and flushed before every pause and before the socket is dropped, so
//! that a client sees exactly the chunks a step promises.

use std::io;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest request head read.
const MAX_HEAD: usize = 64 * 1024;
/// The largest request body read (prompts can be big; context-overflow tests send big ones).
const MAX_BODY: usize = 64 * 1024 * 1024;
/// The most request headers parsed.
const MAX_HEADERS: usize = 128;
/// Output queued beyond this is written before more is queued, so that a long answer never sits
/// whole in memory.
const MAX_QUEUED: usize = 64 * 1024;
/// How much a flood without pauses writes at once.
const FLOOD_BATCH: usize = 16 * 1024;

/// One parsed request.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
    /// The path without the query.
    pub(crate) path: String,
    /// The query, without its `?` (empty without one).
    pub(crate) query: String,
    /// Header names in lowercase.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    pub(crate) keep_alive: bool,
}

impl Request {
    /// The first value of header `name` (lowercase).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The first value of the query parameter `name`, as sent (not percent-decoded).
    pub(crate) fn query_param(&self, name: &str) -> Option<&str> {
        let pairs = self.query.split('&').filter_map(|pair| pair.split_once('=').or(Some((pair, ""))));
        pairs.filter(|(n, _)| *n == name).map(|(_, value)| value).next()
    }
}

/// Why no request could be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The socket failed or closed mid-request: nothing to answer.
    Io,
    /// The request is not valid HTTP/1.1, or too large: answer `status` and close.
    Bad { status: u16, message: &'static str },
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        Self::Io
    }
}

fn bad(status: u16, message: &'static str) -> ReadError {
    ReadError::Bad { status, message }
}

/// A connection: the socket, what was read but not yet used, and output not yet written.
pub(crate) struct Conn {
    stream: TcpStream,
    input: Vec<u8>,
    output: Vec<u8>,
}

impl Conn {
    pub(crate) fn new(stream: TcpStream) -> Self {
        Self { stream, input: Vec::with_capacity(8 * 1024), output: Vec::with_capacity(8 * 1024) }
    }

    /// The address the client connected to: this server's own.
    pub(crate) fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.stream.local_addr()
    }

    /// Read more input; 0 at the end of the stream.
    async fn fill(&mut self) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.stream.read(&mut chunk).await?;
        self.input.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// The next request, or `None` when the client closed the connection between requests.
    pub(crate) async fn read_request(&mut self) -> Result<Option<Request>, ReadError> {
        let (head_len, mut request, content_length, chunked, expect_continue) = loop {
            // Tolerate the blank lines some clients send between requests (RFC 9112 2.2).
            let blank = self.input.iter().take_while(|b| matches!(b, b'\r' | b'\n')).count();
            self.input.drain(..blank);
            if !self.input.is_empty() {
                let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut parsed = httparse::Request::new(&mut headers);
                match parsed.parse(&self.input) {
                    Ok(httparse::Status::Complete(len)) => break head_of(&parsed, len)?,
                    Ok(httparse::Status::Partial) if self.input.len() > MAX_HEAD => {
                        return Err(bad(431, "the request head is too large"));
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(httparse::Error::TooManyHeaders) => {
                        return Err(bad(431, "the request has too many headers"));
                    }
                    Err(_) => return Err(bad(400, "the request is not valid HTTP/1.1")),
                }
            }
            if self.fill().await? == 0 {
                return if self.input.is_empty() { Ok(None) } else { Err(ReadError::Io) };
            }
        };
        self.input.drain(..head_len);
        if expect_continue && (chunked || content_length.unwrap_or(0) > self.input.len()) {
            self.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
        }
        request.body = if chunked {
            loop {
                match decode_chunked(&self.input)? {
                    Some((body, used)) => {
                        self.input.drain(..used);
                        break body;
                    }
                    None if self.input.len() > MAX_BODY + MAX_HEAD => {
                        return Err(bad(413, "the request body is too large"));
                    }
                    None => {
                        if self.fill().await? == 0 {
                            return Err(ReadError::Io);
                        }
                    }
                }
            }
        } else {
            let len = content_length.unwrap_or(0);
            if len > MAX_BODY {
                return Err(bad(413, "the request body is too large"));
            }
            while self.input.len() < len {
                if self.fill().await? == 0 {
                    return Err(ReadError::Io);
                }
            }
            self.input.drain(..len).collect()
        };
        Ok(Some(request))
    }

    /// Queue bytes to send.
    pub(crate) fn send(&mut self, bytes: &[u8]) {
        self.output.extend_from_slice(bytes);
    }

    /// Queue `data` as one chunk of a chunked body.
    pub(crate) fn send_chunk(&mut self, data: &[u8]) {
        chunk_into(&mut self.output, data);
    }

    /// Write what is queued if it has grown large.
    pub(crate) async fn flush_if_full(&mut self) -> io::Result<()> {
        if self.output.len() >= MAX_QUEUED { self.flush().await } else { Ok(()) }
    }

    /// Queue the end of a chunked body.
    pub(crate) fn send_last_chunk(&mut self) {
        self.output.extend_from_slice(b"0\r\n\r\n");
    }

    /// Write everything queued to the socket.
    pub(crate) async fn flush(&mut self) -> io::Result<()> {
        if !self.output.is_empty() {
            self.stream.write_all(&self.output).await?;
            self.output.clear();
        }
        Ok(())
    }

    /// Flush, then wait until the client closes the connection (anything it sends is discarded).
    pub(crate) async fn hang(&mut self) {
        if self.flush().await.is_err() {
            return;
        }
        until_closed(&mut self.stream).await;
    }

    /// Flush, then write what `next` appends, over and over: once every `interval`, or as fast as
    /// the client reads when `interval` is zero. Ends when the client closes its side, the
    /// connection fails, or `next` appends nothing.
    ///
    /// At most one batch is in memory, and a client that stops reading blocks the writes (the
    /// task sleeps, it does not spin).
    pub(crate) async fn flood(&mut self, interval: Duration, mut next: impl FnMut(&mut Vec<u8>)) {
        if self.flush().await.is_err() {
            return;
        }
        let (mut reader, mut writer) = self.stream.split();
        // Reading only ever finishes at the client's end, so the write it cancels is the last one.
        let closed = until_closed(&mut reader);
        tokio::pin!(closed);
        let mut batch = Vec::with_capacity(FLOOD_BATCH);
        loop {
            batch.clear();
            loop {
                let before = batch.len();
                next(&mut batch);
                if batch.len() == before {
                    return;
                }
                if !interval.is_zero() || batch.len() >= FLOOD_BATCH {
                    break;
                }
            }
            let send = async {
                if !interval.is_zero() {
                    tokio::time::sleep(interval).await;
                }
                writer.write_all(&batch).await
            };
            tokio::select! {
                () = &mut closed => return,
                written = send => if written.is_err() {
                    return;
                },
            }
        }
    }
}

/// Read and discard until the end of the stream or an error.
async fn until_closed(reader: &mut (impl AsyncReadExt + Unpin)) {
    let mut sink = [0u8; 4 * 1024];
    while let Ok(n) = reader.read(&mut sink).await {
        if n == 0 {
            return;
        }
    }
}

/// Append `data` to `out` as one chunk of a chunked body (nothing for empty data, which would end
/// the body).
pub(crate) fn chunk_into(out: &mut Vec<u8>, data: &[u8]) {
    if !data.is_empty() {
        out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
    }
}

type Head = (usize, Request, Option<usize>, bool, bool);

/// The owned request, its framing, and whether it expects `100 Continue`.
fn head_of(parsed: &httparse::Request<'_, '_>, len: usize) -> Result<Head, ReadError> {
    let target = parsed.path.unwrap_or("/");
    let target = target.split('#').next().unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (path, query) = (path.to_owned(), query.to_owned());
    let headers: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|h| (h.name.to_ascii_lowercase(), String::from_utf8_lossy(h.value).trim().to_owned()))
        .collect();
    let find = |name: &'static str| headers.iter().filter(move |(n, _)| n == name).map(|(_, v)| v.to_ascii_lowercase());
    let chunked = find("transfer-encoding").any(|v| v.contains("chunked"));
    let mut lengths = find("content-length");
    let content_length = match lengths.next() {
        None => None,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if lengths.all(|other| other == v) => Some(n),
            _ => return Err(bad(400, "the request's content-length is invalid")),
        },
    };
    let http10 = parsed.version == Some(0);
    let connection: Vec<String> = find("connection").collect();
    let keep_alive = if http10 {
        connection.iter().any(|v| v.contains("keep-alive"))
    } else {
        !connection.iter().any(|v| v.contains("close"))
    };
    let expect_continue = find("expect").any(|v| v == "100-continue");
    let request = Request {
        method: parsed.method.unwrap_or("GET").to_owned(),
        path,
        query,
        headers,
        body: Vec::new(),
        keep_alive,
    };
    Ok((len, request, content_length, chunked, expect_continue))
}

/// Decode a complete chunked body at the start of `input`: the body and the bytes it used, or
/// `None` if more input is needed.
fn decode_chunked(input: &[u8]) -> Result<Option<(Vec<u8>, usize)>, ReadError> {
    let malformed = || bad(400, "the request's chunked body is malformed");
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let Some(line_end) = find_crlf(&input[at..]) else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&input[at..at + line_end]).map_err(|_| malformed())?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| malformed())?;
        if size > MAX_BODY || body.len() + size > MAX_BODY {
            return Err(bad(413, "the request body is too large"));
        }
        at += line_end + 2;
        if size == 0 {
            // Trailers, then an empty line.
            loop {
                let Some(end) = find_crlf(&input[at..]) else {
                    return Ok(None);
                };
                at += end + 2;
                if end == 0 {
                    return Ok(Some((body, at)));
                }
            }
        }
        if input.len() < at + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&input[at..at + size]);
        if &input[at + size..at + size + 2] != b"\r\n" {
            return Err(malformed());
        }
        at += size + 2;
    }
}

fn find_crlf(bytes: &[u8]) -> Option<usize> {
    bytes.windows(2).position(|w| w == b"\r\n")
}

/// A response head.
pub(crate) fn head(status: u16, headers: &[(&str, &str)], keep_alive: bool) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status:03} {}\r\nserver: agentic-chaos\r\n", reason(status));
    for (name, value) in headers {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push_str("\r\n");
    }
    if !keep_alive {
        out.push_str("connection: close\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// The canonical reason phrase of a status.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_decode() {
        let input = b"4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nx-trailer: 1\r\n\r\nNEXT";
        let (body, used) = decode_chunked(input).unwrap().unwrap();
        assert_eq!(body, b"Wikipedia");
        assert_eq!(&input[used..], b"NEXT");
        assert!(decode_chunked(b"4\r\nWi").unwrap().is_none());
        assert!(decode_chunked(b"zz\r\n").is_err());
    }
}
