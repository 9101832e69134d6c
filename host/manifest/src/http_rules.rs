//! What an `[[http]]` grant allows on its origin: which methods, which paths.
//!
//! Why: an origin alone is too wide for an API. A grant of
//! `https://api.github.com` lets a tool push to any repository; with
//! `methods = ["GET"]` and `paths = ["/repos/acme/**"]` it may only read one
//! organisation's. Both lists are optional: a grant without them allows every
//! method and path on its origin, as before they existed.
//!
//! Paths are matched after the request's path is decoded and normalised
//! ([`crate::RequestPath`]), never as the guest wrote it, so `%2e%2e` and `..`
//! cannot step out of a pattern. The patterns:
//!
//! - `/repos/acme` (no `*`): that path and everything below it, at a segment
//!   boundary (`/repos/acme/x`, not `/repos/acmecorp`);
//! - `*` inside a segment: any characters but `/` (`/repos/*/issues`);
//! - `**` as a whole segment: any number of segments, none included
//!   (`/repos/acme/**/comments`).
//!
//! Matching is linear in the pattern and path sizes (no backtracking blow-up),
//! and both are bounded at load ([`MAX_PATTERNS`], [`MAX_PATTERN_BYTES`]).

use std::fmt;

/// At most this many `paths` per grant.
pub const MAX_PATTERNS: usize = 256;
/// At most this many methods per grant.
pub const MAX_METHODS: usize = 32;
/// A path pattern is at most this long.
pub const MAX_PATTERN_BYTES: usize = 1024;

/// The methods and paths a grant allows; an empty list allows all.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct HttpRules {
    /// Upper-case method names (`GET`); empty: any method.
    pub methods: Vec<String>,
    /// Path patterns; empty: any path.
    pub paths: Vec<PathPattern>,
}

impl HttpRules {
    /// Whether the grant allows every method and every path (no rules).
    pub fn is_open(&self) -> bool {
        self.methods.is_empty() && self.paths.is_empty()
    }

    /// Whether `method` (any case) is allowed.
    pub fn allows_method(&self, method: &str) -> bool {
        self.methods.is_empty() || self.methods.iter().any(|m| m.eq_ignore_ascii_case(method))
    }

    /// Whether the decoded, normalised path (`RequestPath::matched`) is allowed.
    pub fn allows_path(&self, path: &str) -> bool {
        if self.paths.is_empty() {
            return true;
        }
        let segments = path_segments(path);
        let mut matcher = Matcher::default();
        self.paths.iter().any(|p| matcher.matches(p, &segments))
    }

    /// Parses a grant's `methods` and `paths`; on failure says which entry is
    /// wrong (by index), what is wrong and what to write instead.
    pub fn parse(methods: &[String], paths: &[String]) -> Result<HttpRules, RuleError> {
        if methods.len() > MAX_METHODS {
            return Err(RuleError::TooMany {
                list: "methods",
                count: methods.len(),
                max: MAX_METHODS,
            });
        }
        if paths.len() > MAX_PATTERNS {
            return Err(RuleError::TooMany {
                list: "paths",
                count: paths.len(),
                max: MAX_PATTERNS,
            });
        }
        let mut rules = HttpRules::default();
        for (i, method) in methods.iter().enumerate() {
            let valid = !method.is_empty()
                && method.len() <= 32
                && method.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-');
            if !valid {
                return Err(RuleError::Method {
                    index: i,
                    method: method.clone(),
                });
            }
            let upper = method.to_ascii_uppercase();
            if rules.methods.contains(&upper) {
                return Err(RuleError::Twice {
                    list: "methods",
                    index: i,
                    entry: upper,
                });
            }
            rules.methods.push(upper);
        }
        for (i, text) in paths.iter().enumerate() {
            let pattern = PathPattern::parse(text).map_err(|why| RuleError::Path {
                index: i,
                pattern: text.clone(),
                why,
            })?;
            if rules.paths.contains(&pattern) {
                return Err(RuleError::Twice {
                    list: "paths",
                    index: i,
                    entry: text.clone(),
                });
            }
            rules.paths.push(pattern);
        }
        Ok(rules)
    }
}

impl fmt::Display for HttpRules {
    /// `methods GET, HEAD; paths /repos/acme/**`, or `any method and path`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let methods = match self.methods.is_empty() {
            true => "any method".to_string(),
            false => format!("methods {}", self.methods.join(", ")),
        };
        let paths = match self.paths.is_empty() {
            true => "any path".to_string(),
            false => {
                let list: Vec<&str> = self.paths.iter().map(|p| p.text.as_str()).collect();
                format!("paths {}", list.join(", "))
            }
        };
        write!(f, "{methods}; {paths}")
    }
}

/// The segments of an absolute path for matching: `/a/b/` is `a`, `b` (a
/// trailing `/` does not count), `/` is none.
fn path_segments(path: &str) -> Vec<&str> {
    let path = path.strip_prefix('/').unwrap_or(path);
    let path = path.strip_suffix('/').unwrap_or(path);
    if path.is_empty() {
        return Vec::new();
    }
    path.split('/').collect()
}

/// One entry of a grant's `paths`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PathPattern {
    /// As the operator wrote it.
    pub text: String,
    segments: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Segment {
    /// `**`: any number of segments.
    Any,
    /// A segment, with `*` standing for any characters but `/`.
    Glob(String),
}

/// Why a path pattern is not one (the caller quotes the pattern).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PatternError {
    #[error("it does not start with `/`")]
    NotAbsolute,
    #[error("it is longer than {MAX_PATTERN_BYTES} bytes")]
    TooLong,
    #[error("it has a query or fragment (`?` or `#`)")]
    Query,
    #[error("it has a `%`")]
    Percent,
    #[error("it has a `\\` or a control character")]
    Character,
    #[error("it has an empty segment (`//`)")]
    EmptySegment,
    #[error("it has a `.` or `..` segment")]
    DotSegment,
    #[error("`**` is part of the segment `{0}`")]
    PartialDoubleStar(String),
}

impl PathPattern {
    /// Parses a pattern (see the module docs).
    pub fn parse(text: &str) -> Result<PathPattern, PatternError> {
        if text.len() > MAX_PATTERN_BYTES {
            return Err(PatternError::TooLong);
        }
        if !text.starts_with('/') {
            return Err(PatternError::NotAbsolute);
        }
        if text.contains(['?', '#']) {
            return Err(PatternError::Query);
        }
        if text.contains('%') {
            return Err(PatternError::Percent);
        }
        if text.chars().any(|c| c == '\\' || c.is_control()) {
            return Err(PatternError::Character);
        }
        let mut segments = Vec::new();
        for segment in path_segments(text) {
            segments.push(match segment {
                "" => return Err(PatternError::EmptySegment),
                "." | ".." => return Err(PatternError::DotSegment),
                "**" => Segment::Any,
                s if s.contains("**") => return Err(PatternError::PartialDoubleStar(s.into())),
                s => Segment::Glob(s.to_string()),
            });
        }
        if !text.contains('*') {
            // A plain path covers what is below it too.
            segments.push(Segment::Any);
        }
        Ok(PathPattern {
            text: text.to_string(),
            segments,
        })
    }

    /// Whether the decoded, normalised path matches.
    pub fn matches(&self, path: &str) -> bool {
        self.matches_segments(&path_segments(path))
    }

    /// Whether `path`'s segments match (see [`Matcher`]).
    fn matches_segments(&self, path: &[&str]) -> bool {
        Matcher::default().matches(self, path)
    }
}

/// The matching of patterns against one path's segments, its two rows of
/// state kept between patterns: `reach[j]` says whether the pattern's
/// segments so far can consume exactly the path's first `j` segments.
#[derive(Default)]
struct Matcher {
    reach: Vec<bool>,
    next: Vec<bool>,
}

impl Matcher {
    fn matches(&mut self, pattern: &PathPattern, path: &[&str]) -> bool {
        let (reach, next) = (&mut self.reach, &mut self.next);
        reach.clear();
        reach.resize(path.len() + 1, false);
        reach[0] = true;
        for segment in &pattern.segments {
            next.clear();
            next.resize(path.len() + 1, false);
            match segment {
                Segment::Any => {
                    let mut seen = false;
                    for j in 0..=path.len() {
                        seen |= reach[j];
                        next[j] = seen;
                    }
                }
                Segment::Glob(glob) => {
                    for j in 0..path.len() {
                        next[j + 1] = reach[j] && glob_matches(glob, path[j]);
                    }
                }
            }
            std::mem::swap(reach, next);
            if !reach.contains(&true) {
                return false;
            }
        }
        reach[path.len()]
    }
}

/// Whether `text` matches `glob`, whose `*` stand for any run of characters
/// (one segment's: neither holds a `/`). The usual two-pointer walk, going back
/// only to the last `*`.
fn glob_matches(glob: &str, text: &str) -> bool {
    let (g, t) = (glob.as_bytes(), text.as_bytes());
    let (mut gi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if gi < g.len() && g[gi] == b'*' {
            star = Some((gi, ti));
            gi += 1;
        } else if gi < g.len() && g[gi] == t[ti] {
            gi += 1;
            ti += 1;
        } else if let Some((sg, st)) = star {
            gi = sg + 1;
            ti = st + 1;
            star = Some((sg, st + 1));
        } else {
            return false;
        }
    }
    g[gi..].iter().all(|&b| b == b'*')
}

/// Why a grant's `methods` or `paths` cannot be read: [`problem`](Self::problem)
/// and [`hint`](Self::hint), with the entry's index for the key.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuleError {
    /// A method that is not a method's name.
    Method { index: usize, method: String },
    /// A path that is not a pattern.
    Path {
        index: usize,
        pattern: String,
        why: PatternError,
    },
    /// An entry listed twice.
    Twice {
        list: &'static str,
        index: usize,
        entry: String,
    },
    /// More entries than allowed.
    TooMany {
        list: &'static str,
        count: usize,
        max: usize,
    },
}

impl RuleError {
    /// The key of the entry at fault, below the grant's (`methods[1]`).
    pub fn key(&self) -> String {
        match self {
            RuleError::Method { index, .. } => format!("methods[{index}]"),
            RuleError::Path { index, .. } => format!("paths[{index}]"),
            RuleError::Twice { list, index, .. } => format!("{list}[{index}]"),
            RuleError::TooMany { list, .. } => list.to_string(),
        }
    }

    /// What is wrong, quoting the entry.
    pub fn problem(&self) -> String {
        match self {
            RuleError::Method { method, .. } => format!("`{method}` is not an HTTP method"),
            RuleError::Path { pattern, why, .. } => format!("path pattern `{pattern}`: {why}"),
            RuleError::Twice { entry, .. } => format!("`{entry}` is listed twice"),
            RuleError::TooMany { list, count, max } => {
                format!("{count} {list} are listed; at most {max} are allowed")
            }
        }
    }

    /// What to write instead.
    pub fn hint(&self) -> &'static str {
        match self {
            RuleError::Method { .. } => {
                "write a method's name, e.g. `GET`, `POST` or `DELETE` (letters only)"
            }
            RuleError::Path { why, .. } => match why {
                PatternError::Percent => {
                    "write the path decoded (`/a b`, not `/a%20b`): requests' paths are decoded before they are matched"
                }
                PatternError::PartialDoubleStar(_) => {
                    "`**` stands for whole segments (`/repos/**/comments`); use `*` within a segment"
                }
                _ => {
                    "write an absolute path, e.g. `/repos/acme` (it and what is below it), `/repos/*/issues` or `/repos/acme/**`"
                }
            },
            RuleError::Twice { .. } => "list each entry once",
            RuleError::TooMany { .. } => {
                "use fewer, wider patterns (`*` within a segment, `**` for any depth)"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> PathPattern {
        PathPattern::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn a_plain_pattern_covers_its_path_and_below_at_a_segment_boundary() {
        let p = pattern("/repos/acme");
        for path in [
            "/repos/acme",
            "/repos/acme/",
            "/repos/acme/x",
            "/repos/acme/x/y",
        ] {
            assert!(p.matches(path), "{path}");
        }
        for path in [
            "/repos/acmecorp",
            "/repos",
            "/",
            "/repos/acm",
            "/other/repos/acme",
        ] {
            assert!(!p.matches(path), "{path}");
        }
        assert_eq!(
            pattern("/repos/acme/"),
            PathPattern {
                text: "/repos/acme/".into(),
                ..p
            }
        );
        assert!(pattern("/").matches("/anything/at/all"));
    }

    #[test]
    fn a_star_stays_within_one_segment() {
        let p = pattern("/repos/*/issues");
        assert!(p.matches("/repos/acme/issues"));
        assert!(p.matches("/repos/x/issues/"));
        assert!(!p.matches("/repos/acme/issues/1"));
        assert!(!p.matches("/repos/a/b/issues"));
        let p = pattern("/files/*.json");
        assert!(p.matches("/files/a.json") && p.matches("/files/.json"));
        assert!(!p.matches("/files/a.json.exe") && !p.matches("/files/d/a.json"));
        assert!(pattern("/a/*b*c").matches("/a/xxbyyc"));
        assert!(!pattern("/a/*b*c").matches("/a/xxbyy"));
        let p = pattern("/repos/acme/*");
        assert!(p.matches("/repos/acme/widget"));
        assert!(!p.matches("/repos/acme") && !p.matches("/repos/acme/widget/pulls"));
    }

    #[test]
    fn a_double_star_spans_any_number_of_segments() {
        let p = pattern("/repos/acme/**");
        for path in ["/repos/acme", "/repos/acme/x", "/repos/acme/x/y/z"] {
            assert!(p.matches(path), "{path}");
        }
        assert!(!p.matches("/repos/acmecorp/x"));
        let p = pattern("/repos/**/comments");
        assert!(p.matches("/repos/comments") && p.matches("/repos/a/b/c/comments"));
        assert!(!p.matches("/repos/a/comments/1"));
        let p = pattern("/**");
        assert!(p.matches("/") && p.matches("/a/b"));
    }

    #[test]
    fn matching_a_long_path_against_many_stars_stays_linear() {
        let p = pattern(&format!("{}/z", "/**/*a*".repeat(20)));
        let path = format!("{}/y", "/aaaaaaaaaaaaaaaaaaaa".repeat(200));
        let start = std::time::Instant::now();
        assert!(!p.matches(&path));
        // A backtracking matcher takes minutes here; this one, microseconds.
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn bad_patterns_say_what_is_wrong() {
        let cases = [
            ("repos", "does not start with `/`"),
            ("/a?b=1", "query or fragment"),
            ("/a#top", "query or fragment"),
            ("/a%2Fb", "has a `%`"),
            ("/a\\b", "a `\\` or a control character"),
            ("/a\u{7}b", "control character"),
            ("/a//b", "empty segment"),
            ("/a/../b", "`.` or `..` segment"),
            ("/a/./b", "`.` or `..` segment"),
            ("/a/b**", "`**` is part of the segment `b**`"),
        ];
        for (text, expected) in cases {
            let e = HttpRules::parse(&[], &[text.to_string()]).unwrap_err();
            assert_eq!(e.key(), "paths[0]");
            assert!(e.problem().contains(expected), "{text}: {}", e.problem());
            assert!(e.problem().contains(text), "{text}: {}", e.problem());
            assert!(!e.hint().is_empty());
        }
        let long = format!("/{}", "a".repeat(MAX_PATTERN_BYTES));
        assert!(matches!(
            PathPattern::parse(&long),
            Err(PatternError::TooLong)
        ));
    }

    #[test]
    fn methods_are_names_listed_once_in_any_case() {
        let rules = HttpRules::parse(&["get".into(), "Post".into()], &[]).unwrap();
        assert_eq!(rules.methods, ["GET", "POST"]);
        assert!(rules.allows_method("GET") && rules.allows_method("post"));
        assert!(!rules.allows_method("PUT") && !rules.allows_method("DELETE"));
        let e = HttpRules::parse(&["GET".into(), "get".into()], &[]).unwrap_err();
        assert_eq!(
            (e.key().as_str(), e.problem().as_str()),
            ("methods[1]", "`GET` is listed twice")
        );
        for bad in ["", "GE T", "GET\r\n", "P0ST", "G/T"] {
            let e = HttpRules::parse(&[bad.to_string()], &[]).unwrap_err();
            assert!(e.problem().contains("is not an HTTP method"), "{bad:?}");
        }
        let e = HttpRules::parse(&[], &["/a".into(), "/a".into()]).unwrap_err();
        assert_eq!(
            (e.key().as_str(), e.problem().as_str()),
            ("paths[1]", "`/a` is listed twice")
        );
    }

    #[test]
    fn no_rules_allow_everything_and_say_so() {
        let open = HttpRules::default();
        assert!(open.is_open() && open.allows_method("PATCH") && open.allows_path("/x/y"));
        assert_eq!(open.to_string(), "any method; any path");
        let rules =
            HttpRules::parse(&["GET".into()], &["/repos/acme/**".into(), "/user".into()]).unwrap();
        assert_eq!(
            rules.to_string(),
            "methods GET; paths /repos/acme/**, /user"
        );
        assert!(rules.allows_path("/user") && rules.allows_path("/repos/acme/w"));
        assert!(!rules.allows_path("/repos/other"));
    }
}
