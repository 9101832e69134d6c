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

/// `principal add NAME --kind agent --roles workagent --projects PROJECTS`:
/// the agent most tests declare. Its token.
pub(crate) fn add_agent(site: &Site, name: &str, projects: &str) -> String {
    add(
        site,
        &[
            name,
            "--kind",
            "agent",
            "--roles",
            "workagent",
            "--projects",
            projects,
        ],
    )
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
    let other = add_agent(&site, "bob", "*");
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

    add_agent(&site, "alice", "*");
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
    add_agent(&site, "alice", "*");
    add_agent(&site, "bob", "*");
    // Two agents: which one this connection is must be said.
    let (code, _, err) = site.run(&["serve"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--as NAME") && err.contains("alice, bob"),
        "{err}"
    );
}

// Threat 56: a grant over the file holding a principal's credential would let
// an agent write an operator's hash and be that operator after the next
// reload. Such a config is refused at load (every command, `serve`) and by
// `reload` on a running server, which keeps serving the config it had.
#[test]
fn threat_56_a_grant_over_a_credential_file_is_refused_at_load_and_by_reload() {
    let files = |dir: &str| {
        format!(
            "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"{dir}\"\nguest = \"/data\"\naccess = \"read-write\"\n",
            crate::util::plugins::TOOL_FILES
        )
    };
    let site = Site::with_plugins(&[("files.toml", files("work"))]);
    std::fs::create_dir(site.path().join("work")).unwrap();
    std::fs::create_dir(site.path().join("keys")).unwrap();
    add(
        &site,
        &[
            "ops",
            "--kind",
            "operator",
            "--credential-file",
            "keys/ops.sha256",
        ],
    );
    let mut server = crate::mcp::Server::initialized(&site.config(), &["--as", "ops"]);

    // The grant moves over the credential file's directory.
    std::fs::write(site.path().join("files.toml"), files("keys")).unwrap();
    let keys = std::fs::canonicalize(site.path().join("keys")).unwrap();
    let says = |err: &str| {
        assert!(
            err.contains(&format!(
                "granted directory `{}` contains the credential file of principal `ops` `{}`",
                keys.display(),
                keys.join("ops.sha256").display()
            )),
            "{err}"
        );
        assert!(
            err.contains("point `principal[0].credential_file` at it"),
            "{err}"
        );
    };
    let (code, _, err) = site.run(&["reload"]);
    assert_eq!(code, 2, "{err}");
    says(&err);
    assert!(err.contains("keeps serving the config it had"), "{err}");
    let answer = server.call(1, "session_list", serde_json::json!({}));
    assert!(answer["result"].is_object(), "{answer}");
    drop(server);

    // Loaded anew, it is refused too: no command and no server starts on it.
    let (code, _, err) = site.run(&["serve"]);
    assert_ne!(code, 0);
    says(&err);
    let (code, _, err) = site.run(&["session", "list"]);
    assert_ne!(code, 0);
    says(&err);
}

/// The fleet's registry: `principal add` with a card (model, version,
/// owner, description) writes it to the config, `principal list` shows
/// it, and every session the principal starts records it in its first
/// event, so a change of model shows in the logs. A blank field is
/// refused, naming its flag.
#[test]
fn a_principals_card_is_listed_and_recorded_in_the_sessions_it_starts() {
    let site = Site::new(false);
    add(
        &site,
        &[
            "scorer",
            "--kind",
            "agent",
            "--roles",
            "workagent",
            "--projects",
            "scoring",
            "--model",
            "m-large-2026-10",
            "--agent-version",
            "3.1",
            "--owner",
            "data-team",
            "--description",
            "scores inbound leads",
        ],
    );
    let listed = site.json(&["principal", "list", "--json"]);
    let scorer = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "scorer")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(scorer["card"]["model"], "m-large-2026-10", "{scorer}");
    assert_eq!(scorer["card"]["version"], "3.1", "{scorer}");
    assert_eq!(scorer["card"]["owner"], "data-team", "{scorer}");
    let (code, text, err) = site.run(&["principal", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("model=m-large-2026-10\tversion=3.1\towner=data-team"),
        "{text}"
    );

    let mut server = crate::mcp::Server::initialized(&site.config(), &["--as", "scorer"]);
    let started = server.ok(
        1,
        "session_start",
        serde_json::json!({"role": "workagent", "project": "scoring", "name": "leads"}),
    );
    assert_eq!(started["agent"]["model"], "m-large-2026-10", "{started}");
    let log = server.ok(2, "session_log", serde_json::json!({"session": "leads"}));
    let first = &log["events"][0]["kind"];
    assert_eq!(first["type"], "session_started", "{first}");
    assert_eq!(first["agent"]["model"], "m-large-2026-10", "{first}");
    assert_eq!(
        first["agent"]["description"], "scores inbound leads",
        "{first}"
    );
    drop(server);

    let (code, _, err) = site.run(&[
        "principal",
        "add",
        "blank",
        "--kind",
        "agent",
        "--roles",
        "workagent",
        "--projects",
        "p",
        "--model",
        " ",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("--model"), "{err}");
}
