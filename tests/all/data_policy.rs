//! Hooks that know the caller, over the real binary: the 0.2.0 hook world's
//! request names the principal and the session's project, and the example
//! data-policy hook keeps one agent out of another project's tools and paths
//! (issue 42's "Outreach cannot read Scoring's data"); policy replay judges
//! each recorded call as the principal the log names. A hook built against
//! the 0.1.0 world still loads and judges beside a 0.2.0 one.

use serde_json::{Value, json};

use crate::mcp::Server;
use crate::principals::add_agent;
use crate::util::{Site, plugins};

/// Serves `files` (read-write over `work/`, as `/data`) and `echo`, judged by
/// the hooks in `hooks` (TOML `[[hook]]` tables).
fn site(hooks: &str) -> Site {
    let site = Site::with_config(
        hooks,
        &[
            (
                "files.toml",
                format!(
                    "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nhost = \"work\"\nguest = \"/data\"\naccess = \"read-write\"\n",
                    plugins::TOOL_FILES
                ),
            ),
            (
                "echo.toml",
                format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
            ),
        ],
    );
    for dir in ["work/scoring", "work/outreach"] {
        std::fs::create_dir_all(site.path().join(dir)).unwrap();
    }
    site
}

/// Scoring owns `/data/scoring`; outreach owns `/data/outreach` and the
/// echo tool; each agent works in its own project.
fn data_policy() -> String {
    format!(
        "[[hook]]\nname = \"data-policy\"\ncomponent = \"{}\"\n\
         [hook.settings.projects.scoring]\npaths = [\"/data/scoring\"]\n\
         [hook.settings.projects.outreach]\npaths = [\"/data/outreach\"]\ntools = [\"echo.*\"]\n\
         [hook.settings.principals]\nscorer = [\"scoring\"]\nreacher = [\"outreach\"]\n",
        plugins::HOOK_DATA_POLICY
    )
}

/// The hook and reason of a denied call's answer.
fn denied(answer: &Value) -> (String, String) {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let denied = &answer["result"]["structuredContent"]["denied"];
    (
        denied["hook"].as_str().unwrap_or_default().to_string(),
        denied["reason"].as_str().unwrap_or_default().to_string(),
    )
}

/// An agent's connection with a session started in `project`.
fn agent(site: &Site, name: &str, project: &str) -> Server {
    let mut server = Server::initialized(&site.config(), &["--as", name]);
    server.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": project, "name": format!("{name}-work")}),
    );
    server
}

#[test]
fn a_data_policy_hook_keeps_one_principal_out_of_another_projects_tools_and_paths() {
    let site = site(&data_policy());
    add_agent(&site, "scorer", "scoring");
    add_agent(&site, "reacher", "outreach");

    // One server per agent in turn: a data dir is one process's.
    {
        let mut scorer = agent(&site, "scorer", "scoring");
        let q3 = json!({"path": "/data/scoring/q3.csv", "content": "acme,0.93\n"});
        scorer.ok(2, "files.write", q3);
        // Echo is outreach's tool.
        let (hook, reason) = denied(&scorer.call(3, "echo.echo", json!({"message": "hi"})));
        assert_eq!(hook, "data-policy");
        assert_eq!(
            reason,
            "echo.echo belongs to outreach, and principal `scorer` does not work there"
        );
        let read = scorer.ok(4, "files.read", json!({"path": "/data/scoring/q3.csv"}));
        assert!(read.to_string().contains("acme,0.93"), "{read}");
    }
    {
        let mut reacher = agent(&site, "reacher", "outreach");
        reacher.ok(
            2,
            "files.write",
            json!({"path": "/data/outreach/leads.csv", "content": "acme\n"}),
        );
        reacher.ok(3, "echo.echo", json!({"message": "hi"}));
        // Scoring's data, by its path or by a detour, is not outreach's to read.
        for (id, path) in [
            (4, "/data/scoring/q3.csv"),
            (5, "/data/outreach/../scoring/q3.csv"),
            (6, "/data/SCORING/q3.csv"),
        ] {
            let (hook, reason) = denied(&reacher.call(id, "files.read", json!({"path": path})));
            assert_eq!(hook, "data-policy");
            assert_eq!(
                reason,
                format!(
                    "`{path}` (input `path`) is data of scoring, and principal `reacher` does not work there"
                )
            );
        }
    }
    // The file is untouched by the refused reads.
    assert_eq!(
        std::fs::read_to_string(site.path().join("work/scoring/q3.csv")).unwrap(),
        "acme,0.93\n"
    );

    // Replayed, every recorded call is judged as the principal the log
    // names, so no verdict changes (as anyone else, all would be denied).
    for session in ["reacher-work", "scorer-work"] {
        let report = site.json(&["policy", "replay", "--session", session, "--json"]);
        assert!(report["calls"].as_u64().unwrap() >= 3, "{report}");
        assert_eq!(report["changes"], json!([]), "{session}: {report}");
    }
}

#[test]
fn a_hook_of_the_older_world_still_judges_beside_a_new_one() {
    let hooks = format!(
        "{}[[hook]]\nname = \"old\"\ncomponent = \"{}\"\n[hook.settings]\ndeny = [\"files.read\"]\n",
        data_policy(),
        plugins::COMPAT_HOOK_V0_1
    );
    let site = site(&hooks);
    add_agent(&site, "reacher", "outreach");
    let mut reacher = agent(&site, "reacher", "outreach");
    // The new hook allows outreach's own tool; the old one has no objection.
    reacher.ok(2, "echo.echo", json!({"message": "hi"}));
    // The new hook allows reading outreach's data; the old one denies the tool.
    let (hook, reason) =
        denied(&reacher.call(3, "files.read", json!({"path": "/data/outreach/leads.csv"})));
    assert_eq!(hook, "old");
    assert!(
        reason.starts_with("a 0.1.0 hook denies files.read (session s-"),
        "{reason}"
    );
    assert!(reason.ends_with(", role workagent)"), "{reason}");

    // `hook test` judges with either world.
    let (code, out, err) = site.run(&[
        "hook",
        "test",
        "data-policy",
        "--request",
        r#"{"action": "x", "tool": "files.read", "principal": "scorer", "input": {"path": "/data/outreach/a"}}"#,
    ]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("is data of outreach"), "{out}");
    let (code, out, err) = site.run(&[
        "hook",
        "test",
        plugins::COMPAT_HOOK_V0_1,
        "--request",
        r#"{"action": "x", "tool": "echo.echo"}"#,
        "--settings",
        r#"{"deny": ["files.read"]}"#,
    ]);
    assert_eq!(code, 0, "{out}{err}");
}
