//! docs/threats.md "Filesystem": a tool with one preopened dir.

use std::os::unix::fs::symlink;
use std::path::Path;

use glovebox::manifest::Access;
use serde_json::{Value, json};

use crate::util::{TestHost, assert_serving, call_ok, fs_grant, host_with_echo, manifest, plugins};

struct Probe {
    host: TestHost,
    dir: tempfile::TempDir,
}

/// A hostile-fs plugin with `dir` granted at `/data` with `access`.
async fn probe(access: Access) -> Probe {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("inside.txt"), "inside").unwrap();
    let mut m = manifest("fs", plugins::HOSTILE_FS);
    m.fs.push(fs_grant(dir.path(), "/data", access));
    Probe {
        host: host_with_echo(m).await,
        dir,
    }
}

impl Probe {
    async fn run(&self, tool: &str, input: Value) -> Value {
        call_ok(&self.host, &format!("fs.{tool}"), &input.to_string()).await
    }

    /// Runs a probe that must be refused by the sandbox.
    async fn denied(&self, tool: &str, input: Value) -> String {
        let out = self.run(tool, input.clone()).await;
        assert_eq!(
            out["ok"], false,
            "{tool} {input} should be denied, got {out}"
        );
        out["error"].as_str().unwrap_or_default().to_string()
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }
}

// Threat 11: paths and symlinks out of the granted dir are denied.
#[tokio::test]
async fn escapes_from_the_granted_dir_are_denied() {
    let p = probe(Access::ReadWrite).await;
    symlink("/etc/passwd", p.path("abs-link")).unwrap();
    symlink("../../../../../../../../etc/passwd", p.path("rel-link")).unwrap();
    std::fs::create_dir(p.path("sub")).unwrap();
    symlink("../..", p.path("sub/up")).unwrap();

    // The probe itself works inside the dir.
    assert_eq!(
        p.run("read", json!({"path": "/data/inside.txt"})).await["data"],
        "inside"
    );
    for path in [
        "/data/../../etc/passwd",
        "/data/../etc/passwd",
        "/etc/passwd",
        "../../etc/passwd",
        "/data/abs-link",
        "/data/rel-link",
        "/data/sub/up/etc/passwd",
    ] {
        let err = p.denied("read", json!({ "path": path })).await;
        assert!(!err.contains("root:"), "{path} leaked: {err}");
    }
    // Writing through an escaping symlink is refused too, and nothing lands outside.
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), p.path("out-dir")).unwrap();
    p.denied(
        "write",
        json!({"path": "/data/out-dir/planted.txt", "content": "x"}),
    )
    .await;
    assert!(!outside.path().join("planted.txt").exists());
    // A new symlink pointing out is not even created (threat 41).
    p.denied(
        "symlink",
        json!({"target": "/etc/passwd", "link": "/data/made-link"}),
    )
    .await;
    p.denied("read", json!({"path": "/data/made-link"})).await;
    assert!(std::fs::symlink_metadata(p.path("made-link")).is_err());
    assert_serving(&p.host).await;
}

/// Targets that point at or above the directory of the link: each would let a
/// host-side program that walks the grant (an editor, a backup, a build) out of it.
const LINKS_OUT: &[&str] = &[
    "/etc/passwd",
    "..",
    "../outside.txt",
    "../../../../../../../../etc/passwd",
    "sub/../../outside.txt",
    "sub/../..",
    ".",
    "sub/..",
    "",
];

// Threat 41: a guest cannot leave a symlink in a read-write grant that points
// outside it: creating one is refused, and nothing is left on the host's disk.
#[tokio::test]
async fn threat_41_symlinks_out_of_a_read_write_grant_are_refused_at_creation() {
    let p = probe(Access::ReadWrite).await;
    std::fs::create_dir(p.path("sub")).unwrap();
    for (i, target) in LINKS_OUT.iter().enumerate() {
        for dir in ["", "sub/"] {
            let link = format!("{dir}out-{i}");
            let err = p
                .denied(
                    "symlink",
                    json!({"target": target, "link": format!("/data/{link}")}),
                )
                .await;
            assert!(
                std::fs::symlink_metadata(p.path(&link)).is_err(),
                "`{link}` -> `{target}` was created ({err})"
            );
        }
    }
    // A link that points below itself is still made, and works.
    for (target, link) in [("inside.txt", "ok-1"), ("sub/../inside.txt", "ok-2")] {
        let out = p
            .run(
                "symlink",
                json!({"target": target, "link": format!("/data/{link}")}),
            )
            .await;
        assert_eq!(out["ok"], true, "{target}: {out}");
        assert_eq!(
            std::fs::read_link(p.path(link)).unwrap().to_str(),
            Some(target)
        );
        assert_eq!(
            p.run("read", json!({"path": format!("/data/{link}")}))
                .await["data"],
            "inside"
        );
    }
    // The rule holds under rearrangement: `l -> d/../inside.txt` passes while `d`
    // is a directory; replacing `d` by a link to the grant's root (which would
    // make `l` resolve above the grant) is refused.
    p.run("mkdir", json!({"path": "/data/d"})).await;
    let out = p
        .run(
            "symlink",
            json!({"target": "d/../inside.txt", "link": "/data/l"}),
        )
        .await;
    assert_eq!(out["ok"], true, "{out}");
    p.run("rmdir", json!({"path": "/data/d"})).await;
    for target in ["sub/..", ".", ".."] {
        p.denied("symlink", json!({"target": target, "link": "/data/d"}))
            .await;
    }
    assert!(std::fs::symlink_metadata(p.path("d")).is_err());
    assert_serving(&p.host).await;
}

// Threat 41, in the session's scratch directory: the same rule.
#[tokio::test]
async fn threat_41_symlinks_out_of_the_scratch_dir_are_refused_at_creation() {
    let mut m = manifest("fs", plugins::HOSTILE_FS);
    m.scratch = Some("/scratch".into());
    let h = host_with_echo(m).await;
    let run = |target: &str| {
        let input = json!({"target": target, "link": "/scratch/link"}).to_string();
        let h = &h;
        async move { call_ok(h, "fs.symlink", &input).await }
    };
    for target in LINKS_OUT {
        let out = run(target).await;
        assert_eq!(out["ok"], false, "`{target}` in scratch: {out}");
    }
    let out = run("notes.txt").await;
    assert_eq!(out["ok"], true, "{out}");
    assert_serving(&h).await;
}

// Threat 12: symlink loops are an error, not a hang.
#[tokio::test]
async fn symlink_loops_are_an_error() {
    let p = probe(Access::ReadWrite).await;
    symlink("loop-b", p.path("loop-a")).unwrap();
    symlink("loop-a", p.path("loop-b")).unwrap();
    symlink("self", p.path("self")).unwrap();
    for path in ["/data/loop-a", "/data/self", "/data/loop-a/x"] {
        p.denied("read", json!({ "path": path })).await;
    }
    assert_serving(&p.host).await;
}

// Threat 13: every kind of write into a read-only grant is denied.
#[tokio::test]
async fn writes_of_any_kind_into_a_read_only_grant_are_denied() {
    let p = probe(Access::ReadOnly).await;
    std::fs::create_dir(p.path("emptydir")).unwrap();
    let before = snapshot(p.dir.path());
    // Reading is allowed.
    assert_eq!(
        p.run("read", json!({"path": "/data/inside.txt"})).await["data"],
        "inside"
    );
    let attempts = [
        (
            "write",
            json!({"path": "/data/inside.txt", "content": "overwritten"}),
        ),
        ("write", json!({"path": "/data/new.txt", "content": "x"})),
        ("create", json!({"path": "/data/created.txt"})),
        ("truncate", json!({"path": "/data/inside.txt"})),
        (
            "rename",
            json!({"from": "/data/inside.txt", "to": "/data/renamed.txt"}),
        ),
        (
            "hard-link",
            json!({"from": "/data/inside.txt", "to": "/data/linked.txt"}),
        ),
        (
            "symlink",
            json!({"target": "inside.txt", "link": "/data/sym.txt"}),
        ),
        ("set-times", json!({"path": "/data/inside.txt"})),
        ("delete", json!({"path": "/data/inside.txt"})),
        ("mkdir", json!({"path": "/data/newdir"})),
        ("rmdir", json!({"path": "/data/emptydir"})),
    ];
    for (tool, input) in attempts {
        p.denied(tool, input).await;
    }
    assert_eq!(snapshot(p.dir.path()), before, "the read-only dir changed");
    assert_serving(&p.host).await;
}

// The same operations succeed in a read-write grant, so the probes above
// fail because of the grant, not because the probes are broken.
#[tokio::test]
async fn the_same_writes_succeed_in_a_read_write_grant() {
    let p = probe(Access::ReadWrite).await;
    std::fs::create_dir(p.path("emptydir")).unwrap();
    let attempts = [
        ("write", json!({"path": "/data/new.txt", "content": "x"})),
        ("create", json!({"path": "/data/created.txt"})),
        ("truncate", json!({"path": "/data/new.txt"})),
        (
            "rename",
            json!({"from": "/data/created.txt", "to": "/data/renamed.txt"}),
        ),
        (
            "hard-link",
            json!({"from": "/data/inside.txt", "to": "/data/linked.txt"}),
        ),
        (
            "symlink",
            json!({"target": "inside.txt", "link": "/data/sym.txt"}),
        ),
        ("set-times", json!({"path": "/data/inside.txt"})),
        ("delete", json!({"path": "/data/renamed.txt"})),
        ("mkdir", json!({"path": "/data/newdir"})),
        ("rmdir", json!({"path": "/data/emptydir"})),
    ];
    for (tool, input) in attempts {
        let out = p.run(tool, input.clone()).await;
        assert_eq!(out["ok"], true, "{tool} {input}: {out}");
    }
    assert!(
        p.path("new.txt").exists() && p.path("linked.txt").exists() && p.path("newdir").is_dir()
    );
}

// Threat 14: a tool with no fs grant sees no filesystem at all.
#[tokio::test]
async fn a_tool_without_a_grant_sees_no_filesystem() {
    let h = host_with_echo(manifest("fs", plugins::HOSTILE_FS)).await;
    let pre = call_ok(&h, "fs.preopens", "{}").await;
    assert_eq!(pre["data"], json!([]), "{pre}");
    for path in ["/", "/etc", ".", "/tmp"] {
        let out = call_ok(&h, "fs.list", &json!({ "path": path }).to_string()).await;
        assert_eq!(out["ok"], false, "{path}: {out}");
    }
    let out = call_ok(&h, "fs.read", r#"{"path":"/etc/passwd"}"#).await;
    assert_eq!(out["ok"], false, "{out}");
}

/// Names, sizes and modification times of everything under `dir`.
fn snapshot(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let meta = std::fs::symlink_metadata(e.path()).unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                meta.len(),
                meta.modified().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}
