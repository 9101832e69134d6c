//! The worktrees over real git repositories: made once under concurrency,
//! committed per unit of work, merged where the base is checked out (or in
//! a temporary worktree), and refused whole when the merge cannot be clean.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{UnitOfWork, WorkspaceError, Workspaces};
use crate::manifest::WorkspaceConfig;

fn run_git(dir: &Path, args: &[&str]) -> String {
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

/// A repository on `main` with `app.txt`, and workspaces over it whose
/// trees live in `data/`.
struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    workspaces: Workspaces,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    run_git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    std::fs::write(repo.join("app.txt"), "base\n").unwrap();
    run_git(&repo, &["add", "-A"]);
    run_git(&repo, &["commit", "--quiet", "-m", "base"]);
    let workspaces = Workspaces {
        root: dir.path().join("data/workspaces"),
        configs: vec![WorkspaceConfig {
            name: "app".into(),
            repo: repo.clone(),
            base: None,
            branch_prefix: "glovebox/".into(),
        }],
    };
    Fixture {
        _dir: dir,
        repo,
        workspaces,
    }
}

/// Session `session`'s tree with `app.txt` written as `text` and committed.
fn edited(fx: &Fixture, session: &str, text: &str) -> PathBuf {
    let tree = fx.workspaces.tree_for("app", session).unwrap();
    std::fs::write(tree.join("app.txt"), text).unwrap();
    let committed = fx
        .workspaces
        .commit_unit(session, UnitOfWork::Completed, "edit app.txt");
    assert!(committed[0].commit.is_some(), "{committed:?}");
    tree
}

#[test]
fn calls_of_one_session_at_once_make_its_tree_once() {
    let fx = fixture();
    let trees: Vec<PathBuf> = std::thread::scope(|s| {
        let calls: Vec<_> = (0..8)
            .map(|_| s.spawn(|| fx.workspaces.tree_for("app", "s-one").unwrap()))
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert!(trees.iter().all(|t| *t == trees[0]), "{trees:?}");
    assert!(trees[0].starts_with(&fx.workspaces.root));
    let listed = run_git(&fx.repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        listed.matches("branch refs/heads/glovebox/s-one").count(),
        1
    );
    // The branch tracks the base it started from.
    assert_eq!(
        run_git(&fx.repo, &["config", "branch.glovebox/s-one.merge"]).trim(),
        "refs/heads/main"
    );
}

#[test]
fn a_session_id_that_cannot_name_a_tree_is_refused() {
    let fx = fixture();
    for bad in ["../x", "", "-rf", "a/b"] {
        let e = fx.workspaces.tree_for("app", bad).unwrap_err();
        assert!(e.contains("cannot name a worktree"), "{bad}: {e}");
    }
    let e = fx.workspaces.tree_for("nope", "s-1").unwrap_err();
    assert!(e.contains("workspace `nope` is not declared"), "{e}");
}

#[test]
fn nothing_changed_makes_no_commit_and_the_message_names_session_and_objective() {
    let fx = fixture();
    fx.workspaces.tree_for("app", "s-1").unwrap();
    let committed = fx.workspaces.commit_unit("s-1", UnitOfWork::Handoff, "x");
    assert_eq!(committed.len(), 1);
    assert_eq!((&committed[0].commit, &committed[0].error), (&None, &None));
    edited(&fx, "s-1", "one\n");
    let message = run_git(&fx.repo, &["log", "-1", "--format=%an%n%B", "glovebox/s-1"]);
    assert!(message.starts_with("Glovebox\nedit app.txt\n"), "{message}");
    assert!(message.contains("Glovebox-Session: s-1"), "{message}");
    assert!(message.contains("Glovebox-Unit: completed"), "{message}");
}

#[test]
fn a_tree_with_work_not_committed_is_not_merged() {
    let fx = fixture();
    let tree = fx.workspaces.tree_for("app", "s-1").unwrap();
    std::fs::write(tree.join("new.txt"), "draft").unwrap();
    let e = fx.workspaces.merge("s-1").unwrap_err();
    assert!(
        matches!(&e, WorkspaceError::Uncommitted { paths, .. } if paths == &["new.txt"]),
        "{e}"
    );
    assert!(tree.exists());
    assert!(!fx.repo.join("new.txt").exists());
}

#[test]
fn a_checkout_of_the_base_with_changes_is_not_merged_into() {
    let fx = fixture();
    edited(&fx, "s-1", "one\n");
    std::fs::write(fx.repo.join("app.txt"), "the operator's edit\n").unwrap();
    let e = fx.workspaces.merge("s-1").unwrap_err();
    assert!(matches!(e, WorkspaceError::BaseDirty { .. }), "{e}");
    assert!(e.to_string().contains("app.txt"), "{e}");
    assert_eq!(
        std::fs::read_to_string(fx.repo.join("app.txt")).unwrap(),
        "the operator's edit\n"
    );
}

#[test]
fn a_base_checked_out_nowhere_is_merged_in_a_temporary_worktree() {
    let fx = fixture();
    edited(&fx, "s-1", "one\n");
    // The operator works on another branch: the checkout is not touched.
    run_git(&fx.repo, &["checkout", "--quiet", "-b", "feature"]);
    let merged = fx.workspaces.merge("s-1").unwrap();
    assert_eq!(merged[0].base, "main");
    assert_eq!(run_git(&fx.repo, &["show", "main:app.txt"]), "one\n");
    assert_eq!(
        std::fs::read_to_string(fx.repo.join("app.txt")).unwrap(),
        "base\n"
    );
    assert_eq!(
        run_git(&fx.repo, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "feature"
    );
    let listed = run_git(&fx.repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(listed.matches("worktree ").count(), 1, "{listed}");
    assert!(fx.workspaces.list().is_empty());
}

#[test]
fn a_conflict_is_aborted_and_lists_its_paths() {
    let fx = fixture();
    edited(&fx, "s-1", "one\n");
    edited(&fx, "s-2", "two\n");
    fx.workspaces.merge("s-1").unwrap();
    let head = run_git(&fx.repo, &["rev-parse", "HEAD"]);
    let e = fx.workspaces.merge("s-2").unwrap_err();
    assert_eq!(
        e,
        WorkspaceError::Conflict {
            branch: "glovebox/s-2".into(),
            base: "main".into(),
            paths: vec!["app.txt".into()],
        }
    );
    assert_eq!(run_git(&fx.repo, &["status", "--porcelain"]), "");
    assert!(!fx.repo.join(".git/MERGE_HEAD").exists());
    assert_eq!(run_git(&fx.repo, &["rev-parse", "HEAD"]), head);
    // Abandoned, its tree and branch go; with no tree, a second try says so.
    let abandoned = fx.workspaces.abandon("s-2").unwrap();
    assert_eq!(abandoned[0].branch, "glovebox/s-2");
    assert!(run_git(&fx.repo, &["branch", "--list", "glovebox/s-2"]).is_empty());
    assert!(matches!(
        fx.workspaces.abandon("s-2"),
        Err(WorkspaceError::NoTree { .. })
    ));
}

/// Threat: an agent rewrites its tree's `.git` to name a git dir it made,
/// whose config runs a command (`core.fsmonitor`) when git looks at the
/// tree. The host never takes the tree's word for its git dir: the command
/// does not run, and the commit lands on the session's branch.
#[test]
fn threat_64_a_tree_that_names_its_own_git_dir_runs_nothing_of_the_agents() {
    let fx = fixture();
    let tree = fx.workspaces.tree_for("app", "s-1").unwrap();
    // A bare git dir: to the tree's own git, plain files.
    let evil = tree.join("evil.git");
    std::fs::create_dir(&evil).unwrap();
    run_git(&evil, &["init", "--quiet", "--bare"]);
    let marker = fx.repo.parent().unwrap().join("pwned");
    run_git(
        &evil,
        &[
            "config",
            "core.fsmonitor",
            &format!("touch {}; false", marker.display()),
        ],
    );
    std::fs::write(tree.join(".git"), format!("gitdir: {}\n", evil.display())).unwrap();
    std::fs::write(tree.join("app.txt"), "changed\n").unwrap();
    let committed = fx.workspaces.commit_unit("s-1", UnitOfWork::Handoff, "x");
    assert!(committed[0].commit.is_some(), "{committed:?}");
    assert!(!marker.exists(), "the agent's fsmonitor ran on the host");
    assert_eq!(
        run_git(&fx.repo, &["show", "glovebox/s-1:app.txt"]),
        "changed\n"
    );
    fx.workspaces.list();
    assert!(!marker.exists(), "the agent's fsmonitor ran on the host");
}
