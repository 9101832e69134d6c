//! A request's path as a grant's `paths` judge it: decoded and normalised,
//! with what the host sends on instead of what the guest wrote.
//!
//! Why here, beside the patterns: a path rule is only as good as the reading
//! of the path it is matched against. A guest (or a model steering one) that
//! may `GET /repos/acme/**` must not reach `/repos/acme/../evil` or
//! `/repos/acme/%2e%2e/evil`, and the server must be sent the path that was
//! judged, not one it may read differently. So:
//!
//! - each segment is percent-decoded for matching; a malformed escape, an
//!   encoded `/` or `\` (`%2F`, `%5C`, which servers disagree on), a literal
//!   `\`, a control character or bytes that are not UTF-8 are refused;
//! - `.` and `..` segments (also encoded) are resolved as RFC 3986 says, and the
//!   request goes out with them resolved ([`RequestPath::forwarded`], the
//!   guest's own encoding kept); `..;x` and `.;x`, which some servers read as
//!   `..`, are refused;
//! - an empty segment inside the path (`/a//b`) is refused: servers collapse
//!   it or not. A trailing `/` is kept and does not count for matching.
//!
//! Requests to grants without `paths` are not read this way at all.

use std::fmt;

use percent_encoding::percent_decode_str;

/// A request path, read for matching.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestPath {
    /// Decoded and normalised: what the grant's patterns are matched against.
    pub matched: String,
    /// Normalised in the guest's own encoding: what the request carries on.
    pub forwarded: String,
}

/// Why a request path cannot be judged by path rules (so it is refused).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathRefusal {
    /// Not `/...` (`*`, or a relative path).
    NotAbsolute,
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// `%2F` or `%5C`: a separator hidden in a segment.
    EncodedSeparator,
    /// A literal `\`.
    Backslash,
    /// A control character, once decoded.
    Control,
    /// Decoded bytes that are not UTF-8.
    NotUtf8,
    /// `//` inside the path.
    EmptySegment,
    /// `..;x` or `.;x`.
    DotWithParameters,
}

impl fmt::Display for PathRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathRefusal::NotAbsolute => "the path is not absolute",
            PathRefusal::BadEscape => "the path has a `%` that is not followed by two hex digits",
            PathRefusal::EncodedSeparator => "the path has an encoded `/` or `\\` (`%2F`, `%5C`)",
            PathRefusal::Backslash => "the path has a `\\`",
            PathRefusal::Control => "the path has a control character",
            PathRefusal::NotUtf8 => "the path decodes to bytes that are not UTF-8",
            PathRefusal::EmptySegment => "the path has an empty segment (`//`)",
            PathRefusal::DotWithParameters => "the path has a `.;` or `..;` segment",
        })
    }
}

impl RequestPath {
    /// Reads `raw`, a request's path without its query (see the module docs).
    pub fn parse(raw: &str) -> Result<RequestPath, PathRefusal> {
        let raw = if raw.is_empty() { "/" } else { raw };
        let Some(body) = raw.strip_prefix('/') else {
            return Err(PathRefusal::NotAbsolute);
        };
        let segments: Vec<&str> = body.split('/').collect();
        let last = segments.len() - 1;
        // (as written, decoded) of the segments kept.
        let mut kept: Vec<(&str, String)> = Vec::new();
        let mut trailing_slash = false;
        for (i, segment) in segments.iter().enumerate() {
            let decoded = decode(segment)?;
            let dots = decoded.split(';').next().unwrap_or_default();
            match decoded.as_str() {
                "" if i == last => trailing_slash = true,
                "" => return Err(PathRefusal::EmptySegment),
                "." | ".." => {
                    if decoded == ".." {
                        kept.pop();
                    }
                    trailing_slash = i == last;
                }
                _ if dots == "." || dots == ".." => return Err(PathRefusal::DotWithParameters),
                _ => kept.push((segment, decoded)),
            }
        }
        let join = |parts: Vec<&str>| {
            let mut path = String::from("/");
            path.push_str(&parts.join("/"));
            if trailing_slash && !parts.is_empty() {
                path.push('/');
            }
            path
        };
        Ok(RequestPath {
            matched: join(kept.iter().map(|(_, decoded)| decoded.as_str()).collect()),
            forwarded: join(kept.iter().map(|(written, _)| *written).collect()),
        })
    }
}

/// One segment, percent-decoded and checked.
fn decode(segment: &str) -> Result<String, PathRefusal> {
    if segment.contains('\\') {
        return Err(PathRefusal::Backslash);
    }
    let bytes = segment.as_bytes();
    for (at, _) in segment.match_indices('%') {
        let hex = bytes.get(at + 1..at + 3);
        if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
            return Err(PathRefusal::BadEscape);
        }
    }
    let decoded: Vec<u8> = percent_decode_str(segment).collect();
    if decoded.iter().any(|&b| b == b'/' || b == b'\\') {
        return Err(PathRefusal::EncodedSeparator);
    }
    let text = String::from_utf8(decoded).map_err(|_| PathRefusal::NotUtf8)?;
    if text.chars().any(char::is_control) {
        return Err(PathRefusal::Control);
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(raw: &str) -> (String, String) {
        let p = RequestPath::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
        (p.matched, p.forwarded)
    }

    #[test]
    fn plain_paths_pass_unchanged() {
        for raw in ["/", "/a", "/a/b", "/a/b/", "/repos/acme/widget/issues"] {
            assert_eq!(read(raw), (raw.to_string(), raw.to_string()));
        }
        assert_eq!(read(""), ("/".into(), "/".into()));
    }

    #[test]
    fn escapes_are_decoded_for_matching_and_kept_for_sending() {
        assert_eq!(read("/a%20b/c"), ("/a b/c".into(), "/a%20b/c".into()));
        assert_eq!(read("/%72epos"), ("/repos".into(), "/%72epos".into()));
    }

    #[test]
    fn dot_segments_are_resolved_also_when_encoded() {
        assert_eq!(
            read("/repos/acme/../evil"),
            ("/repos/evil".into(), "/repos/evil".into())
        );
        assert_eq!(read("/repos/acme/%2e%2e/evil").0, "/repos/evil");
        assert_eq!(read("/repos/acme/.%2E/.%2e/evil").0, "/evil");
        assert_eq!(read("/a/./b/."), ("/a/b/".into(), "/a/b/".into()));
        assert_eq!(read("/../../etc"), ("/etc".into(), "/etc".into()));
        assert_eq!(read("/a/.."), ("/".into(), "/".into()));
    }

    #[test]
    fn ambiguous_paths_are_refused() {
        let cases = [
            ("*", PathRefusal::NotAbsolute),
            ("a/b", PathRefusal::NotAbsolute),
            ("/a%2Fb", PathRefusal::EncodedSeparator),
            ("/a%2f..%2fb", PathRefusal::EncodedSeparator),
            ("/a%5Cb", PathRefusal::EncodedSeparator),
            ("/a\\..\\b", PathRefusal::Backslash),
            ("/a%zz", PathRefusal::BadEscape),
            ("/a%2", PathRefusal::BadEscape),
            ("/a%00b", PathRefusal::Control),
            ("/a%0d%0aHost:%20x", PathRefusal::Control),
            ("/a%ff", PathRefusal::NotUtf8),
            ("/a//b", PathRefusal::EmptySegment),
            ("//a", PathRefusal::EmptySegment),
            ("/a/..;x/b", PathRefusal::DotWithParameters),
            ("/a/%2e;/b", PathRefusal::DotWithParameters),
        ];
        for (raw, expected) in cases {
            assert_eq!(RequestPath::parse(raw), Err(expected.clone()), "{raw}");
        }
        // A `;` elsewhere is only a character.
        assert_eq!(read("/a;v=1/b").0, "/a;v=1/b");
    }
}
