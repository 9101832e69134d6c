//! What a hook sees of the HTTP request a call makes, where the tool's manifest
//! declares which input fields hold it (`[tools.<tool>] http`): the method, and
//! the URL read the way the egress's `paths` rules read it (decoded, `.` and `..`
//! resolved), so that a hook judging `PUT /repos/acme/*` is not dodged by
//! `/repos/acme/%2e%2e/evil`. This is the call's claim, read from its input: the
//! egress still judges every request the guest actually sends.

use serde::{Deserialize, Serialize};

use crate::manifest::{HttpFields, RequestPath};

/// The HTTP request a call makes, as its input says.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct HookHttp {
    /// Uppercase (`GET`, `PUT`): the input's method, else the tool's default.
    pub method: String,
    /// The URL as the input wrote it.
    pub url: String,
    /// `http` or `https`, lowercase; empty when the URL cannot be read.
    pub scheme: String,
    /// The host, lowercase, without the port; empty when the URL cannot be read.
    pub host: String,
    /// The path decoded and normalised as the egress's `paths` rules read it;
    /// the path as written when it cannot be read that way (the egress
    /// refuses such a request to a grant with `paths`); empty when the URL
    /// cannot be read.
    pub path: String,
}

impl HookHttp {
    /// The request `input` (a call's JSON input) holds in `fields`; `None`
    /// when its URL field is absent or not text (the call makes no request
    /// the tool declared).
    pub fn read(fields: &HttpFields, input: &str) -> Option<HookHttp> {
        let input: serde_json::Value = serde_json::from_str(input).ok()?;
        let url = input.get(&fields.url)?.as_str()?.to_string();
        let method = fields
            .method
            .as_ref()
            .and_then(|field| input.get(field))
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| fields.default_method.clone(), str::to_ascii_uppercase);
        let mut http = HookHttp {
            method,
            url,
            ..HookHttp::default()
        };
        if let Ok(uri) = http.url.parse::<http::Uri>()
            && let (Some(scheme), Some(host)) = (uri.scheme_str(), uri.host())
        {
            http.scheme = scheme.to_ascii_lowercase();
            http.host = host.to_ascii_lowercase();
            http.path = match RequestPath::parse(uri.path()) {
                Ok(path) => path.matched,
                Err(_) => uri.path().to_string(),
            };
        }
        Some(http)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(method: Option<&str>) -> HttpFields {
        HttpFields {
            url: "url".into(),
            method: method.map(str::to_string),
            default_method: "GET".into(),
        }
    }

    #[test]
    fn the_method_and_a_normalised_path_are_read_from_the_declared_fields() {
        let input =
            r#"{"url": "https://API.GitHub.com:443/repos/acme/%2e%2e/evil?x=1", "method": "put"}"#;
        let http = HookHttp::read(&fields(Some("method")), input).unwrap();
        assert_eq!(http.method, "PUT");
        assert_eq!(http.scheme, "https");
        assert_eq!(http.host, "api.github.com");
        assert_eq!(http.path, "/repos/evil");
        assert!(http.url.ends_with("?x=1"));
        // No method in the input, or none declared: the default.
        let get = HookHttp::read(&fields(Some("method")), r#"{"url": "http://h/a"}"#).unwrap();
        assert_eq!((get.method.as_str(), get.path.as_str()), ("GET", "/a"));
        let declared = HookHttp::read(
            &fields(None),
            r#"{"url": "http://h/a", "method": "DELETE"}"#,
        );
        assert_eq!(declared.unwrap().method, "GET");
    }

    #[test]
    fn an_unreadable_url_leaves_its_parts_empty_and_a_missing_one_is_no_request() {
        let odd = HookHttp::read(&fields(None), r#"{"url": "not a url"}"#).unwrap();
        assert_eq!(odd.url, "not a url");
        assert_eq!(
            (odd.scheme.as_str(), odd.host.as_str(), odd.path.as_str()),
            ("", "", "")
        );
        let encoded = HookHttp::read(&fields(None), r#"{"url": "http://h/a%2Fb"}"#).unwrap();
        assert_eq!(encoded.path, "/a%2Fb");
        assert_eq!(HookHttp::read(&fields(None), r#"{"other": 1}"#), None);
        assert_eq!(HookHttp::read(&fields(None), r#"{"url": 3}"#), None);
        assert_eq!(HookHttp::read(&fields(None), "not json"), None);
    }
}
