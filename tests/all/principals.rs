//! Principals at the command line: `principal add`, `serve --as`, and the
//! refusal to serve a non-loopback address. The rules over MCP (tokens, two
//! agents that cannot touch each other's sessions and jobs, the ceiling, a
//! host pause) are driven by the Python SDK: `tests/mcp/test_principals.py`.

use crate::util::Site;

/// `principal add ARGS`: the token it prints.
pub(crate) fn add(site: &Site, args: &[&str]) -> String {
    let (code, out, err) = site.run(&[&["principal", "add"], args].concat());
    assert_eq!(code, 0, "principal add {args:?}: {err}");
    out.trim().to_string()
}

#[test]
fn principal_add_prints_a_token_once_and_keeps_only_its_hash() {
    let site = Site::new(false);
    let config = site.config();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("# the operator's comment\n{text}")).unwrap();

    let token = add(
        &site,
        &[
            "alice",
            "--kind",
            "agent",
            "--roles",
            "workagent,supervisor",
            "--projects",
            "demo",
            "--tags",
            "team-a",
        ],
    );
    assert!(token.starts_with("gbx_") && token.len() == 68, "{token}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        !text.contains(&token),
        "the token itself is in the config:\n{text}"
    );
    assert!(
        text.contains(&glovebox::manifest::credential_of(&token)),
        "{text}"
    );
    assert!(text.starts_with("# the operator's comment\n"), "{text}");
    // Each token is new.
    let other = add(
        &site,
        &[
            "bob",
            "--kind",
            "agent",
            "--roles",
            "workagent",
            "--projects",
            "*",
        ],
    );
    assert_ne!(token, other);

    let listed = site.json(&["principal", "list", "--json"]);
    assert_eq!(listed[0]["name"], "alice");
    assert_eq!(
        listed[0]["roles"],
        serde_json::json!(["workagent", "supervisor"])
    );
    assert_eq!(listed[0]["tags"], serde_json::json!(["team-a"]));
    assert!(!listed.to_string().contains("credential"), "{listed}");

    // In a file of its own, the owner's only.
    add(
        &site,
        &[
            "ops",
            "--kind",
            "operator",
            "--credential-file",
            "ops.sha256",
        ],
    );
    let file = site.path().join("ops.sha256");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    assert!(
        std::fs::read_to_string(&config)
            .unwrap()
            .contains("credential_file = \"ops.sha256\"")
    );

    // Refusals name what and how to fix it; the config is left as it was.
    let before = std::fs::read_to_string(&config).unwrap();
    for (args, words) in [
        (
            &[
                "alice",
                "--kind",
                "agent",
                "--roles",
                "workagent",
                "--projects",
                "demo",
            ][..],
            "already declared",
        ),
        (
            &["carol", "--kind", "agent", "--projects", "demo"][..],
            "--roles",
        ),
        (
            &["carol", "--kind", "operator", "--roles", "workagent"][..],
            "every role",
        ),
        (&["local", "--kind", "operator"][..], "built-in"),
    ] {
        let (code, _, err) = site.run(&[&["principal", "add"], args].concat());
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains(words), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
}

#[test]
fn a_non_loopback_address_is_served_only_with_principals_and_allow_remote() {
    let site = Site::new(false);
    let (code, _, err) = site.run(&["serve", "--http", "0.0.0.0:0"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("not a loopback address") && err.contains("declares no principals"),
        "{err}"
    );

    add(
        &site,
        &[
            "alice",
            "--kind",
            "agent",
            "--roles",
            "workagent",
            "--projects",
            "*",
        ],
    );
    let (code, _, err) = site.run(&["serve", "--http", "0.0.0.0:0"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("not a loopback address") && err.contains("--allow-remote"),
        "{err}"
    );
    // `--allow-remote` is a setting of HTTP only.
    let (code, _, err) = site.run(&["serve", "--allow-remote"]);
    assert_ne!(code, 0, "{err}");
}

#[test]
fn serve_as_names_a_declared_principal() {
    let site = Site::new(false);
    let (code, _, err) = site.run(&["serve", "--as", "nobody"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("no principal `nobody`") && err.contains("principal add"),
        "{err}"
    );
    add(
        &site,
        &[
            "alice",
            "--kind",
            "agent",
            "--roles",
            "workagent",
            "--projects",
            "*",
        ],
    );
    add(
        &site,
        &[
            "bob",
            "--kind",
            "agent",
            "--roles",
            "workagent",
            "--projects",
            "*",
        ],
    );
    // Two agents: which one this connection is must be said.
    let (code, _, err) = site.run(&["serve"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--as NAME") && err.contains("alice, bob"),
        "{err}"
    );
}
