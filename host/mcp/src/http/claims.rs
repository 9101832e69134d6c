//! What a verified token's claims say: which declared principal it stands
//! for, and which scopes it holds.
//!
//! Why apart from `oauth.rs`: that file decides whether a token is the
//! issuer's, valid now and for this server (signatures, keys, times); this
//! one reads who the operator's config says it is, a pure function of the
//! claims and `[auth.oauth]`, tested as one.

use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Value};

use glovebox::manifest::OAuthConfig;

/// The name of the one principal a token's claims stand for: the principal
/// claim's value (a string, or an array of strings such as groups), each
/// looked up in `principal_map` when the config has one, else taken as a
/// principal's name (`declared` says which names are). No principal, or
/// more than one, is a refusal, in the log's words.
pub(super) fn claimed<'c>(
    claims: &'c Map<String, Value>,
    config: &'c OAuthConfig,
    declared: impl Fn(&str) -> bool,
) -> Result<&'c str, String> {
    let claim = &config.principal_claim;
    let values: Vec<&str> = match claims.get(claim) {
        Some(Value::String(value)) => vec![value.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if values.is_empty() {
        return Err(format!(
            "no `{claim}` claim (a string, or an array of strings) to name a principal"
        ));
    }
    let map = &config.principal_map;
    let names: BTreeSet<&str> = if map.is_empty() {
        values.into_iter().filter(|name| declared(name)).collect()
    } else {
        values
            .into_iter()
            .filter_map(|value| map.get(value).map(String::as_str))
            .collect()
    };
    let mut names = names.into_iter();
    match (names.next(), names.next()) {
        (Some(name), None) => Ok(name),
        (None, _) if map.is_empty() => Err(format!("its `{claim}` names no declared principal")),
        (None, _) => Err(format!(
            "no value of its `{claim}` is in `auth.oauth.principal_map`"
        )),
        (Some(_), Some(_)) => Err(format!(
            "its `{claim}` stands for more than one principal: a token must stand for one"
        )),
    }
}

/// The scopes a token holds: `scope` (space-separated, RFC 9068) or `scp`
/// (a list or a string, as some issuers write it).
pub(super) fn scopes(claims: &Map<String, Value>) -> HashSet<&str> {
    let mut held = HashSet::new();
    for claim in ["scope", "scp"] {
        match claims.get(claim) {
            Some(Value::String(s)) => held.extend(s.split_whitespace()),
            Some(Value::Array(list)) => held.extend(list.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    held
}

#[cfg(test)]
mod tests {
    use super::*;
    use glovebox::manifest::JwksSource;

    #[test]
    fn scopes_are_read_from_scope_or_scp() {
        let claims = |v: Value| v.as_object().unwrap().clone();
        let c = claims(serde_json::json!({"scope": "mcp  tools"}));
        assert_eq!(scopes(&c), HashSet::from(["mcp", "tools"]));
        let c = claims(serde_json::json!({"scp": ["mcp", 3]}));
        assert_eq!(scopes(&c), HashSet::from(["mcp"]));
        assert!(scopes(&claims(serde_json::json!({"scope": 1}))).is_empty());
    }

    #[test]
    fn a_token_stands_for_exactly_one_declared_principal() {
        let config = |claim: &str, map: &[(&str, &str)]| OAuthConfig {
            issuer: "https://login.example.com".into(),
            audience: "glovebox".into(),
            jwks: JwksSource::Url("https://login.example.com/jwks".into()),
            principal_claim: claim.into(),
            required_scopes: Vec::new(),
            tool_scopes: Default::default(),
            principal_map: map
                .iter()
                .map(|(v, p)| (v.to_string(), p.to_string()))
                .collect(),
        };
        let declared = |name: &str| ["alice", "bob"].contains(&name);
        let claims = |v: Value| v.as_object().unwrap().clone();
        let sub = config("sub", &[]);
        let c = claims(serde_json::json!({"sub": "bob"}));
        assert_eq!(claimed(&c, &sub, declared), Ok("bob"));
        let c = claims(serde_json::json!({"sub": "mallory"}));
        assert_eq!(
            claimed(&c, &sub, declared),
            Err("its `sub` names no declared principal".into())
        );
        let c = claims(serde_json::json!({"sub": 7}));
        assert!(
            claimed(&c, &sub, declared)
                .unwrap_err()
                .starts_with("no `sub` claim")
        );
        // An array: the one value that names a declared principal.
        let roles = config("roles", &[]);
        let c = claims(serde_json::json!({"roles": ["staff", "alice", 3]}));
        assert_eq!(claimed(&c, &roles, declared), Ok("alice"));
        let c = claims(serde_json::json!({"roles": ["alice", "bob"]}));
        assert!(
            claimed(&c, &roles, declared)
                .unwrap_err()
                .contains("more than one principal")
        );
        // Mapped groups: only listed values count; two leading to one
        // principal are one principal.
        let groups = config(
            "groups",
            &[("eng", "bob"), ("dev", "bob"), ("ops", "alice")],
        );
        let c = claims(serde_json::json!({"groups": ["staff", "eng", "dev", "alice"]}));
        assert_eq!(claimed(&c, &groups, declared), Ok("bob"));
        let c = claims(serde_json::json!({"groups": ["eng", "ops"]}));
        assert!(
            claimed(&c, &groups, declared)
                .unwrap_err()
                .contains("more than one principal")
        );
        let c = claims(serde_json::json!({"groups": ["staff", "alice"]}));
        assert_eq!(
            claimed(&c, &groups, declared),
            Err("no value of its `groups` is in `auth.oauth.principal_map`".into())
        );
    }
}
