//! `fetch` over `wasi:http/outgoing-handler`. Redirects are followed here, one hop at a
//! time, so that the host's allowlist judges every URL.

use std::io::Write as _;

use boa_engine::object::builtins::JsArray;
use boa_engine::{Context, JsArgs, JsError, JsNativeError, JsResult, JsValue};
use glovebox_plugin_sdk::{Map, Value, json};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingResponse, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use wasip2::io::streams::StreamError;

/// A response body longer than this fails the fetch.
const MAX_BODY: usize = 16 * 1024 * 1024;
/// Redirects followed before the fetch fails (as browsers do).
const MAX_REDIRECTS: usize = 20;

fn type_error(message: String) -> JsError {
    JsNativeError::typ().with_message(message).into()
}

/// `http(method, url, [[name, value]...], body?, follow)` → `{status, url, headers, body, redirects}`.
pub(crate) fn fetch(_: &JsValue, args: &[JsValue], context: &mut Context) -> JsResult<JsValue> {
    let method = args
        .get_or_undefined(0)
        .to_string(context)?
        .to_std_string_lossy();
    let url = args
        .get_or_undefined(1)
        .to_string(context)?
        .to_std_string_lossy();
    let mut headers = Vec::new();
    if let Some(pairs) = args.get_or_undefined(2).as_object() {
        let pairs = JsArray::from_object(pairs)?;
        for i in 0..pairs.length(context)? {
            let pair = pairs.get(i, context)?;
            let pair = pair
                .as_object()
                .ok_or_else(|| type_error("fetch: bad header".into()))?;
            let name = pair.get(0, context)?.to_string(context)?;
            let value = pair.get(1, context)?.to_string(context)?;
            headers.push((name.to_std_string_lossy(), value.to_std_string_lossy()));
        }
    }
    let body = match args.get_or_undefined(3) {
        v if v.is_undefined() || v.is_null() => None,
        v => Some(v.to_string(context)?.to_std_string_lossy()),
    };
    let follow = args.get_or_undefined(4).to_boolean();

    let mut request = Request {
        method: method.clone(),
        url: Url::parse(&url).map_err(|e| type_error(format!("fetch('{url}'): {e}")))?,
        headers,
        body,
    };
    if method.is_empty() || !method.bytes().all(is_token_byte) {
        return Err(type_error(format!(
            "fetch('{url}'): `{method}` is not a valid HTTP method"
        )));
    }
    let mut redirects = 0;
    loop {
        let response = send(&request).map_err(type_error)?;
        let status = response.status();
        let entries = response.headers().entries();
        let location = entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("location"))
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned());
        if follow
            && matches!(status, 301 | 302 | 303 | 307 | 308)
            && let Some(location) = location
        {
            if redirects == MAX_REDIRECTS {
                return Err(type_error(format!(
                    "fetch('{url}'): more than {MAX_REDIRECTS} redirects"
                )));
            }
            let next = request.url.join(&location).map_err(|e| {
                type_error(format!(
                    "fetch('{url}'): {} redirected to `{location}`: {e}",
                    request.url
                ))
            })?;
            drop(response);
            redirects += 1;
            if status == 303 || (matches!(status, 301 | 302) && request.method == "POST") {
                request.method = "GET".to_owned();
                request.body = None;
            }
            if next.origin() != request.url.origin() {
                request.headers.retain(|(n, _)| {
                    !["authorization", "cookie", "proxy-authorization"]
                        .iter()
                        .any(|c| n.eq_ignore_ascii_case(c))
                });
            }
            request.url = next;
            continue;
        }

        let body = read_body(&request.url, response).map_err(type_error)?;
        let mut map = Map::new();
        for (name, value) in entries {
            let name = name.to_ascii_lowercase();
            let value = String::from_utf8_lossy(&value).into_owned();
            match map.get_mut(&name) {
                Some(Value::String(existing)) => {
                    existing.push_str(", ");
                    existing.push_str(&value);
                }
                _ => {
                    map.insert(name, Value::String(value));
                }
            }
        }
        let raw = json!({
            "status": status,
            "url": request.url.to_string(),
            "headers": map,
            "body": String::from_utf8_lossy(&body),
            "redirects": redirects,
        });
        return JsValue::from_json(&raw, context);
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

struct Request {
    method: String,
    url: Url,
    headers: Vec<(String, String)>,
    body: Option<String>,
}

fn refused(url: &Url, e: &ErrorCode) -> String {
    match e {
        ErrorCode::HttpRequestDenied => format!(
            "fetch('{url}'): the host refused the request: {}://{} was not granted to this tool \
             (the operator grants hosts in the plugin's manifest, [[http]])",
            url.scheme(),
            url.authority
        ),
        ErrorCode::DnsError(_) => format!("fetch('{url}'): cannot resolve {}", url.authority),
        ErrorCode::ConnectionRefused => format!("fetch('{url}'): connection refused"),
        ErrorCode::ConnectionTimeout => format!("fetch('{url}'): the connection timed out"),
        other => format!("fetch('{url}') failed: {other:?}"),
    }
}

fn send(request: &Request) -> Result<IncomingResponse, String> {
    let url = &request.url;
    let headers = Fields::new();
    for (name, value) in &request.headers {
        headers
            .append(name, value.as_bytes())
            .map_err(|e| format!("fetch('{url}'): header `{name}` refused: {e:?}"))?;
    }
    let outgoing = OutgoingRequest::new(headers);
    let method = match request.method.as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "OPTIONS" => Method::Options,
        "PATCH" => Method::Patch,
        other => Method::Other(other.to_owned()),
    };
    let bad = |what: &str| format!("fetch('{url}'): invalid {what}");
    outgoing.set_method(&method).map_err(|()| bad("method"))?;
    let scheme = if url.https {
        Scheme::Https
    } else {
        Scheme::Http
    };
    outgoing
        .set_scheme(Some(&scheme))
        .map_err(|()| bad("scheme"))?;
    outgoing
        .set_authority(Some(&url.authority))
        .map_err(|()| bad("host"))?;
    outgoing
        .set_path_with_query(Some(&url.path_and_query))
        .map_err(|()| bad("path"))?;
    let body = outgoing.body().map_err(|()| bad("body"))?;
    let future = outgoing_handler::handle(outgoing, None).map_err(|e| refused(url, &e))?;
    {
        let mut stream = body.write().map_err(|()| bad("body"))?;
        if let Some(content) = &request.body {
            stream
                .write_all(content.as_bytes())
                .and_then(|()| std::io::Write::flush(&mut stream))
                .map_err(|e| format!("fetch('{url}'): sending the body failed: {e}"))?;
        }
    }
    OutgoingBody::finish(body, None).map_err(|e| refused(url, &e))?;
    let response = loop {
        match future.get() {
            Some(result) => break result,
            None => future.subscribe().block(),
        }
    };
    match response {
        Ok(Ok(response)) => Ok(response),
        Ok(Err(e)) => Err(refused(url, &e)),
        Err(()) => Err(format!("fetch('{url}'): the response was already taken")),
    }
}

fn read_body(url: &Url, response: IncomingResponse) -> Result<Vec<u8>, String> {
    let body = response
        .consume()
        .map_err(|()| format!("fetch('{url}'): cannot read the body"))?;
    let mut bytes = Vec::new();
    {
        let stream = body
            .stream()
            .map_err(|()| format!("fetch('{url}'): cannot read the body"))?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(chunk) => {
                    bytes.extend_from_slice(&chunk);
                    if bytes.len() > MAX_BODY {
                        return Err(format!(
                            "fetch('{url}'): the response body is larger than {} MiB",
                            MAX_BODY >> 20
                        ));
                    }
                }
                Err(StreamError::Closed) => break,
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(format!(
                        "fetch('{url}'): reading the body failed: {}",
                        e.to_debug_string()
                    ));
                }
            }
        }
    }
    drop(body);
    drop(response);
    Ok(bytes)
}

/// An absolute http(s) URL, split the way wasi:http wants it.
#[derive(Debug, Clone, PartialEq)]
struct Url {
    https: bool,
    authority: String,
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

    fn origin(&self) -> (bool, String) {
        (self.https, self.authority.to_ascii_lowercase())
    }

    fn parse(text: &str) -> Result<Url, String> {
        let text = text.trim();
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("the URL contains whitespace".to_owned());
        }
        let (scheme, rest) = text
            .split_once("://")
            .ok_or("not an absolute URL (expected http://... or https://...)")?;
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
            return Err("the URL has no host".to_owned());
        }
        if authority.contains('@') {
            return Err("user info in URLs is not supported; send an Authorization header".into());
        }
        let tail = tail.split('#').next().unwrap_or("");
        let path_and_query = if tail.starts_with('/') {
            tail.to_owned()
        } else {
            format!("/{tail}")
        };
        Ok(Url {
            https,
            authority: authority.to_owned(),
            path_and_query,
        })
    }

    /// Resolves a `Location` header: absolute, scheme-relative, absolute-path or
    /// relative to this URL's directory.
    fn join(&self, location: &str) -> Result<Url, String> {
        let location = location.trim();
        if location.contains("://") {
            return Url::parse(location);
        }
        if let Some(rest) = location.strip_prefix("//") {
            return Url::parse(&format!("{}://{rest}", self.scheme()));
        }
        let path = if location.starts_with('/') {
            location.to_owned()
        } else {
            let base = self.path_and_query.split('?').next().unwrap_or("/");
            let dir = &base[..=base.rfind('/').unwrap_or(0)];
            format!("{dir}{location}")
        };
        Url::parse(&format!("{}://{}{path}", self.scheme(), self.authority))
    }
}

#[cfg(test)]
mod tests {
    use super::Url;

    #[test]
    fn urls() {
        let u = Url::parse("http://127.0.0.1:8080/a/b?x#f").unwrap();
        assert_eq!(u.to_string(), "http://127.0.0.1:8080/a/b?x");
        assert_eq!(
            u.join("c").unwrap().to_string(),
            "http://127.0.0.1:8080/a/c"
        );
        assert_eq!(u.join("/d").unwrap().to_string(), "http://127.0.0.1:8080/d");
        assert!(Url::parse("file:///etc/passwd").is_err());
    }
}
