//! `[auth.oauth]`: an identity provider's tokens beside the principals' own;
//! each bad entry is refused naming its key and the fix.

use super::super::{JwksSource, credential_of};
use super::{Fixture, assert_error};

fn config(oauth: &str) -> String {
    format!(
        "hooks = \"none\"\n[[principal]]\nname = \"ci\"\nkind = \"agent\"\ncredential = \"{}\"\nroles = [\"workagent\"]\nprojects = [\"demo\"]\n\n[auth.oauth]\n{oauth}",
        credential_of("token-ci")
    )
}

const ISSUER: &str =
    "issuer = \"https://login.example.com\"\naudience = \"https://gb.example.com/mcp\"\n";

#[test]
fn oauth_loads_with_a_key_set_file_or_url() {
    let fx = Fixture::new();
    fx.write("jwks.json", "{\"keys\": []}");
    let c = fx
        .host(&config(&format!(
            "{ISSUER}jwks_file = \"jwks.json\"\nrequired_scopes = [\"mcp\"]\n"
        )))
        .unwrap();
    let oauth = c.oauth.unwrap();
    assert_eq!(oauth.issuer, "https://login.example.com");
    assert_eq!(oauth.audience, "https://gb.example.com/mcp");
    assert_eq!(oauth.jwks, JwksSource::File(fx.path("jwks.json")));
    assert_eq!(oauth.principal_claim, "sub");
    assert_eq!(oauth.required_scopes, vec!["mcp".to_string()]);
    let c = fx
        .host(&config(&format!(
            "{ISSUER}jwks_url = \"http://127.0.0.1:9/jwks\"\nprincipal_claim = \"email\"\n"
        )))
        .unwrap();
    let oauth = c.oauth.unwrap();
    assert_eq!(
        oauth.jwks,
        JwksSource::Url("http://127.0.0.1:9/jwks".into())
    );
    assert_eq!(oauth.principal_claim, "email");
    assert!(oauth.principal_map.is_empty());
    let c = fx
        .host(&config(&format!(
            "{ISSUER}jwks_file = \"jwks.json\"\nprincipal_claim = \"groups\"\n[auth.oauth.principal_map]\n\"eng-agents\" = \"ci\"\n"
        )))
        .unwrap();
    let oauth = c.oauth.unwrap();
    assert_eq!(oauth.principal_claim, "groups");
    assert_eq!(
        oauth.principal_map,
        [("eng-agents".to_string(), "ci".to_string())].into()
    );
    assert!(fx.host("hooks = \"none\"\n").unwrap().oauth.is_none());
}

#[test]
fn bad_oauth_entries_are_refused_naming_the_key() {
    let fx = Fixture::new();
    let file = fx.path("glovebox.toml");
    fx.write("jwks.json", "{\"keys\": []}");
    let cases: &[(&str, &str, &[&str])] = &[
        (ISSUER, "auth.oauth.issuer", &["no key set", "jwks_url"]),
        (
            "issuer = \"https://a\"\naudience = \"x\"\njwks_url = \"http://keys.example.com/jwks\"\n",
            "auth.oauth.jwks_url",
            &["not an https URL"],
        ),
        (
            "issuer = \"https://a\"\naudience = \"x\"\njwks_url = \"https://k/j\"\njwks_file = \"jwks.json\"\n",
            "auth.oauth.jwks_file",
            &["keep one of them"],
        ),
        (
            "issuer = \"https://a\"\naudience = \"x\"\njwks_file = \"missing.json\"\n",
            "auth.oauth.jwks_file",
            &["not found"],
        ),
        (
            "issuer = \"login\"\naudience = \"x\"\njwks_file = \"jwks.json\"\n",
            "auth.oauth.issuer",
            &["not an http(s) URL"],
        ),
        (
            "issuer = \"https://a\"\naudience = \"\"\njwks_file = \"jwks.json\"\n",
            "auth.oauth.audience",
            &["not an audience"],
        ),
        (
            "issuer = \"https://a\"\naudience = \"x\"\njwks_file = \"jwks.json\"\nrequired_scopes = [\"a b\"]\n",
            "auth.oauth.required_scopes",
            &["not a scope"],
        ),
    ];
    for (oauth, key, words) in cases {
        assert_error(&fx.host_error(&config(oauth)), &file, key, words);
    }
    // A claim value may stand only for a declared principal.
    assert_error(
        &fx.host_error(&config(&format!(
            "{ISSUER}jwks_file = \"jwks.json\"\nprincipal_claim = \"groups\"\n[auth.oauth.principal_map]\neng = \"mallory\"\n"
        ))),
        &file,
        "auth.oauth.principal_map.eng",
        &["`mallory` is no declared principal", "(ci)", "principal add mallory"],
    );
    // Tokens must name a declared principal: without any, nothing could pass.
    assert_error(
        &fx.host_error(&format!(
            "hooks = \"none\"\n[auth.oauth]\n{ISSUER}jwks_file = \"jwks.json\"\n"
        )),
        &file,
        "auth.oauth.issuer",
        &["declares none", "principal add"],
    );
}

#[test]
fn the_key_set_file_is_glovebox_s_own() {
    let fx = Fixture::new();
    let jwks = fx.write("keys/jwks.json", "{\"keys\": []}");
    let c = fx
        .host(&config(&format!(
            "{ISSUER}jwks_file = \"keys/jwks.json\"\n"
        )))
        .unwrap();
    let jwks = jwks.canonicalize().unwrap();
    assert!(
        c.owned_paths()
            .iter()
            .any(|o| o.path == jwks && o.what.contains("OAuth key set"))
    );
}

#[test]
fn under_oauth_a_principal_may_have_no_credential_of_its_own() {
    let fx = Fixture::new();
    fx.write("jwks.json", "{\"keys\": []}");
    let text = format!(
        "hooks = \"none\"\n[[principal]]\nname = \"sso\"\nkind = \"operator\"\n\n[auth.oauth]\n{ISSUER}jwks_file = \"jwks.json\"\n"
    );
    let c = fx.host(&text).unwrap();
    assert_eq!(c.principals[0].principal.name, "sso");
    // No static token is its: not even an empty one.
    for token in ["", "anything"] {
        assert!(super::super::authenticate(&c.principals, token).is_none());
        assert!(!c.principals[0].accepts(token));
    }
    // Without `[auth.oauth]` it still needs one.
    let text = "hooks = \"none\"\n[[principal]]\nname = \"sso\"\nkind = \"operator\"\n";
    assert_error(
        &fx.host_error(text),
        &fx.path("glovebox.toml"),
        "principal[0].name",
        &["has no credential"],
    );
}
