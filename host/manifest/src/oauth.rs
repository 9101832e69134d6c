//! `[auth.oauth]` in `glovebox.toml`: accepting an identity provider's
//! access tokens (OAuth 2.1, Glovebox as the resource server) beside the
//! principals' own static tokens.
//!
//! ```toml
//! [auth.oauth]
//! issuer = "https://login.example.com"        # the token's `iss`, exactly
//! audience = "https://glovebox.example.com/mcp"  # its `aud`; also the resource's name
//! jwks_url = "https://login.example.com/jwks.json"  # or jwks_file = "jwks.json"
//! principal_claim = "sub"          # the claim naming a declared [[principal]]
//! required_scopes = ["mcp"]        # every one must be in the token's `scope`
//!
//! [auth.oauth.principal_map]       # optional: a claim's value -> the principal
//! "eng-agents" = "agent-eng"       # (e.g. with principal_claim = "groups")
//!
//! [auth.oauth.tool_scopes]         # optional: a tool (or `plugin.*`) -> the scope
//! "files.write" = "files:write"    # a token needs to see and call it
//! ```
//!
//! Enterprises want their identity provider's tokens, not a second set of
//! secrets; but who a token is still comes from the config: its
//! `principal_claim` must name a declared `[[principal]]`, whose kind,
//! roles and projects apply. A token naming anyone else is refused, so an
//! identity provider cannot mint principals the operator never declared.
//! Where the provider's tokens carry groups or roles rather than names, the
//! operator maps those values to declared principals (`principal_map`); the
//! map, like the principals, is the operator's, and a token whose values
//! lead to more than one principal is refused rather than guessed at.
//! The tokens themselves are checked by the MCP layer (`http/oauth.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ConfigError;
use super::source::Source;

/// `[auth.oauth]`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthConfig {
    /// The `iss` every token must carry, exactly; the authorization server
    /// named in the protected-resource metadata.
    pub issuer: String,
    /// The `aud` every token must carry (one of its audiences); also the
    /// `resource` of the protected-resource metadata.
    pub audience: String,
    /// Where the issuer's public keys are.
    pub jwks: JwksSource,
    /// The claim whose value names a declared principal (default `sub`).
    pub principal_claim: String,
    /// Scopes every token must hold (in its `scope` or `scp` claim).
    pub required_scopes: Vec<String>,
    /// The claim's values that stand for a declared principal, and which
    /// one; empty: the claim's value is the principal's name.
    pub principal_map: BTreeMap<String, String>,
    /// Plugin tools (`plugin.tool`, or `plugin.*` for all of a plugin's)
    /// and the scope a token must hold to see and call them.
    pub tool_scopes: BTreeMap<String, String>,
}

impl OAuthConfig {
    /// The scope a token needs for plugin tool `tool`, if any: its own
    /// entry, else its plugin's `plugin.*`.
    pub fn scope_for(&self, tool: &str) -> Option<&str> {
        if let Some(scope) = self.tool_scopes.get(tool) {
            return Some(scope);
        }
        let plugin = tool.split_once('.')?.0;
        self.tool_scopes
            .get(&format!("{plugin}.*"))
            .map(String::as_str)
    }
}

/// Where an issuer's JSON Web Key Set is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JwksSource {
    /// Fetched over HTTP(S), cached, and fetched again (at most once a
    /// minute) when a token names a key it does not hold.
    Url(String),
    /// A file (absolute), read again when a token names a key it does not hold.
    File(PathBuf),
}

/// `[auth]`: how HTTP callers may prove who they are besides a principal's
/// own token.
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawAuth {
    /// Access tokens of an OAuth 2.1 authorization server (opt-in;
    /// [`operators/oauth.md`](operators/oauth.md)).
    oauth: Option<RawOAuth>,
}

/// `[auth.oauth]` ([`operators/oauth.md`](operators/oauth.md)).
#[derive(Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawOAuth {
    /// The authorization server's issuer URL: a token's `iss` must equal it.
    issuer: String,
    /// This server's resource identifier (e.g. its `/mcp` URL): a token's
    /// `aud` must include it.
    audience: String,
    /// The URL of the issuer's JSON Web Key Set (or `jwks_file`: one of the
    /// two); `https`, or `http` to a loopback address.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(one of the two)")))]
    jwks_url: Option<String>,
    /// A file holding the issuer's JSON Web Key Set (or `jwks_url`: one of
    /// the two), relative to the config's directory.
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "(one of the two)")))]
    jwks_file: Option<String>,
    /// The claim whose value is the name of a declared `[[principal]]`, or
    /// (with `principal_map`) a value the map gives a principal for; a
    /// string, or an array of strings.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "sub")))]
    principal_claim: Option<String>,
    /// Scopes every token must hold (its `scope` claim, space-separated, or
    /// `scp`); one missing is answered 403 `insufficient_scope`.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("default" = [])))]
    required_scopes: Vec<String>,
    /// Values of `principal_claim` (a string, or an array of strings such
    /// as groups or roles) and the declared `[[principal]]` each stands
    /// for. When set, only the values listed here count, and a token whose
    /// values lead to more than one principal is refused; when absent, the
    /// claim's value is the principal's name.
    #[serde(default)]
    #[cfg_attr(
        feature = "schemars",
        schemars(extend("default" = {}, "x-key" = "<claim value>"))
    )]
    principal_map: BTreeMap<String, String>,
    /// Plugin tools and the scope a token must hold to see them in
    /// `tools/list` and to call them (directly, as a task, or through
    /// `job_spawn`): a key is `plugin.tool`, or `plugin.*` for every tool
    /// of a plugin (a tool's own entry wins). A call without the scope is
    /// answered 403 `insufficient_scope` naming it. Tools not listed need
    /// no scope beyond `required_scopes`; static principal tokens are not
    /// narrowed.
    #[serde(default)]
    #[cfg_attr(
        feature = "schemars",
        schemars(extend("default" = {}, "x-key" = "<plugin.tool or plugin.*>"))
    )]
    tool_scopes: BTreeMap<String, String>,
}

impl RawAuth {
    /// Whether `[auth.oauth]` is there (then a principal may have no
    /// credential of its own).
    pub(super) fn has_oauth(&self) -> bool {
        self.oauth.is_some()
    }
}

pub(super) fn validate_auth(
    src: &Source,
    dir: &Path,
    raw: &RawAuth,
    principals: &[&str],
) -> Result<Option<OAuthConfig>, ConfigError> {
    let Some(raw) = &raw.oauth else {
        return Ok(None);
    };
    let key = |leaf: &str| format!("auth.oauth.{leaf}");
    if principals.is_empty() {
        return Err(src.invalid(
            &key("issuer"),
            "OAuth tokens must name a declared principal, and the config declares none",
            "declare the principals tokens may name (`glovebox principal add NAME`), or remove `[auth.oauth]`",
        ));
    }
    let issuer = raw.issuer.trim();
    if !is_http_url(issuer) {
        return Err(src.invalid(
            &key("issuer"),
            format!("`{issuer}` is not an http(s) URL"),
            "write the authorization server's issuer, exactly as its tokens' `iss` says it, e.g. `issuer = \"https://login.example.com\"`",
        ));
    }
    let audience = raw.audience.trim();
    if audience.is_empty() || audience.contains(char::is_whitespace) {
        return Err(src.invalid(
            &key("audience"),
            format!("`{audience}` is not an audience"),
            "write this server's resource identifier as the tokens' `aud` says it, e.g. `audience = \"https://glovebox.example.com/mcp\"`",
        ));
    }
    let jwks = jwks_source(src, &key, dir, raw)?;
    let principal_claim = raw.principal_claim.as_deref().unwrap_or("sub").trim();
    if principal_claim.is_empty() {
        return Err(src.invalid(
            &key("principal_claim"),
            "the claim's name is empty",
            "name the claim that holds the principal's name, e.g. `principal_claim = \"sub\"`",
        ));
    }
    check_required_scopes(src, &key, raw)?;
    check_principal_map(src, raw, principals)?;
    check_tool_scopes(src, raw)?;
    Ok(Some(OAuthConfig {
        issuer: issuer.to_string(),
        audience: audience.to_string(),
        jwks,
        principal_claim: principal_claim.to_string(),
        required_scopes: raw.required_scopes.clone(),
        principal_map: raw.principal_map.clone(),
        tool_scopes: raw.tool_scopes.clone(),
    }))
}

/// Where the keys that sign tokens are: `jwks_url` (https, or http to a
/// loopback address) or `jwks_file` (found, from the config's directory
/// `dir`), one of the two.
fn jwks_source(
    src: &Source,
    key: &dyn Fn(&str) -> String,
    dir: &Path,
    raw: &RawOAuth,
) -> Result<JwksSource, ConfigError> {
    Ok(match (&raw.jwks_url, &raw.jwks_file) {
        (Some(_), Some(_)) => {
            return Err(src.invalid(
                &key("jwks_file"),
                "`jwks_url` and `jwks_file` both say where the keys are",
                "keep one of them",
            ));
        }
        (None, None) => {
            return Err(src.invalid(
                &key("issuer"),
                "no key set to check tokens' signatures against",
                "set `jwks_url` (the issuer's `jwks_uri`) or `jwks_file`",
            ));
        }
        (Some(url), None) => {
            let url = url.trim();
            if !url.starts_with("https://") && !is_loopback_http(url) {
                return Err(src.invalid(
                    &key("jwks_url"),
                    format!("`{url}` is not an https URL"),
                    "fetch the keys over https (plain http only to a loopback address), or copy them to a file and set `jwks_file`",
                ));
            }
            JwksSource::Url(url.to_string())
        }
        (None, Some(file)) => {
            let path = dir.join(file);
            if !path.is_file() {
                return Err(src.invalid(
                    &key("jwks_file"),
                    format!("key set file `{file}` not found"),
                    "check the path (relative paths are resolved from the config file's directory)",
                ));
            }
            JwksSource::File(path)
        }
    })
}

/// `required_scopes`: each a scope as the issuer writes it.
fn check_required_scopes(
    src: &Source,
    key: &dyn Fn(&str) -> String,
    raw: &RawOAuth,
) -> Result<(), ConfigError> {
    for scope in &raw.required_scopes {
        if !is_scope(scope) {
            return Err(src.invalid(
                &key("required_scopes"),
                format!("`{scope}` is not a scope"),
                "list scopes as the issuer writes them, without spaces, e.g. `required_scopes = [\"mcp\"]`",
            ));
        }
    }
    Ok(())
}

/// `principal_map`: each claim value maps to a declared principal.
fn check_principal_map(
    src: &Source,
    raw: &RawOAuth,
    principals: &[&str],
) -> Result<(), ConfigError> {
    for (value, principal) in &raw.principal_map {
        let at = format!("auth.oauth.principal_map.{value}");
        if value.trim().is_empty() {
            return Err(src.invalid(
                &at,
                "an empty claim value",
                "write the value the token's claim carries, e.g. `\"eng-agents\" = \"agent-eng\"`",
            ));
        }
        if !principals.contains(&principal.as_str()) {
            return Err(src.invalid(
                &at,
                format!("`{principal}` is no declared principal"),
                format!(
                    "map `{value}` to one of the declared principals ({}), or declare it (`glovebox principal add {principal}`)",
                    principals.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// `tool_scopes`: each a plugin tool (or a plugin's every tool) and one
/// scope.
fn check_tool_scopes(src: &Source, raw: &RawOAuth) -> Result<(), ConfigError> {
    for (tool, scope) in &raw.tool_scopes {
        let at = format!("auth.oauth.tool_scopes.{tool}");
        let named = tool.split_once('.').is_some_and(|(plugin, name)| {
            !plugin.is_empty()
                && !name.is_empty()
                && !plugin.contains('*')
                && (name == "*" || !name.contains('*'))
        });
        if !named || tool.contains(char::is_whitespace) {
            return Err(src.invalid(
                &at,
                format!("`{tool}` is not a plugin tool"),
                "name a plugin tool as `plugin.tool` (as `tools/list` shows it), or every tool of a plugin as `plugin.*`, e.g. `\"files.write\" = \"files:write\"`",
            ));
        }
        if !is_scope(scope) {
            return Err(src.invalid(
                &at,
                format!("`{scope}` is not a scope"),
                "write one scope as the issuer writes it, without spaces, e.g. `\"files.write\" = \"files:write\"`",
            ));
        }
    }
    Ok(())
}

/// A scope as an issuer writes it: not empty, no spaces or quotes.
fn is_scope(scope: &str) -> bool {
    !(scope.is_empty() || scope.contains(char::is_whitespace) || scope.contains('"'))
}

fn is_http_url(url: &str) -> bool {
    (url.starts_with("https://") || url.starts_with("http://"))
        && url.len() > "https://".len()
        && !url.contains(char::is_whitespace)
}

/// `http://` to `localhost` or a loopback address (a key set served on the
/// same machine, as tests and sidecars do).
fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
