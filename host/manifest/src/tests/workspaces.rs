//! `[[workspace]]` and the `[[fs]]` grants that name one: what a valid
//! config parses to, and the refusals that need a git repository on disk
//! (a `.git` a case file of `tests/ui/` cannot hold).

use super::super::{Access, WorkspaceConfig, WorkspaceGrant};
use super::Fixture;

/// A repository as the loader sees one: a directory with a `.git`.
fn repo(fx: &Fixture, rel: &str) {
    fx.mkdir(&format!("{rel}/.git"));
}

const FILES: &str = "name = \"files\"\ncomponent = \"../tool.wasm\"\n[[fs]]\nworkspace = \"app\"\nguest = \"/work\"\naccess = \"read-write\"\n";

#[test]
fn a_grant_names_a_declared_workspace() {
    let fx = Fixture::new();
    repo(&fx, "repo");
    fx.write("plugins/files.toml", FILES);
    let c = fx
        .host(
            "data_dir = \"data\"\nhooks = \"none\"\n[[workspace]]\nname = \"app\"\nrepo = \"repo\"\n[[workspace]]\nname = \"docs\"\nrepo = \"repo\"\nbase = \"trunk\"\nbranch_prefix = \"agents/\"\n[[plugin]]\nmanifest = \"plugins/files.toml\"\n",
        )
        .unwrap();
    let repo = std::fs::canonicalize(fx.path("repo")).unwrap();
    assert_eq!(
        c.workspaces,
        vec![
            WorkspaceConfig {
                name: "app".into(),
                repo: repo.clone(),
                base: None,
                branch_prefix: "glovebox/".into(),
            },
            WorkspaceConfig {
                name: "docs".into(),
                repo,
                base: Some("trunk".into()),
                branch_prefix: "agents/".into(),
            },
        ]
    );
    assert_eq!(c.workspaces[1].branch_of("s-1"), "agents/s-1");
    let files = &c.plugins[0];
    assert!(files.fs.is_empty());
    assert_eq!(
        files.workspaces,
        vec![WorkspaceGrant {
            workspace: "app".into(),
            guest: "/work".into(),
            access: Access::ReadWrite,
            only: Default::default(),
        }]
    );
}

#[test]
fn a_grant_naming_an_undeclared_workspace_is_refused_with_the_declared_ones() {
    let fx = Fixture::new();
    repo(&fx, "repo");
    fx.write("plugins/files.toml", &FILES.replace("\"app\"", "\"ap\""));
    let e = fx
        .host("data_dir = \"data\"\nhooks = \"none\"\n[[workspace]]\nname = \"app\"\nrepo = \"repo\"\n[[plugin]]\nmanifest = \"plugins/files.toml\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("workspace `ap` is not declared in the host config (declared: app)")
            && e.contains("fs[0].workspace")
            && e.contains("`[[workspace]]` with `name` and `repo`"),
        "{e}"
    );
}

#[test]
fn a_workspace_declared_twice_or_with_a_bad_branch_is_refused() {
    let fx = Fixture::new();
    repo(&fx, "repo");
    let twice = "data_dir = \"data\"\nhooks = \"none\"\n[[workspace]]\nname = \"app\"\nrepo = \"repo\"\n[[workspace]]\nname = \"app\"\nrepo = \"repo\"\n";
    let e = fx.host(twice).unwrap_err().to_string();
    assert!(
        e.contains("workspace `app` is declared twice") && e.contains("workspace[1].name"),
        "{e}"
    );
    for (key, value) in [
        ("base", "main..x"),
        ("base", "-main"),
        ("branch_prefix", "a b/"),
    ] {
        let text = format!(
            "data_dir = \"data\"\nhooks = \"none\"\n[[workspace]]\nname = \"app\"\nrepo = \"repo\"\n{key} = \"{value}\"\n"
        );
        let e = fx.host(&text).unwrap_err().to_string();
        assert!(
            e.contains(&format!("workspace[0].{key}")),
            "{key} = {value}: {e}"
        );
    }
}

#[test]
fn a_repository_holding_the_data_dir_or_inside_it_is_refused() {
    let fx = Fixture::new();
    repo(&fx, "repo");
    let e = fx
        .host("data_dir = \"repo/data\"\nhooks = \"none\"\n[[workspace]]\nname = \"app\"\nrepo = \"repo\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("lies inside the repository") && e.contains("set `data_dir`"),
        "{e}"
    );
    repo(&fx, "data/repo");
    let e = fx
        .host("data_dir = \"data\"\nhooks = \"none\"\n[[workspace]]\nname = \"app\"\nrepo = \"data/repo\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("lies inside the data dir"), "{e}");
}

#[test]
fn a_manifest_alone_keeps_its_workspace_grant_unchecked() {
    // `plugin check` reads a manifest without a host config: the name is
    // checked against the config when one loads it.
    let fx = Fixture::new();
    let m = fx
        .manifest(&FILES.replace("../tool.wasm", "tool.wasm"))
        .unwrap();
    assert_eq!(m.workspaces.len(), 1);
}
