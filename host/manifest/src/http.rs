//! `[[http]]` grants: which origins (scheme, host, port) a plugin may send
//! requests to, and on each which methods and paths ([`HttpRules`]).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use crate::{HttpInjection, HttpRules};

/// The scheme of an HTTP grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HttpScheme {
    Http,
    Https,
}

impl HttpScheme {
    /// `"http"` or `"https"`.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpScheme::Http => "http",
            HttpScheme::Https => "https",
        }
    }

    /// 80 or 443.
    pub fn default_port(self) -> u16 {
        match self {
            HttpScheme::Http => 80,
            HttpScheme::Https => 443,
        }
    }
}

impl fmt::Display for HttpScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One origin a plugin may reach: `https://api.example.com` allows exactly scheme
/// `https`, host `api.example.com` and port 443, and nothing else (no subdomains);
/// its `rules` may narrow it to some methods and paths.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HttpGrant {
    pub scheme: HttpScheme,
    /// Lowercased; an IPv6 literal is stored without brackets.
    pub host: String,
    pub port: u16,
    /// The methods and paths allowed on the origin (none listed: all).
    pub rules: HttpRules,
    /// A header with a secret the host adds to the requests the grant allows.
    pub inject: Option<HttpInjection>,
    /// Whom the grant is for (`only`; everyone by default).
    pub only: crate::Only,
}

impl HttpGrant {
    /// Whether the host is an IP literal rather than a name.
    pub fn host_is_ip(&self) -> bool {
        self.host.parse::<IpAddr>().is_ok()
    }

    /// Whether a request to `scheme://host:port` is on this grant's origin. Scheme and
    /// host compare case-insensitively; an IPv6 host may be given with or without
    /// brackets, and IP literals compare as addresses (`::1` equals `0:0::1`).
    pub fn matches(&self, scheme: &str, host: &str, port: u16) -> bool {
        if !scheme.eq_ignore_ascii_case(self.scheme.as_str()) || port != self.port {
            return false;
        }
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        match (host.parse::<IpAddr>(), self.host.parse::<IpAddr>()) {
            (Ok(asked), Ok(granted)) => asked == granted,
            _ => host.eq_ignore_ascii_case(&self.host),
        }
    }

    /// Parses a grant URL; on failure says what is wrong and what to write instead.
    pub(super) fn parse_url(url: &str) -> Result<HttpGrant, GrantUrlError> {
        let owned = || url.to_string();
        let Some((scheme, rest)) = url.split_once("://") else {
            return Err(GrantUrlError::NotUrl { url: owned() });
        };
        let scheme = if scheme.eq_ignore_ascii_case("https") {
            HttpScheme::Https
        } else if scheme.eq_ignore_ascii_case("http") {
            HttpScheme::Http
        } else {
            return Err(GrantUrlError::Scheme {
                url: owned(),
                scheme: scheme.to_string(),
            });
        };
        if rest.contains(['?', '#']) {
            return Err(GrantUrlError::QueryOrFragment { url: owned() });
        }
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err(GrantUrlError::UserInfo { url: owned() });
        }
        if !path.is_empty() && path != "/" {
            return Err(GrantUrlError::Path {
                url: owned(),
                path: path.to_string(),
            });
        }

        let in_url = |error: HostError| GrantUrlError::Host {
            url: owned(),
            error,
        };
        let (host, port, bracketed) = split_host_port(authority).map_err(in_url)?;
        let host = if bracketed {
            host.parse::<Ipv6Addr>()
                .map(|ip| ip.to_string())
                .map_err(|_| HostError::BadIpv6 {
                    host: host.to_string(),
                })
        } else {
            validate_host(host)
        }
        .map_err(in_url)?;
        let port = match port {
            None => scheme.default_port(),
            Some(text) => match text.parse::<u16>() {
                Ok(port) if port != 0 => port,
                _ => {
                    return Err(GrantUrlError::Port {
                        url: owned(),
                        port: text.to_string(),
                    });
                }
            },
        };
        Ok(HttpGrant {
            scheme,
            host,
            port,
            rules: HttpRules::default(),
            inject: None,
            only: crate::Only::default(),
        })
    }
}

/// Why a URL cannot be an `[[http]]` grant: [`problem`](Self::problem) says
/// what is wrong, quoting the URL, and [`hint`](Self::hint) what to write
/// instead (the config shows them apart; `Display` is `problem: hint`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrantUrlError {
    /// No `://`.
    NotUrl { url: String },
    /// A scheme other than `http` and `https`.
    Scheme { url: String, scheme: String },
    /// A `?` or `#`.
    QueryOrFragment { url: String },
    /// Credentials before the host.
    UserInfo { url: String },
    /// A path other than `/`.
    Path { url: String, path: String },
    /// The host (or its brackets) is not one.
    Host { url: String, error: HostError },
    /// A port that is not 1 to 65535.
    Port { url: String, port: String },
}

/// What a grant looks like.
const SHAPE: &str = "write only a scheme, a host and an optional port, e.g. `https://api.example.com` or `http://127.0.0.1:8080`";

impl GrantUrlError {
    /// What is wrong, quoting the URL.
    pub fn problem(&self) -> String {
        match self {
            GrantUrlError::NotUrl { url } => format!("`{url}` is not a url"),
            GrantUrlError::Scheme { url, scheme } => format!("url `{url}` has scheme `{scheme}`"),
            GrantUrlError::QueryOrFragment { url } => {
                format!("url `{url}` has a query or fragment")
            }
            GrantUrlError::UserInfo { url } => format!("url `{url}` has user info"),
            GrantUrlError::Path { url, path } => format!("url `{url}` has the path `{path}`"),
            GrantUrlError::Host { url, error } => format!("url `{url}`: {error}"),
            GrantUrlError::Port { url, port } => {
                format!("url `{url}` has an invalid port `{port}`")
            }
        }
    }

    /// What to write instead.
    pub fn hint(&self) -> &'static str {
        match self {
            GrantUrlError::NotUrl { .. } | GrantUrlError::Host { .. } => SHAPE,
            GrantUrlError::Scheme { .. } => {
                "only `http` and `https` can be granted; other protocols are never allowed"
            }
            GrantUrlError::QueryOrFragment { .. } => {
                "a grant covers a whole origin: remove everything after the host and port"
            }
            GrantUrlError::UserInfo { .. } => {
                "credentials do not belong in a grant: remove the part before `@`"
            }
            GrantUrlError::Path { .. } => {
                "a grant covers a whole origin, not a path: remove the path"
            }
            GrantUrlError::Port { .. } => {
                "write a port from 1 to 65535, or leave it out for the scheme's default"
            }
        }
    }
}

impl fmt::Display for GrantUrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.problem(), self.hint())
    }
}

impl std::error::Error for GrantUrlError {}

/// What is wrong with the host part of a grant URL (the caller names the URL
/// and says what a grant looks like).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostError {
    #[error("`[{rest}` has no closing `]`")]
    Unclosed { rest: String },
    #[error("unexpected `{after}` after the ipv6 address")]
    AfterIpv6 { after: String },
    #[error("the host is empty")]
    Empty,
    #[error("`{host}` is not a valid ipv6 address")]
    BadIpv6 { host: String },
    #[error("wildcard host `{host}` is not supported; grant each host on its own")]
    Wildcard { host: String },
    #[error("host `{host}` is not ascii; write its punycode form (`xn--…`)")]
    NotAscii { host: String },
    #[error("`{host}` is not a valid ipv4 address")]
    BadIpv4 { host: String },
    #[error("`{host}` is not a valid host name (letters, digits, `-` and `_` between dots)")]
    BadName { host: String },
}

/// Splits `host:port` or `[ipv6]:port`; the flag tells whether the host was bracketed.
fn split_host_port(authority: &str) -> Result<(&str, Option<&str>, bool), HostError> {
    if let Some(rest) = authority.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err(HostError::Unclosed {
                rest: rest.to_string(),
            });
        };
        return match after {
            "" => Ok((host, None, true)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((host, Some(port), true)),
                None => Err(HostError::AfterIpv6 {
                    after: after.to_string(),
                }),
            },
        };
    }
    Ok(match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port), false),
        None => (authority, None, false),
    })
}

fn validate_host(host: &str) -> Result<String, HostError> {
    let owned = || host.to_string();
    if host.is_empty() {
        return Err(HostError::Empty);
    }
    if host.contains(':') {
        // Only IPv6 literals contain colons, and those must be bracketed.
        return match host.parse::<Ipv6Addr>() {
            Ok(ip) => Ok(ip.to_string()),
            Err(_) => Err(HostError::BadIpv6 { host: owned() }),
        };
    }
    if host.contains('*') {
        return Err(HostError::Wildcard { host: owned() });
    }
    if !host.is_ascii() {
        return Err(HostError::NotAscii { host: owned() });
    }
    if host.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return match host.parse::<Ipv4Addr>() {
            Ok(ip) => Ok(ip.to_string()),
            Err(_) => Err(HostError::BadIpv4 { host: owned() }),
        };
    }
    let valid_label = |label: &str| {
        !label.is_empty()
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if !host.split('.').all(valid_label) {
        return Err(HostError::BadName { host: owned() });
    }
    Ok(host.to_ascii_lowercase())
}

impl FromStr for HttpGrant {
    type Err = GrantUrlError;

    /// Parses `https://host[:port][/]`; the error says what is wrong and what to write.
    fn from_str(url: &str) -> Result<Self, Self::Err> {
        HttpGrant::parse_url(url)
    }
}

impl fmt::Display for HttpGrant {
    /// The origin, always with the port: `https://api.example.com:443`,
    /// `http://[::1]:8080` (the rules are [`HttpGrant::rules`]' to show).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.scheme, self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(url: &str) -> HttpGrant {
        url.parse().unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    #[test]
    fn urls_parse_to_origins_with_default_ports() {
        let g = grant("https://API.Example.com");
        assert_eq!(g.scheme, HttpScheme::Https);
        assert_eq!(g.host, "api.example.com");
        assert_eq!(g.port, 443);
        assert_eq!(grant("http://example.com/").port, 80);
        assert_eq!(grant("HTTP://example.com:8080").port, 8080);
        assert_eq!(grant("http://127.0.0.1:8080").host, "127.0.0.1");
        let v6 = grant("http://[::1]:3000");
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 3000));
        assert_eq!(grant("https://[0:0::1]").host, "::1");
    }

    #[test]
    fn grants_display_with_scheme_host_and_port() {
        assert_eq!(
            grant("https://api.example.com").to_string(),
            "https://api.example.com:443"
        );
        assert_eq!(grant("http://[::1]:8080/").to_string(), "http://[::1]:8080");
    }

    #[test]
    fn host_is_ip_tells_literals_from_names() {
        assert!(grant("http://127.0.0.1").host_is_ip());
        assert!(grant("http://[fe80::1]").host_is_ip());
        assert!(!grant("http://localhost").host_is_ip());
    }

    #[test]
    fn matching_is_exact_on_scheme_and_port_and_case_insensitive_on_host() {
        let g = grant("https://api.example.com");
        assert!(g.matches("https", "api.example.com", 443));
        assert!(g.matches("HTTPS", "API.EXAMPLE.COM", 443));
        assert!(!g.matches("http", "api.example.com", 443));
        assert!(!g.matches("https", "api.example.com", 8443));
        assert!(!g.matches("https", "evil.api.example.com", 443));
        assert!(!g.matches("https", "example.com", 443));
        assert!(!g.matches("https", "api.example.com.evil.net", 443));
        let v6 = grant("http://[::1]:8080");
        assert!(v6.matches("http", "::1", 8080));
        assert!(v6.matches("http", "[::1]", 8080));
        assert!(v6.matches("http", "0:0:0:0:0:0:0:1", 8080));
        assert!(!v6.matches("http", "127.0.0.1", 8080));
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        let cases = [
            ("example.com", "is not a url"),
            ("ftp://example.com", "has scheme `ftp`"),
            ("file:///etc/passwd", "has scheme `file`"),
            ("https://example.com/api", "has the path `/api`"),
            ("https://example.com?x=1", "has a query or fragment"),
            ("https://example.com/#top", "has a query or fragment"),
            ("https://user:pw@example.com", "has user info"),
            ("https://", "the host is empty"),
            ("https://:443", "the host is empty"),
            ("https://example.com:0", "invalid port `0`"),
            ("https://example.com:99999", "invalid port `99999`"),
            ("https://example.com:", "invalid port ``"),
            ("https://*.example.com", "wildcard host"),
            ("https://exa mple.com", "not a valid host name"),
            ("https://a..b", "not a valid host name"),
            ("https://999.1.1.1", "not a valid ipv4 address"),
            ("http://[::1", "no closing `]`"),
            ("http://[nope]", "not a valid ipv6 address"),
            ("http://[::1]x", "unexpected `x`"),
            ("https://bücher.de", "punycode"),
        ];
        for (url, expected) in cases {
            let error = url.parse::<HttpGrant>().unwrap_err().to_string();
            assert!(error.contains(expected), "{url}: {error}");
            assert!(error.contains(": "), "{url}: no hint in {error}");
        }
    }
}
