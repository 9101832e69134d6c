//! Permission hook: HTTP requests judged by method, host and path. An `[[http]]`
//! grant says which hosts (and methods and paths) a plugin may reach at all; this hook
//! puts a human in front of some of those requests, or refuses them, per call: reads
//! of an API run, writes to it wait for an approval, its admin paths never run. It
//! needs the 0.2.0 hook world, whose request carries the HTTP request a call makes
//! where the tool's manifest declares which input fields hold it
//! (`[tools.fetch] http = { url = "url", method = "method" }`).
//!
//! Settings:
//!
//! ```json
//! {"deny": [{"method": "DELETE"}, {"path": "/admin*"}],
//!  "ask":  [{"method": ["POST", "PUT", "PATCH"], "host": "api.github.com"}]}
//! ```
//!
//! - `deny`, `ask` (optional; at least one): rules. A rule matches a request when each
//!   field it has matches: `method` (a method or a list of them, uppercase), `host` (a
//!   host, or `*.example.com` for its subdomains), `path` (a path, or a prefix ending in
//!   `*`; the host reads the path percent-decoded with `.` and `..` resolved, so
//!   `/repos/acme/%2e%2e/admin` is `/admin`). A rule with no field matches every request.
//! - The first `deny` rule that matches denies; else the first `ask` rule asks a human;
//!   else the call is allowed. A call whose tool declares no HTTP request is allowed.
//! - A request whose URL the host could not read (no host) is denied: a hook that cannot
//!   tell where a request goes fails closed. Malformed settings deny every call, naming
//!   the key.

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use glovebox_hook_sdk::HttpRequest;
use glovebox_hook_sdk::prelude::*;

struct HttpGuard;

impl Guest for HttpGuard {
    fn triggers() -> Vec<String> {
        vec!["*".to_owned()]
    }

    fn validate(settings: String, req: Request) -> Decision {
        let rules = match rules(&settings) {
            Ok(rules) => rules,
            Err(problem) => return invalid_settings(&problem),
        };
        match &req.http {
            Some(http) => judge(&rules, &req.tool, http),
            None => allow(),
        }
    }

    fn after(_settings: String, _req: Request, _ok: bool, _summary: String) {}
}

glovebox_hook_sdk::export!(HttpGuard);

/// One rule: each field it has must match.
struct Rule {
    /// Where it is in the settings (`deny[0]`), for the reason.
    key: String,
    methods: Option<Vec<String>>,
    host: Option<String>,
    path: Option<String>,
}

impl Rule {
    fn matches(&self, http: &HttpRequest) -> bool {
        let method = self
            .methods
            .as_ref()
            .is_none_or(|m| m.contains(&http.method));
        let host = self
            .host
            .as_deref()
            .is_none_or(|h| match h.strip_prefix("*.") {
                Some(domain) => http
                    .host
                    .strip_suffix(domain)
                    .is_some_and(|sub| sub.ends_with('.') && sub.len() > 1),
                None => h == http.host,
            });
        let path = self
            .path
            .as_deref()
            .is_none_or(|p| match p.strip_suffix('*') {
                Some(prefix) => http.path.starts_with(prefix),
                None => p == http.path,
            });
        method && host && path
    }
}

/// The `deny` rules, then the `ask` rules.
struct Rules {
    deny: Vec<Rule>,
    ask: Vec<Rule>,
}

fn rules(text: &str) -> Result<Rules, String> {
    let settings = Settings::parse(text, &["deny", "ask"])?;
    let list = |key: &str| -> Result<Vec<Rule>, String> {
        let Some(value) = settings.get(key) else {
            return Ok(Vec::new());
        };
        let Value::Array(items) = value else {
            return Err(format!(
                "settings key `{key}` must be an array of rules, got {}",
                kind_of(value)
            ));
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| rule(&format!("{key}[{i}]"), item))
            .collect()
    };
    let rules = Rules {
        deny: list("deny")?,
        ask: list("ask")?,
    };
    if rules.deny.is_empty() && rules.ask.is_empty() {
        return Err("give at least one rule in `deny` or `ask`, e.g. {\"ask\": [{\"method\": [\"POST\", \"PUT\"]}]}".to_owned());
    }
    Ok(rules)
}

fn rule(key: &str, value: &Value) -> Result<Rule, String> {
    let Value::Object(fields) = value else {
        return Err(format!(
            "settings key `{key}` must be an object with `method`, `host` or `path`, got {}",
            kind_of(value)
        ));
    };
    if let Some(unknown) = fields
        .keys()
        .find(|k| !matches!(k.as_str(), "method" | "host" | "path"))
    {
        return Err(format!(
            "settings key `{key}.{unknown}` is unknown: a rule has `method`, `host` and `path`"
        ));
    }
    let text = |field: &str| -> Result<Option<String>, String> {
        match fields.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "settings key `{key}.{field}` must be a string, got {}",
                kind_of(other)
            )),
        }
    };
    let methods = match fields.get("method") {
        None => None,
        Some(Value::String(m)) => Some(vec![m.clone()]),
        Some(list) => Some(strings(list, &format!("{key}.method"))?),
    };
    if let Some(bad) = methods
        .iter()
        .flatten()
        .find(|m| m.is_empty() || !m.chars().all(|c| c.is_ascii_uppercase()))
    {
        return Err(format!(
            "settings key `{key}.method` has `{bad}`: write methods in uppercase, such as `PUT`"
        ));
    }
    let path = text("path")?;
    if let Some(p) = path.as_deref().filter(|p| !p.starts_with('/') && *p != "*") {
        return Err(format!(
            "settings key `{key}.path` is `{p}`: write a path from its `/`, such as `/admin*`"
        ));
    }
    Ok(Rule {
        key: key.to_owned(),
        methods,
        host: text("host")?.map(|h| h.to_ascii_lowercase()),
        path: path.filter(|p| p != "*"),
    })
}

fn judge(rules: &Rules, tool: &str, http: &HttpRequest) -> Decision {
    if http.host.is_empty() {
        return deny(
            format!(
                "{tool} would send a request to `{}`, a URL this hook cannot read, so it cannot tell where it goes",
                http.url
            ),
            ["give an absolute http:// or https:// URL"],
        );
    }
    let what = format!("{} {}{}", http.method, http.host, http.path);
    if let Some(rule) = rules.deny.iter().find(|r| r.matches(http)) {
        return deny(
            format!(
                "{tool} may not send {what}: rule `{}` of this hook denies it",
                rule.key
            ),
            [
                "read instead of write, if a read is enough (GET)",
                "ask the operator to make this request",
            ],
        );
    }
    if let Some(rule) = rules.ask.iter().find(|r| r.matches(http)) {
        return ask(format!(
            "{tool} would send {what} (rule `{}`): approve to send it",
            rule.key
        ));
    }
    allow()
}

#[cfg(test)]
mod tests {
    use super::*;
    use glovebox_hook_sdk::testing::request;

    const SETTINGS: &str = r#"{
        "deny": [{"method": "DELETE"}, {"path": "/admin*"}],
        "ask": [{"method": ["POST", "PUT", "PATCH"], "host": "*.github.com"}]}"#;

    fn call(method: &str, host: &str, path: &str) -> Decision {
        let mut req = request("fetch.fetch", "net:http", "workagent", "{}", 0.0, false);
        req.http = Some(HttpRequest {
            method: method.into(),
            url: format!("https://{host}{path}"),
            scheme: "https".into(),
            host: host.into(),
            path: path.into(),
        });
        HttpGuard::validate(SETTINGS.into(), req)
    }

    #[test]
    fn rules_deny_ask_or_let_a_request_through() {
        assert_eq!(call("GET", "api.github.com", "/repos/acme/x"), allow());
        match call("PUT", "api.github.com", "/repos/acme/x") {
            Decision::Ask(text) => assert_eq!(
                text,
                "fetch.fetch would send PUT api.github.com/repos/acme/x (rule `ask[0]`): approve to send it"
            ),
            other => panic!("expected an ask, got {other:?}"),
        }
        // Not a subdomain of github.com: no rule asks.
        assert_eq!(call("PUT", "github.com", "/x"), allow());
        assert_eq!(call("PUT", "evilgithub.com", "/x"), allow());
        for (method, path, rule) in [
            ("DELETE", "/repos/acme/x", "deny[0]"),
            ("GET", "/admin/users", "deny[1]"),
        ] {
            match call(method, "api.github.com", path) {
                Decision::Deny(d) => assert_eq!(
                    d.reason,
                    format!(
                        "fetch.fetch may not send {method} api.github.com{path}: rule `{rule}` of this hook denies it"
                    )
                ),
                other => panic!("expected a deny, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_call_without_a_request_is_allowed_and_an_unreadable_url_denied() {
        let req = request("text.upper", "execute:x", "workagent", "{}", 0.0, false);
        assert_eq!(HttpGuard::validate(SETTINGS.into(), req), allow());
        assert!(
            matches!(call("GET", "", ""), Decision::Deny(d) if d.reason.contains("cannot read"))
        );
    }

    #[test]
    fn bad_settings_fail_closed_naming_the_key() {
        let bad = |settings: &str| {
            let mut req = request("fetch.fetch", "net:http", "workagent", "{}", 0.0, false);
            req.http = None;
            match HttpGuard::validate(settings.into(), req) {
                Decision::Deny(d) => d.reason,
                other => panic!("expected a deny, got {other:?}"),
            }
        };
        assert!(bad("{}").contains("at least one rule"));
        assert!(bad(r#"{"deny": [{"method": "put"}]}"#).contains("`deny[0].method` has `put`"));
        assert!(bad(r#"{"ask": [{"path": "admin"}]}"#).contains("`ask[0].path` is `admin`"));
        assert!(bad(r#"{"ask": [{"url": "x"}]}"#).contains("`ask[0].url` is unknown"));
        assert!(bad(r#"{"deny": {"method": "PUT"}}"#).contains("`deny` must be an array of rules"));
    }
}
