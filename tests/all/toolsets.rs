//! Toolsets and read-only agents over the real binary (`glovebox serve` on
//! stdio, `glovebox call`, `glovebox tools`): a principal or role given
//! `[[toolset]]`s is listed and let call only their tools, a read-only
//! principal or session only tools annotated read-only, and a config that
//! names a toolset it does not declare is refused.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::mcp::Server;
use crate::util::plugins;

/// A config with echo, text and files (reading and listing annotated
/// read-only, writing into `work/`), no hooks, and `extra` appended.
fn config(dir: &Path, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("work")).unwrap();
    std::fs::write(dir.join("work/notes.txt"), "kept").unwrap();
    let path = dir.join("glovebox.toml");
    std::fs::write(
        &path,
        format!(
            "data_dir = \"data\"\nhooks = \"none\"\n[runtime]\n{}\n[[plugin]]\nmanifest = \"echo.toml\"\n[[plugin]]\nmanifest = \"text.toml\"\n[[plugin]]\nmanifest = \"files.toml\"\n{extra}",
            crate::util::cache_keys(),
        ),
    )
    .unwrap();
    for (name, component, more) in [
        ("echo", plugins::TOOL_ECHO, ""),
        ("text", plugins::TOOL_TEXT, ""),
        (
            "files",
            plugins::TOOL_FILES,
            "[[fs]]\nhost = \"work\"\nguest = \"/data\"\naccess = \"read-write\"\n[tools.read]\nread_only = true\n[tools.list]\nread_only = true\n",
        ),
    ] {
        std::fs::write(
            dir.join(format!("{name}.toml")),
            format!("name = \"{name}\"\ncomponent = \"{component}\"\n{more}"),
        )
        .unwrap();
    }
    path
}

/// A `[[principal]]` agent `name` (workagent and supervisor, any project)
/// with `more` keys.
fn agent(name: &str, more: &str) -> String {
    format!(
        "[[principal]]\nname = \"{name}\"\nkind = \"agent\"\ncredential = \"{}\"\nroles = [\"workagent\", \"supervisor\"]\nprojects = [\"*\"]\n{more}\n",
        glovebox::manifest::credential_of(&format!("token-{name}"))
    )
}

/// The plugin tools of a `tools/list` answer, sorted, and whether the
/// built-in `session_start` is there.
fn listed(server: &mut Server, id: u64) -> (Vec<String>, bool) {
    let list = server.request(id, "tools/list", json!({}));
    let tools = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"));
    let names: Vec<String> = tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    let mut plugin: Vec<String> = names.iter().filter(|n| n.contains('.')).cloned().collect();
    plugin.sort();
    (plugin, names.iter().any(|n| n == "session_start"))
}

/// The JSON-RPC error of a refused `tools/call`: (kind, message).
fn rpc_refusal(answer: &Value) -> (String, String) {
    let error = &answer["error"];
    assert!(error.is_object(), "not refused as a bad request: {answer}");
    (
        error["data"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        error["message"].as_str().unwrap().to_string(),
    )
}

/// The kinds of the events of the bound session's log.
fn logged_kinds(server: &mut Server, id: u64) -> Vec<String> {
    let log = server.ok(id, "session_log", json!({}));
    log["events"]
        .as_array()
        .unwrap_or_else(|| panic!("{log}"))
        .iter()
        .map(|e| e["kind"]["type"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_principal_with_a_toolset_sees_and_calls_only_its_tools() {
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "[[toolset]]\nname = \"readers\"\ntools = [\"text.*\", \"files.read\"]\n[[toolset]]\nname = \"writers\"\ntools = [\"files.write\"]\n{}{}",
        agent("reader", "toolsets = [\"readers\"]"),
        agent("everyone", ""),
    );
    let config = config(dir.path(), &extra);

    let mut server = Server::initialized(&config, &["--as", "reader"]);
    let (tools, builtins) = listed(&mut server, 1);
    assert_eq!(
        tools,
        [
            "files.read",
            "text.lower",
            "text.reverse",
            "text.upper",
            "text.word-count"
        ],
        "only the toolset's tools are listed"
    );
    assert!(builtins, "the built-in session tools stay");

    let upper = server.ok(2, "text.upper", json!({"text": "ok"}));
    assert_eq!(upper["text"], "OK");

    // A tool of another toolset: refused as an unknown tool is, naming the
    // principal's toolsets, the one that lists it and who gives it.
    let (kind, message) = rpc_refusal(&server.call(
        3,
        "files.write",
        json!({"path": "/data/notes.txt", "content": "lost"}),
    ));
    assert_eq!(kind, "not_offered", "{message}");
    for words in ["`readers`", "`writers`", "[[principal]]", "operator"] {
        assert!(message.contains(words), "{words} in: {message}");
    }
    // A tool no toolset lists says so.
    let (_, message) = rpc_refusal(&server.call(4, "echo.echo", json!({"message": "hi"})));
    assert!(message.contains("no `[[toolset]]` lists it"), "{message}");
    // Nor through a job.
    let (kind, message) = server.refused(
        5,
        "job_spawn",
        json!({"tool": "files.write", "input": {"path": "/data/notes.txt", "content": "lost"}}),
    );
    assert!(message.contains("not offered"), "{kind}: {message}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("work/notes.txt")).unwrap(),
        "kept"
    );
    // Nothing of the refused calls reached the log: only the call that ran.
    let kinds = logged_kinds(&mut server, 6);
    assert_eq!(
        kinds.iter().filter(|k| *k == "call_requested").count(),
        1,
        "{kinds:?}"
    );
    drop(server);

    // A principal without toolsets sees every tool, as before.
    let mut server = Server::initialized(&config, &["--as", "everyone"]);
    let (tools, _) = listed(&mut server, 1);
    assert_eq!(tools.len(), 9, "{tools:?}");
}

#[test]
fn a_roles_toolset_narrows_every_session_of_the_role_on_every_surface() {
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "[[toolset]]\nname = \"echoes\"\ntools = [\"echo.*\"]\n[role.workagent]\ntoolsets = [\"echoes\"]\n{}",
        agent("worker", ""),
    );
    let config = config(dir.path(), &extra);

    let mut server = Server::initialized(&config, &["--as", "worker"]);
    // Before any session: the default session's role (workagent).
    assert_eq!(listed(&mut server, 1).0, ["echo.echo"]);
    let (kind, message) = rpc_refusal(&server.call(2, "text.upper", json!({"text": "x"})));
    assert_eq!(kind, "not_offered");
    assert!(
        message.contains("`[role.workagent] toolsets`") && message.contains("`echoes`"),
        "{message}"
    );
    // A supervisor session is not narrowed.
    server.ok(
        3,
        "session_start",
        json!({"role": "supervisor", "project": "p", "name": "boss"}),
    );
    assert_eq!(listed(&mut server, 4).0.len(), 9);
    assert_eq!(
        server.ok(5, "text.upper", json!({"text": "x"}))["text"],
        "X"
    );
    drop(server);

    // The operator's `glovebox call` in a workagent session is held to the
    // role's toolsets too.
    let glovebox = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_glovebox"))
            .env_remove("GLOVEBOX_CONFIG")
            .arg("--config")
            .arg(&config)
            .args(args)
            .output()
            .unwrap()
    };
    let started = glovebox(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "p",
        "--name",
        "cli-work",
    ]);
    assert!(started.status.success(), "{started:?}");
    let refused = glovebox(&[
        "call",
        "text.upper",
        "--input",
        "{\"text\": \"x\"}",
        "--session",
        "cli-work",
    ]);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr).to_string()
        + &String::from_utf8_lossy(&refused.stdout);
    assert!(said.contains("is not offered here"), "{said}");
    let ran = glovebox(&[
        "call",
        "echo.echo",
        "--input",
        "{\"message\": \"x\"}",
        "--session",
        "cli-work",
    ]);
    assert!(ran.status.success(), "{ran:?}");
}

#[test]
fn a_read_only_principal_sees_only_read_only_tools_and_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &agent("auditor", "read_only = true"));

    let mut server = Server::initialized(&config, &["--as", "auditor"]);
    let list = server.request(1, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    let plugin: Vec<&Value> = tools
        .iter()
        .filter(|t| t["name"].as_str().unwrap().contains('.'))
        .collect();
    let names: Vec<&str> = plugin.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["files.list", "files.read"], "{list}");
    assert!(
        plugin
            .iter()
            .all(|t| t["annotations"]["readOnlyHint"] == json!(true)),
        "{list}"
    );

    let read = server.ok(2, "files.read", json!({"path": "/data/notes.txt"}));
    assert_eq!(read["content"], "kept");
    let (kind, message) = rpc_refusal(&server.call(
        3,
        "files.write",
        json!({"path": "/data/notes.txt", "content": "lost"}),
    ));
    assert_eq!(kind, "not_offered");
    assert!(
        message.contains("principal `auditor` is read-only") && message.contains("`[tools.write]`"),
        "{message}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("work/notes.txt")).unwrap(),
        "kept"
    );
    // A session it starts is read-only, whatever it asks.
    let started = server.ok(
        4,
        "session_start",
        json!({"role": "workagent", "project": "p", "read_only": false}),
    );
    assert_eq!(started["read_only"], true, "{started}");
}

#[test]
fn a_read_only_sessions_children_are_read_only_and_it_is_never_lifted() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &agent("worker", ""));

    let mut server = Server::initialized(&config, &["--as", "worker"]);
    assert_eq!(listed(&mut server, 1).0.len(), 9);
    let started = server.ok(
        2,
        "session_start",
        json!({"role": "supervisor", "project": "p", "name": "careful", "read_only": true}),
    );
    assert_eq!(started["read_only"], true, "{started}");
    assert_eq!(listed(&mut server, 3).0, ["files.list", "files.read"]);
    let (_, message) = rpc_refusal(&server.call(
        4,
        "files.write",
        json!({"path": "/data/notes.txt", "content": "lost"}),
    ));
    assert!(message.contains("this session is read-only"), "{message}");

    // Its child is read-only though the spawn does not ask.
    let spawned = server.ok(
        5,
        "session_spawn",
        json!({"role": "workagent", "name": "kid", "objective": "look around"}),
    );
    assert_eq!(spawned["child"]["read_only"], true, "{spawned}");
    server.ok(6, "session_resume", json!({"session": "kid"}));
    assert_eq!(listed(&mut server, 7).0, ["files.list", "files.read"]);
    let (kind, _) = rpc_refusal(&server.call(
        8,
        "files.write",
        json!({"path": "/data/notes.txt", "content": "lost"}),
    ));
    assert_eq!(kind, "not_offered");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("work/notes.txt")).unwrap(),
        "kept"
    );
    // Resumed again, the parent is still read-only.
    let resumed = server.ok(9, "session_resume", json!({"session": "careful"}));
    assert_eq!(resumed["state"]["read_only"], true, "{resumed}");
}

#[test]
fn a_config_naming_an_unknown_toolset_or_tool_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tools = |config: &Path| {
        Command::new(env!("CARGO_BIN_EXE_glovebox"))
            .env_remove("GLOVEBOX_CONFIG")
            .arg("--config")
            .arg(config)
            .arg("tools")
            .output()
            .unwrap()
    };
    let config = config(dir.path(), &agent("worker", "toolsets = [\"readerz\"]"));
    let out = tools(&config);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("principal[0].toolsets") && err.contains("`readerz` is no declared toolset"),
        "{err}"
    );

    // A pattern that names no loaded tool is refused when the plugins load.
    let config = self::config(
        dir.path(),
        "[[toolset]]\nname = \"readers\"\ntools = [\"files.raed\"]\n",
    );
    let out = tools(&config);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("toolset[0].tools") && err.contains("`files.raed`"),
        "{err}"
    );
}

#[test]
fn principal_add_gives_toolsets_and_read_only_and_refuses_an_undeclared_toolset() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        "[[toolset]]\nname = \"readers\"\ntools = [\"files.read\"]\n",
    );
    let glovebox = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_glovebox"))
            .env_remove("GLOVEBOX_CONFIG")
            .arg("--config")
            .arg(&config)
            .args(args)
            .output()
            .unwrap()
    };
    let agent = ["--kind", "agent", "--roles", "workagent", "--projects", "p"];
    let added = glovebox(
        &[
            &["principal", "add", "scout"][..],
            &agent,
            &["--toolsets", "readers", "--read-only"],
        ]
        .concat(),
    );
    assert!(added.status.success(), "{added:?}");
    let listed = glovebox(&["principal", "list"]);
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(text.contains("\ttoolsets=readers\tread-only"), "{text}");
    let json = glovebox(&["principal", "list", "--json"]);
    let json: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json[0]["toolsets"], json!(["readers"]));
    assert_eq!(json[0]["read_only"], true);

    // An undeclared toolset: the config is left as it was.
    let before = std::fs::read_to_string(&config).unwrap();
    let refused = glovebox(
        &[
            &["principal", "add", "other"][..],
            &agent,
            &["--toolsets", "writers"],
        ]
        .concat(),
    );
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("`writers` is no declared toolset"), "{err}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
}

#[test]
fn over_http_a_principals_toolset_narrows_its_list_its_calls_and_its_jobs() {
    let site = crate::util::Site::with_config(
        "[[toolset]]\nname = \"echoes\"\ntools = [\"echo.*\"]\n",
        &[
            (
                "sleep.toml",
                format!(
                    "name = \"sleep\"\ncomponent = \"{}\"\n",
                    plugins::HOSTILE_SLEEP
                ),
            ),
            (
                "echo.toml",
                format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
            ),
        ],
    );
    let token = crate::principals::add(
        &site,
        &[
            "bob",
            "--kind",
            "agent",
            "--roles",
            "workagent",
            "--projects",
            "*",
            "--toolsets",
            "echoes",
        ],
    );
    let (mut child, addr, _log) = crate::http_limits::serve_logged(&site, &[]);
    let session = crate::identity::open_session(&addr, Some(&token));
    let list = crate::tasks::rpc(&addr, &token, &session, "tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"echo.echo"), "{names:?}");
    assert!(!names.contains(&"sleep.sleep"), "{names:?}");
    assert!(names.contains(&"job_spawn"), "{names:?}");

    let call = |tool: &str, args: Value| {
        crate::identity::call(&addr, Some(&token), &session, tool, args).unwrap()
    };
    let refused = call("sleep.sleep", json!({"seconds": 0}));
    let (kind, message) = rpc_refusal(&refused);
    assert_eq!(kind, "not_offered");
    assert!(message.contains("`echoes`"), "{message}");
    let job = call(
        "job_spawn",
        json!({"tool": "sleep.sleep", "input": {"seconds": 0}}),
    );
    assert_eq!(job["result"]["isError"], true, "{job}");
    assert!(job.to_string().contains("not offered here"), "{job}");
    let echoed = call("echo.echo", json!({"message": "hi"}));
    assert_eq!(echoed["result"]["isError"], false, "{echoed}");
    let _ = child.kill();
    let _ = child.wait();
}
