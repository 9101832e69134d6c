//! `fetch`: an HTTP client over `wasi:http/outgoing-handler`.
//!
//! The plugin follows redirects itself, one hop at a time: every hop is a new outgoing
//! request that goes through the host, so the host's allowlist judges each URL, not only
//! the first one. The host may refuse any hop; the refusal is returned as
//! `tool-error::failed`.

use std::io::Write;

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, Map, ToolError, ToolSpec, Value, failed, invalid, json, output,
    spec, unknown_tool,
};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, IncomingResponse, Method, OutgoingBody, OutgoingRequest,
    Scheme,
};
use wasip2::io::streams::StreamError;

/// At most this many bytes of a response body are returned.
const MAX_BODY: usize = 4 * 1024 * 1024;
/// Default for `max_redirects`.
const DEFAULT_MAX_REDIRECTS: u64 = 5;
/// Hard ceiling for `max_redirects`.
const MAX_MAX_REDIRECTS: u64 = 20;

struct Fetch;

impl Guest for Fetch {
    fn list_tools() -> Vec<ToolSpec> {
        vec![spec(
            "fetch",
            "Makes an HTTP(S) request and returns {\"status\", \"headers\", \"body\", \"url\", \"redirects\", \"truncated\"}. \
             Follows redirects (each hop is checked by the host's allowlist). The body is returned as text, \
             cut at 4 MiB (then \"truncated\" is true).",
            json!({
                "type": "object",
                "properties": {
                    "url": { "type": "string", "description": "Absolute http:// or https:// URL." },
                    "method": { "type": "string", "description": "HTTP method; default GET." },
                    "headers": {
                        "type": "object",
                        "description": "Request headers: name -> value (or list of values).",
                        "additionalProperties": {
                            "oneOf": [
                                { "type": "string" },
                                { "type": "array", "items": { "type": "string" } }
                            ]
                        }
                    },
                    "body": { "type": "string", "description": "Request body, sent as is." },
                    "max_redirects": {
                        "type": "integer", "minimum": 0, "maximum": MAX_MAX_REDIRECTS,
                        "description": "Redirects to follow (default 5); 0 returns the 3xx response itself."
                    }
                },
                "required": ["url"],
                "additionalProperties": false
            }),
            "execute:http:fetch",
            false,
            false,
        )]
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        if tool != "fetch" {
            return Err(unknown_tool(&tool, &Self::list_tools()));
        }
        let input = Input::parse_strict(
            &input,
            &["url", "method", "headers", "body", "max_redirects"],
        )?;
        let request = Request::from_input(&input)?;
        let max_redirects = input
            .opt_u64("max_redirects")?
            .unwrap_or(DEFAULT_MAX_REDIRECTS);
        if max_redirects > MAX_MAX_REDIRECTS {
            return Err(invalid(format!(
                "field `max_redirects` must be at most {MAX_MAX_REDIRECTS}, got {max_redirects}"
            )));
        }
        output(&fetch(request, max_redirects)?)
    }
}

/// One request to send.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    url: Url,
    headers: Vec<(String, String)>,
    body: Option<String>,
}

impl Request {
    fn from_input(input: &Input) -> Result<Self, ToolError> {
        let url =
            Url::parse(input.str("url")?).map_err(|e| invalid(format!("field `url`: {e}")))?;
        let method = input
            .opt_str("method")?
            .unwrap_or("GET")
            .to_ascii_uppercase();
        if method.is_empty() || !method.bytes().all(is_token_byte) {
            return Err(invalid(format!(
                "field `method`: `{method}` is not a valid HTTP method"
            )));
        }
        let mut headers = Vec::new();
        for (name, value) in input.opt_object("headers")?.unwrap_or(&Map::new()) {
            match value {
                Value::String(v) => headers.push((name.clone(), v.clone())),
                Value::Array(values) => {
                    for v in values {
                        let v = v.as_str().ok_or_else(|| {
                            invalid(format!("header `{name}`: values must be strings"))
                        })?;
                        headers.push((name.clone(), v.to_owned()));
                    }
                }
                _ => {
                    return Err(invalid(format!(
                        "header `{name}`: value must be a string or a list of strings"
                    )));
                }
            }
        }
        let body = input.opt_str("body")?.map(str::to_owned);
        Ok(Self {
            method,
            url,
            headers,
            body,
        })
    }

    /// The request to send after a redirect with `status` to `next`.
    fn redirected(&self, status: u16, next: Url) -> Self {
        let mut method = self.method.clone();
        let mut body = self.body.clone();
        let mut headers = self.headers.clone();
        // 303 turns anything but HEAD into GET; 301 and 302 turn POST into GET (what
        // every browser does). 307 and 308 keep method and body.
        let to_get = match status {
            303 => method != "HEAD",
            301 | 302 => method == "POST",
            _ => false,
        };
        if to_get {
            method = "GET".to_owned();
            body = None;
            headers.retain(|(n, _)| {
                !n.eq_ignore_ascii_case("content-type") && !n.eq_ignore_ascii_case("content-length")
            });
        }
        // Credentials are never forwarded to another origin.
        if next.https != self.url.https || !next.authority.eq_ignore_ascii_case(&self.url.authority)
        {
            headers.retain(|(n, _)| {
                !["authorization", "proxy-authorization", "cookie"]
                    .iter()
                    .any(|c| n.eq_ignore_ascii_case(c))
            });
        }
        Self {
            method,
            url: next,
            headers,
            body,
        }
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn fetch(mut request: Request, max_redirects: u64) -> Result<Value, ToolError> {
    let mut redirects = 0;
    loop {
        let response = send(&request)?;
        let status = response.status();
        let headers = response.headers().entries();
        let location = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("location"))
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned());
        // max_redirects = 0: a 3xx is returned as the response itself.
        let follow = max_redirects > 0 && matches!(status, 301 | 302 | 303 | 307 | 308);
        if let Some(location) = location.filter(|_| follow) {
            let next = request.url.join(&location).map_err(|e| {
                failed(format!(
                    "{} redirected to `{location}`, which is not usable: {e}",
                    request.url
                ))
            })?;
            if redirects == max_redirects {
                return Err(failed(format!(
                    "too many redirects: stopped after {redirects} (max_redirects); \
                     the next hop was to {next}"
                )));
            }
            drop(response);
            redirects += 1;
            request = request.redirected(status, next);
            continue;
        }
        let (body, truncated) = read_body(&request.url, response)?;
        let mut header_map = Map::new();
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            let value = String::from_utf8_lossy(&value).into_owned();
            match header_map.get_mut(&name) {
                Some(Value::String(existing)) => {
                    existing.push_str(", ");
                    existing.push_str(&value);
                }
                _ => {
                    header_map.insert(name, Value::String(value));
                }
            }
        }
        return Ok(json!({
            "status": status,
            "headers": header_map,
            "body": String::from_utf8_lossy(&body),
            "url": request.url.to_string(),
            "redirects": redirects,
            "truncated": truncated,
        }));
    }
}

fn refused(url: &Url, e: ErrorCode) -> ToolError {
    failed(format!("request to {url} refused: {e:?}"))
}

/// Sends one request (no redirect handling) and waits for the response head.
fn send(request: &Request) -> Result<IncomingResponse, ToolError> {
    let url = &request.url;
    let headers = Fields::new();
    for (name, value) in &request.headers {
        headers
            .append(name, value.as_bytes())
            .map_err(|e| invalid(format!("header `{name}` refused: {e:?}")))?;
    }
    let outgoing = OutgoingRequest::new(headers);
    let method = match request.method.as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "CONNECT" => Method::Connect,
        "OPTIONS" => Method::Options,
        "TRACE" => Method::Trace,
        "PATCH" => Method::Patch,
        other => Method::Other(other.to_owned()),
    };
    let bad = |what: &str| failed(format!("cannot build the request to {url}: invalid {what}"));
    outgoing.set_method(&method).map_err(|()| bad("method"))?;
    outgoing
        .set_scheme(Some(&if url.https {
            Scheme::Https
        } else {
            Scheme::Http
        }))
        .map_err(|()| bad("scheme"))?;
    outgoing
        .set_authority(Some(&url.authority))
        .map_err(|()| bad("authority"))?;
    outgoing
        .set_path_with_query(Some(&url.path_and_query))
        .map_err(|()| bad("path"))?;
    let body = outgoing
        .body()
        .map_err(|()| failed("cannot get the request body stream"))?;

    let future = outgoing_handler::handle(outgoing, None).map_err(|e| refused(url, e))?;

    // The body is written after `handle`, so that a body larger than the host's buffer
    // streams instead of blocking before the request is sent.
    {
        let mut stream = body
            .write()
            .map_err(|()| failed("cannot open the request body stream"))?;
        if let Some(content) = &request.body {
            stream
                .write_all(content.as_bytes())
                .and_then(|()| Write::flush(&mut stream))
                .map_err(|e| failed(format!("sending the request body to {url} failed: {e}")))?;
        }
    }
    OutgoingBody::finish(body, None).map_err(|e| refused(url, e))?;

    let response = loop {
        match future.get() {
            Some(result) => break result,
            None => future.subscribe().block(),
        }
    };
    match response {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(e)) => Err(refused(url, e)),
        Err(()) => Err(failed(format!(
            "request to {url}: the response was already taken"
        ))),
    }
}

/// Reads at most `MAX_BODY` bytes of the body; returns them and whether there was more.
fn read_body(url: &Url, response: IncomingResponse) -> Result<(Vec<u8>, bool), ToolError> {
    let body: IncomingBody = response
        .consume()
        .map_err(|()| failed(format!("cannot read the response body from {url}")))?;
    let mut bytes = Vec::new();
    let mut truncated = false;
    {
        let stream = body
            .stream()
            .map_err(|()| failed(format!("cannot read the response body from {url}")))?;
        loop {
            let want = (MAX_BODY - bytes.len()).clamp(1, 64 * 1024);
            match stream.blocking_read(want as u64) {
                Ok(chunk) => {
                    if bytes.len() + chunk.len() > MAX_BODY {
                        let keep = MAX_BODY - bytes.len();
                        bytes.extend_from_slice(&chunk[..keep]);
                        truncated = true;
                        break;
                    }
                    bytes.extend_from_slice(&chunk);
                    if bytes.len() == MAX_BODY {
                        // Full: one more byte tells whether the body goes on.
                        match stream.blocking_read(1) {
                            Ok(more) if !more.is_empty() => truncated = true,
                            Ok(_) | Err(StreamError::Closed) => {}
                            Err(StreamError::LastOperationFailed(e)) => {
                                return Err(failed(format!(
                                    "reading the response body from {url} failed: {}",
                                    e.to_debug_string()
                                )));
                            }
                        }
                        break;
                    }
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(failed(format!(
                        "reading the response body from {url} failed: {}",
                        e.to_debug_string()
                    )));
                }
            }
        }
        // The stream is a child of the body: dropped here, before the body.
    }
    drop(body);
    drop(response);
    Ok((bytes, truncated))
}

/// An absolute http(s) URL, split the way wasi:http wants it.
#[derive(Debug, Clone)]
struct Url {
    /// `https` rather than `http`.
    https: bool,
    authority: String,
    /// Starts with `/`; no fragment.
    path_and_query: String,
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}://{}{}",
            self.scheme(),
            self.authority,
            self.path_and_query
        )
    }
}

impl Url {
    fn scheme(&self) -> &'static str {
        if self.https { "https" } else { "http" }
    }

    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "`{text}` contains whitespace or control characters"
            ));
        }
        let (scheme, rest) = text.split_once("://").ok_or_else(|| {
            format!("`{text}` is not an absolute URL (expected http://... or https://...)")
        })?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            other => {
                return Err(format!(
                    "scheme `{other}` is not supported; use http or https"
                ));
            }
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if authority.is_empty() {
            return Err(format!("`{text}` has no host"));
        }
        if authority.contains('@') {
            return Err(format!(
                "`{text}` contains user info; send credentials in a header instead"
            ));
        }
        let tail = tail.split('#').next().unwrap_or("");
        let path_and_query = if tail.starts_with('/') {
            tail.to_owned()
        } else {
            format!("/{tail}")
        };
        Ok(Self {
            https,
            authority: authority.to_owned(),
            path_and_query,
        })
    }

    /// Resolves a `Location` header against this URL (RFC 3986, section 5.2).
    fn join(&self, location: &str) -> Result<Self, String> {
        let location = location.trim();
        let is_absolute = location.split_once(':').is_some_and(|(s, _)| {
            !s.is_empty()
                && s.starts_with(|c: char| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        });
        if is_absolute {
            return Self::parse(location);
        }
        let scheme = self.scheme();
        if location.starts_with("//") {
            return Self::parse(&format!("{scheme}:{location}"));
        }
        let location = location.split('#').next().unwrap_or("");
        let (path, query) = match location.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (location, None),
        };
        let base_path = self
            .path_and_query
            .split('?')
            .next()
            .unwrap_or("/")
            .to_owned();
        let base_query = self.path_and_query.split_once('?').map(|(_, q)| q);
        let (path, query) = if path.is_empty() {
            (base_path, query.or(base_query))
        } else if path.starts_with('/') {
            (remove_dot_segments(path), query)
        } else {
            let dir = &base_path[..=base_path.rfind('/').unwrap_or(0)];
            (remove_dot_segments(&format!("{dir}{path}")), query)
        };
        let path_and_query = match query {
            Some(q) => format!("{path}?{q}"),
            None => path,
        };
        Self::parse(&format!("{scheme}://{}{path_and_query}", self.authority))
    }
}

fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *segment {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                out.pop();
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    format!("/{}", out.join("/"))
}

glovebox_plugin_sdk::export!(Fetch);

// The URL handling is pure Rust: `cargo test -p tool-http-fetch --target <host triple>`.
#[cfg(test)]
mod tests {
    use super::*;

    fn join(base: &str, location: &str) -> String {
        Url::parse(base)
            .unwrap()
            .join(location)
            .unwrap()
            .to_string()
    }

    #[test]
    fn parses_absolute_urls() {
        let url = Url::parse("HTTPS://example.com:8443/a/b?x=1#frag").unwrap();
        assert!(url.https);
        assert_eq!(url.authority, "example.com:8443");
        assert_eq!(url.path_and_query, "/a/b?x=1");
        assert_eq!(
            Url::parse("http://example.com").unwrap().to_string(),
            "http://example.com/"
        );
        assert_eq!(
            Url::parse("http://example.com?q").unwrap().to_string(),
            "http://example.com/?q"
        );
    }

    #[test]
    fn refuses_what_it_cannot_send() {
        assert!(
            Url::parse("ftp://example.com/")
                .unwrap_err()
                .contains("ftp")
        );
        assert!(Url::parse("example.com/x").is_err());
        assert!(Url::parse("http:///x").is_err());
        assert!(
            Url::parse("http://user:pw@example.com/")
                .unwrap_err()
                .contains("user info")
        );
        assert!(Url::parse("http://exa mple.com/").is_err());
    }

    #[test]
    fn resolves_redirect_locations() {
        let base = "https://a.example/dir/page?q=1";
        assert_eq!(join(base, "http://b.example/x"), "http://b.example/x");
        assert_eq!(join(base, "//b.example/x"), "https://b.example/x");
        assert_eq!(join(base, "/root"), "https://a.example/root");
        assert_eq!(join(base, "other"), "https://a.example/dir/other");
        assert_eq!(join(base, "../up?z"), "https://a.example/up?z");
        assert_eq!(join(base, "./"), "https://a.example/dir/");
        assert_eq!(
            join(base, "?only=query"),
            "https://a.example/dir/page?only=query"
        );
        assert_eq!(join(base, "#frag"), "https://a.example/dir/page?q=1");
        assert_eq!(join(base, "/a/../../b"), "https://a.example/b");
    }

    #[test]
    fn redirects_rewrite_method_and_drop_credentials_across_origins() {
        let request = Request {
            method: "POST".to_owned(),
            url: Url::parse("https://a.example/form").unwrap(),
            headers: vec![
                ("Authorization".to_owned(), "Bearer x".to_owned()),
                ("Content-Type".to_owned(), "text/plain".to_owned()),
                ("X-Keep".to_owned(), "1".to_owned()),
            ],
            body: Some("data".to_owned()),
        };
        let same = request.redirected(307, Url::parse("https://a.example/again").unwrap());
        assert_eq!(same.method, "POST");
        assert_eq!(same.body.as_deref(), Some("data"));
        assert_eq!(same.headers.len(), 3);

        let other = request.redirected(303, Url::parse("https://b.example/done").unwrap());
        assert_eq!(other.method, "GET");
        assert_eq!(other.body, None);
        let names: Vec<&str> = other.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["X-Keep"]);

        let downgraded = request.redirected(308, Url::parse("http://a.example/form").unwrap());
        assert!(!downgraded.headers.iter().any(|(n, _)| n == "Authorization"));
    }
}
