"""`fetch`: HTTP for the code the runner runs, over `wasi:http/outgoing-handler`.

The host lets a request through only to the hosts the operator granted in the plugin's
manifest (`[[http]]`); any other is refused before a connection is made, and `fetch`
raises `PermissionError`. Redirects are followed here, one request per hop, so the host
judges every URL. Blocking: each wait is a `wasi:io/poll` pollable's `block()`.

    from glovebox import fetch          # or just `fetch`: the runner makes it a global
    r = fetch("https://api.example.com/items", headers={"accept": "application/json"})
    r.status, r.headers["content-type"], r.json()

The runner imports this module at build time (so it is in the snapshot); nothing here
runs per call unless the code calls `fetch`.
"""

import json
import urllib.parse

from componentize_py_types import Err
from wit_world.imports import outgoing_handler, streams
from wit_world.imports import wasi_http_types as http

# `tools`: the session's other tools, called from the code (glovebox_tools.py).
from glovebox_tools import *  # noqa: F401,F403
from glovebox_tools import __all__ as _tools_all

__all__ = ["fetch", "Response", "MAX_BODY", "MAX_REDIRECTS", *_tools_all]

# A response body longer than this fails the fetch.
MAX_BODY = 16 * 1024 * 1024
# Redirects followed before the fetch fails (as browsers do).
MAX_REDIRECTS = 20
# Bytes read from the response body per host call.
_READ_SIZE = 64 * 1024
# `blocking-write-and-flush` takes at most 4096 bytes at a time.
_WRITE_SIZE = 4096

_METHODS = {
    "GET": http.Method_Get,
    "HEAD": http.Method_Head,
    "POST": http.Method_Post,
    "PUT": http.Method_Put,
    "DELETE": http.Method_Delete,
    "CONNECT": http.Method_Connect,
    "OPTIONS": http.Method_Options,
    "TRACE": http.Method_Trace,
    "PATCH": http.Method_Patch,
}
_TOKEN = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)
# Dropped from a redirected request that leaves the origin.
_CREDENTIALS = ("authorization", "cookie", "proxy-authorization")


class Response:
    """What `fetch` returns: `status`, `headers` (a dict, lowercase names), `content`
    (bytes), `url` (after redirects), `ok`, and `text()` / `json()`."""

    def __init__(self, url, status, headers, content, redirects):
        self.url = url
        self.status = status
        self.headers = headers
        self.content = content
        self.redirects = redirects

    @property
    def ok(self):
        return 200 <= self.status < 300

    def text(self, encoding=None):
        """The body decoded with `encoding`, else the content-type's charset, else UTF-8."""
        if encoding is None:
            encoding = "utf-8"
            for part in self.headers.get("content-type", "").split(";")[1:]:
                name, _, value = part.strip().partition("=")
                if name.lower() == "charset" and value:
                    encoding = value.strip('"')
        try:
            return self.content.decode(encoding, "replace")
        except LookupError:
            return self.content.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.content)

    def raise_for_status(self):
        """Raises `OSError` when the status is 400 or more; returns the response else."""
        if self.status >= 400:
            raise OSError(f"fetch('{self.url}'): HTTP status {self.status}")
        return self

    def __repr__(self):
        return f"<Response [{self.status}] {self.url}>"


def fetch(url, method="GET", headers=None, body=None, *, follow_redirects=True):
    """Sends an HTTP request and returns its `Response` (any status, 404 included).

    `headers`: a dict or a list of (name, value) pairs. `body`: str (sent as UTF-8),
    bytes, or a dict/list (sent as JSON, with `content-type: application/json` unless
    set). Raises PermissionError when the host was not granted to this tool,
    ConnectionError (ConnectionRefusedError, TimeoutError) when it cannot be reached,
    ValueError for a bad URL, method or header, OSError for other failures or a body
    larger than 16 MiB.
    """
    shown = url
    if not isinstance(url, str):
        raise TypeError(f"fetch(): the URL must be a str, not {type(url).__name__}")
    if not isinstance(method, str) or not method or not set(method) <= _TOKEN:
        raise ValueError(f"fetch('{shown}'): {method!r} is not a valid HTTP method")
    method = method.upper()
    pairs = _header_pairs(shown, headers)
    content = _body_bytes(shown, body, pairs)
    scheme, authority, path = _split(shown, url)
    redirects = 0
    while True:
        status, fields, data = _send(shown, method, scheme, authority, path, pairs, content)
        location = fields.get("location")
        if not (follow_redirects and status in (301, 302, 303, 307, 308) and location):
            return Response(_unsplit(scheme, authority, path), status, fields, data, redirects)
        if redirects == MAX_REDIRECTS:
            raise OSError(f"fetch('{shown}'): more than {MAX_REDIRECTS} redirects")
        here = _unsplit(scheme, authority, path)
        target = urllib.parse.urljoin(here, location.strip())
        try:
            next_scheme, next_authority, path = _split(shown, target)
        except ValueError as e:
            raise ValueError(f"fetch('{shown}'): {here} redirected to `{location}`: {e}")
        redirects += 1
        if status == 303 or (status in (301, 302) and method == "POST"):
            if method != "HEAD":
                method = "GET"
            content = None
            pairs = [(n, v) for n, v in pairs if n.lower() not in ("content-type", "content-length")]
        if (next_scheme, next_authority.lower()) != (scheme, authority.lower()):
            pairs = [(n, v) for n, v in pairs if n.lower() not in _CREDENTIALS]
        scheme, authority = next_scheme, next_authority


def _split(shown, url):
    """(scheme, authority, path with query) of an absolute http(s) URL."""
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url.strip()):
        raise ValueError(f"fetch('{shown}'): the URL contains whitespace or control characters")
    parts = urllib.parse.urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if not scheme or not url.strip().lower().startswith(scheme + "://"):
        raise ValueError(
            f"fetch('{shown}'): not an absolute URL (expected http://... or https://...)"
        )
    if scheme not in ("http", "https"):
        raise ValueError(f"fetch('{shown}'): scheme `{scheme}` is not supported; use http or https")
    if not parts.netloc:
        raise ValueError(f"fetch('{shown}'): the URL has no host")
    if "@" in parts.netloc:
        raise ValueError(
            f"fetch('{shown}'): user info in URLs is not supported; send an Authorization header"
        )
    path = parts.path or "/"
    if not path.startswith("/"):
        path = "/" + path
    if parts.query:
        path += "?" + parts.query
    return scheme, parts.netloc, path


def _unsplit(scheme, authority, path):
    return f"{scheme}://{authority}{path}"


def _header_pairs(shown, headers):
    if headers is None:
        return []
    items = headers.items() if hasattr(headers, "items") else headers
    pairs = []
    try:
        for name, value in items:
            if not isinstance(name, str) or not name or not set(name) <= _TOKEN:
                raise ValueError(f"fetch('{shown}'): {name!r} is not a valid header name")
            if isinstance(value, bytes):
                value = value.decode("latin-1")
            pairs.append((name, str(value)))
    except (TypeError, ValueError) as e:
        if isinstance(e, ValueError) and str(e).startswith("fetch("):
            raise
        raise ValueError(
            f"fetch('{shown}'): `headers` must be a dict or a list of (name, value) pairs"
        ) from None
    return pairs


def _body_bytes(shown, body, pairs):
    if body is None:
        return None
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, (dict, list)):
        if not any(n.lower() == "content-type" for n, _ in pairs):
            pairs.append(("content-type", "application/json"))
        return json.dumps(body).encode("utf-8")
    raise TypeError(
        f"fetch('{shown}'): `body` must be str, bytes, a dict or a list, "
        f"not {type(body).__name__}"
    )


def _refused(shown, scheme, authority, code):
    """The exception for an `error-code` of wasi:http."""
    if isinstance(code, http.ErrorCode_HttpRequestDenied):
        return PermissionError(
            f"fetch('{shown}'): the host refused the request: {scheme}://{authority} was not "
            "granted to this tool (the operator grants hosts in the plugin's manifest, [[http]])"
        )
    host = authority.rsplit(":", 1)[0] if not authority.endswith("]") else authority
    if isinstance(code, (http.ErrorCode_DnsError, http.ErrorCode_DnsTimeout,
                         http.ErrorCode_DestinationNotFound)):
        return ConnectionError(f"fetch('{shown}'): cannot resolve {host}")
    if isinstance(code, http.ErrorCode_ConnectionRefused):
        return ConnectionRefusedError(f"fetch('{shown}'): connection refused by {authority}")
    if isinstance(code, (http.ErrorCode_ConnectionTimeout, http.ErrorCode_ConnectionReadTimeout,
                         http.ErrorCode_ConnectionWriteTimeout, http.ErrorCode_HttpResponseTimeout)):
        return TimeoutError(f"fetch('{shown}'): the connection to {authority} timed out")
    if isinstance(code, (http.ErrorCode_DestinationUnavailable,
                         http.ErrorCode_DestinationIpProhibited,
                         http.ErrorCode_DestinationIpUnroutable,
                         http.ErrorCode_ConnectionTerminated,
                         http.ErrorCode_ConnectionLimitReached)):
        return ConnectionError(
            f"fetch('{shown}'): cannot connect to {authority} ({_code_name(code)})"
        )
    if isinstance(code, (http.ErrorCode_TlsProtocolError, http.ErrorCode_TlsCertificateError,
                         http.ErrorCode_TlsAlertReceived)):
        return ConnectionError(f"fetch('{shown}'): TLS failed with {authority} ({_code_name(code)})")
    return OSError(f"fetch('{shown}') failed: {_code_name(code)}")


def _code_name(code):
    """`connection-refused` for `ErrorCode_ConnectionRefused`, with its payload if any."""
    name = type(code).__name__.removeprefix("ErrorCode_")
    words = "".join("-" + c.lower() if c.isupper() else c for c in name).lstrip("-")
    value = getattr(code, "value", None)
    return f"{words}: {value}" if value is not None else words


def _set(shown, what, setter, value):
    try:
        setter(value)
    except Err:
        raise ValueError(f"fetch('{shown}'): invalid {what}") from None


def _send(shown, method, scheme, authority, path, pairs, content):
    """One request, no redirects: (status, headers dict, body bytes)."""
    fields = http.Fields()
    for name, value in pairs:
        try:
            fields.append(name, value.encode("latin-1", "replace"))
        except Err as e:
            fields.__exit__(None, None, None)
            why = "forbidden" if isinstance(e.value, http.HeaderError_Forbidden) else "invalid"
            raise ValueError(f"fetch('{shown}'): header `{name}` is {why}") from None
    if content and not any(n.lower() == "content-length" for n, _ in pairs):
        fields.append("content-length", str(len(content)).encode())
    request = http.OutgoingRequest(fields)
    known = _METHODS.get(method)
    _set(shown, "method", request.set_method, known() if known else http.Method_Other(method))
    scheme_value = http.Scheme_Https() if scheme == "https" else http.Scheme_Http()
    _set(shown, "scheme", request.set_scheme, scheme_value)
    _set(shown, "host", request.set_authority, authority)
    _set(shown, "path", request.set_path_with_query, path)
    outgoing_body = request.body()
    try:
        future = outgoing_handler.handle(request, None)
    except Err as e:
        outgoing_body.__exit__(None, None, None)
        raise _refused(shown, scheme, authority, e.value) from None
    with future:
        try:
            with outgoing_body.write() as stream:
                for start in range(0, len(content or b""), _WRITE_SIZE):
                    stream.blocking_write_and_flush(content[start : start + _WRITE_SIZE])
            http.OutgoingBody.finish(outgoing_body, None)
        except Err:
            pass  # the request failed: the response future says why
        while True:
            result = future.get()
            if result is not None:
                break
            with future.subscribe() as pollable:
                pollable.block()
        if isinstance(result, Err):
            raise OSError(f"fetch('{shown}'): the response was already taken")
        result = result.value
        if isinstance(result, Err):
            raise _refused(shown, scheme, authority, result.value) from None
        with result.value as response:
            status = response.status()
            with response.headers() as header_fields:
                entries = header_fields.entries()
            return status, _header_dict(entries), _read_body(shown, scheme, authority, response)


def _header_dict(entries):
    headers = {}
    for name, value in entries:
        name = name.lower()
        value = value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


def _read_body(shown, scheme, authority, response):
    chunks = []
    size = 0
    with response.consume() as body:
        with body.stream() as stream:
            while True:
                try:
                    chunk = stream.blocking_read(_READ_SIZE)
                except Err as e:
                    if isinstance(e.value, streams.StreamError_Closed):
                        break
                    error = e.value.value
                    code = http.http_error_code(error)
                    if code is not None:
                        raise _refused(shown, scheme, authority, code) from None
                    raise OSError(
                        f"fetch('{shown}'): reading the body failed: {error.to_debug_string()}"
                    ) from None
                size += len(chunk)
                if size > MAX_BODY:
                    raise OSError(
                        f"fetch('{shown}'): the response body is larger than "
                        f"{MAX_BODY >> 20} MiB"
                    )
                chunks.append(chunk)
    return b"".join(chunks)
