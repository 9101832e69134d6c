//! A workspace per agent (issue 42): two workagent sessions edit one git
//! repository through one files plugin at the same time, each in its own
//! worktree on its own branch; a completed end commits each; the operator
//! merges one branch into the base and the other's merge is refused with
//! the conflicting path, the repository left clean. Real `git`, real
//! binary, a real server holding the data dir.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::util::{Site, plugins};

/// `git -C dir ARGS` as a person would run it: its stdout, asserted to succeed.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=Operator",
            "-c",
            "user.email=op@example.com",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A repository on branch `main` with `app.txt` committed, at `dir/repo`.
pub(crate) fn repository(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    std::fs::write(repo.join("app.txt"), "base\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "the base"]);
    repo
}

/// Session `id`'s worktree of workspace `name` (repository `repo` of the
/// site), made with git as the host makes it on the session's first call
/// (for tests of the surfaces, which need trees without a plugin's call).
pub(crate) fn tree_as_the_host_makes_it(site: &Site, name: &str, id: &str) {
    let tree = site.path().join("data/workspaces").join(name).join(id);
    std::fs::create_dir_all(tree.parent().unwrap()).unwrap();
    git(
        &site.path().join("repo"),
        &[
            "worktree",
            "add",
            "--quiet",
            "--track",
            "-b",
            &format!("glovebox/{id}"),
            tree.to_str().unwrap(),
            "main",
        ],
    );
}

/// A site whose files plugin's only grant is the workspace `app` (a
/// repository beside the data dir) at `/work`.
fn site() -> (Site, PathBuf) {
    let files = format!(
        "name = \"files\"\ncomponent = \"{}\"\n[[fs]]\nworkspace = \"app\"\nguest = \"/work\"\naccess = \"read-write\"\n",
        plugins::TOOL_FILES
    );
    let site = Site::with_plugins(&[("files.toml", files)]);
    let repo = repository(site.path());
    site.set_config("[[workspace]]\nname = \"app\"\nrepo = \"repo\"\n");
    (site, repo)
}

fn id_of(state: &Value) -> String {
    state["id"]
        .as_str()
        .or(state["header"]["id"].as_str())
        .unwrap_or_else(|| panic!("no session id in {state}"))
        .to_string()
}

/// `files.write` of `content` at `path` in `session`, through the command line.
fn write(site: &Site, session: &str, path: &str, content: &str) -> (i32, String, String) {
    let input = json!({"path": path, "content": content}).to_string();
    site.run(&[
        "call",
        "files.write",
        "--session",
        session,
        "--input",
        &input,
    ])
}

#[test]
fn two_agents_edit_one_repository_each_in_its_own_worktree_and_the_operator_merges() {
    let (site, repo) = site();
    // A server holds the data dir; the command line reaches it.
    let _server = crate::mcp::Server::initialized(&site.config(), &[]);
    site.wait_for_control_socket();
    let alice = id_of(&site.start_workagent("alice"));
    let bob = id_of(&site.start_workagent("bob"));

    // Outside a session the plugin has no tree to work in.
    let input = json!({"path": "/work/app.txt", "content": "nobody\n"}).to_string();
    let (code, _, err) = site.run(&["call", "files.write", "--input", &input]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("in no session"), "{err}");

    // Both sessions, two calls each, all at once: each session's first
    // calls make its tree (once), and each writes `app.txt` its own way.
    std::thread::scope(|s| {
        let mut calls = Vec::new();
        for (name, text) in [("alice", "alice was here\n"), ("bob", "bob was here\n")] {
            let site = &site;
            calls.push(s.spawn(move || write(site, name, "/work/app.txt", text)));
            calls.push(s.spawn(move || write(site, name, &format!("/work/{name}.txt"), "notes\n")));
        }
        for call in calls {
            let (code, out, err) = call.join().unwrap();
            assert_eq!(code, 0, "{out}{err}");
        }
    });

    let trees = site.path().join("data/workspaces/app");
    let (alice_tree, bob_tree) = (trees.join(&alice), trees.join(&bob));
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(alice_tree.join("app.txt")), "alice was here\n");
    assert_eq!(read(bob_tree.join("app.txt")), "bob was here\n");
    assert!(!alice_tree.join("bob.txt").exists());
    assert!(!bob_tree.join("alice.txt").exists());
    // The operator's repository is untouched until a merge.
    assert_eq!(read(repo.join("app.txt")), "base\n");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert_eq!(
        git(&repo, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );

    let listed = site.json(&["workspace", "list", "--json"]);
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 2, "{listed:?}");
    for tree in listed {
        assert_eq!(tree["workspace"], "app");
        assert_eq!(tree["base"], "main");
        assert_eq!(tree["uncommitted"], 2, "{tree}");
        assert_eq!(tree["changed"], true, "{tree}");
    }

    // A handoff is a unit of work: alice's is committed with its objective.
    let (code, _, err) = site.run(&[
        "session",
        "handoff",
        "alice",
        "--kind",
        "workagent_completion",
        "--objective",
        "make app.txt name its author",
    ]);
    assert_eq!(code, 0, "{err}");
    let unit = git(
        &repo,
        &["log", "-1", "--format=%B", &format!("glovebox/{alice}")],
    );
    assert!(unit.contains("Glovebox-Unit: handoff"), "{unit}");
    for name in ["alice", "bob"] {
        let (code, _, err) = site.run(&["session", "end", name, "--outcome", "completed"]);
        assert_eq!(code, 0, "{name}: {err}");
    }
    for (id, objective) in [(&alice, "make app.txt name its author"), (&bob, "bob")] {
        let branch = format!("glovebox/{id}");
        let message = git(&repo, &["log", "-1", "--format=%an <%ae>%n%B", &branch]);
        assert!(
            message.starts_with("Glovebox <glovebox@localhost>"),
            "{message}"
        );
        assert!(message.contains(objective), "{message}");
        assert!(
            message.contains(&format!("Glovebox-Session: {id}")),
            "{message}"
        );
        let files = git(&repo, &["show", "--name-only", "--format=", &branch]);
        assert!(files.contains("app.txt"), "{files}");
    }
    assert_eq!(read(repo.join("app.txt")), "base\n");

    // The operator merges alice's branch: her content is on main, her tree gone.
    let merged = site.json(&["workspace", "merge", "alice"]);
    assert_eq!(merged[0]["branch"], format!("glovebox/{alice}"), "{merged}");
    assert_eq!(read(repo.join("app.txt")), "alice was here\n");
    assert_eq!(git(&repo, &["show", "main:app.txt"]), "alice was here\n");
    assert!(!alice_tree.exists());
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");

    // Bob's conflicts: refused, naming the path; nothing half-done.
    let head = git(&repo, &["rev-parse", "main"]);
    let (code, out, err) = site.run(&["workspace", "merge", "bob"]);
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("conflicts in app.txt"), "{err}");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert!(!repo.join(".git/MERGE_HEAD").exists());
    assert_eq!(git(&repo, &["rev-parse", "main"]), head);
    assert_eq!(read(repo.join("app.txt")), "alice was here\n");
    assert!(bob_tree.exists(), "a refused merge keeps the tree");

    // Abandoned: bob's tree and branch go.
    let (code, _, err) = site.run(&["workspace", "abandon", "bob"]);
    assert_eq!(code, 0, "{err}");
    assert!(!bob_tree.exists());
    let branches = git(&repo, &["branch", "--list"]);
    assert!(!branches.contains(&bob), "{branches}");
    assert!(
        branches.contains(&alice),
        "a merged branch is kept: {branches}"
    );
    let listed = site.json(&["workspace", "list", "--json"]);
    assert_eq!(listed, json!([]));
}

/// The dashboard's Workspaces page lists the sessions' trees and its
/// buttons run the same operations: one branch merged, the other's merge
/// refused with its conflicting path shown, then abandoned.
#[test]
fn the_dashboard_merges_one_branch_and_shows_the_others_conflict() {
    use crate::dashboard::{bearer, http, serve};
    let (site, repo) = site();
    let (code, token, err) = site.run(&["principal", "add", "ops", "--kind", "operator"]);
    assert_eq!(code, 0, "{err}");
    let served = serve(&site);
    site.wait_for_control_socket();
    let admin = served.admin.as_str();
    let op = bearer(token.trim());
    let origin = format!("http://{admin}");
    let mut ids = Vec::new();
    for (name, text) in [("alice", "alice was here\n"), ("bob", "bob was here\n")] {
        ids.push(id_of(&site.start_workagent(name)));
        let (code, out, err) = write(&site, name, "/work/app.txt", text);
        assert_eq!(code, 0, "{out}{err}");
        let (code, _, err) = site.run(&["session", "end", name, "--outcome", "completed"]);
        assert_eq!(code, 0, "{err}");
    }
    let page = http(
        admin,
        "GET",
        "/ui/workspaces",
        &[("Authorization", &op)],
        "",
    );
    assert_eq!(page.status, 200, "{}", page.body);
    for id in &ids {
        assert!(
            page.body.contains(&format!("id=\"merge-{id}\"")),
            "{}",
            page.body
        );
        assert!(
            page.body.contains("1 commit(s) ahead of main"),
            "{}",
            page.body
        );
    }
    let post = |path: &str| {
        http(
            admin,
            "POST",
            path,
            &[
                ("Authorization", &op),
                ("Origin", &origin),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            "",
        )
    };
    let merged = post(&format!("/ui/workspaces/{}/merge", ids[0]));
    assert_eq!(merged.status, 303, "{}", merged.body);
    assert_eq!(git(&repo, &["show", "main:app.txt"]), "alice was here\n");
    let refused = post(&format!("/ui/workspaces/{}/merge", ids[1]));
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(
        refused.body.contains("conflicts in app.txt"),
        "{}",
        refused.body
    );
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    let abandoned = post(&format!("/ui/workspaces/{}/abandon", ids[1]));
    assert_eq!(abandoned.status, 303, "{}", abandoned.body);
    let page = http(
        admin,
        "GET",
        "/ui/workspaces",
        &[("Authorization", &op)],
        "",
    );
    assert!(page.body.contains("no session worktrees"), "{}", page.body);
    // Without the operator's token, the buttons are refused.
    let a = http(
        admin,
        "POST",
        &format!("/ui/workspaces/{}/merge", ids[1]),
        &[("Origin", &origin)],
        "",
    );
    assert!(matches!(a.status, 401 | 403), "{}", a.status);
}
