//! A `[[notify]]` target's `url`: an `http://` or `https://` URL with a
//! host and no credentials, whose `host[:port]` names the target by default.

/// What is wrong with a `[[notify]]` target's `url`; each quotes it (the
/// config adds the key and an example of a good one).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub(super) enum TargetUrlError {
    #[error("`[[notify]]` needs the receiver's `url`")]
    Missing,
    #[error("`{url}` is not an http:// or https:// URL")]
    Scheme { url: String },
    #[error("`{url}` contains whitespace")]
    Whitespace { url: String },
    #[error("`{url}` carries credentials before the host; sign deliveries with `secret` instead")]
    Credentials { url: String },
    #[error("`{url}` has no host")]
    NoHost { url: String },
}

/// `host[:port]` of an `http://` or `https://` URL, or what is wrong with it.
pub(super) fn url_host(url: &str) -> Result<String, TargetUrlError> {
    let owned = || url.to_string();
    if url.is_empty() {
        return Err(TargetUrlError::Missing);
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| TargetUrlError::Scheme { url: owned() })?;
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(TargetUrlError::Whitespace { url: owned() });
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(TargetUrlError::Credentials { url: owned() });
    }
    let host = authority.rsplit_once(':').map_or(authority, |(h, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) && !h.is_empty() {
            h
        } else {
            authority
        }
    });
    if host.is_empty() {
        return Err(TargetUrlError::NoHost { url: owned() });
    }
    Ok(authority.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_http_with_a_host() {
        assert_eq!(
            url_host("http://127.0.0.1:9000/x").unwrap(),
            "127.0.0.1:9000"
        );
        assert_eq!(
            url_host("https://hooks.slack.com/services/a").unwrap(),
            "hooks.slack.com"
        );
        assert!(url_host("ftp://x").is_err());
        assert!(url_host("http:///x").is_err());
        assert!(url_host("https://user:pw@host/").is_err());
        assert!(url_host("http://a b/").is_err());
    }
}
