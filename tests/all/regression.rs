//! Regression tests, each named for what broke.

use crate::util::Site;

// The 1,000-kill crash test once ended with a data dir sled 0.34 would not
// open ("Read corrupted data at file offset None"): a process killed while
// sled wrote its startup snapshot left `snap.<lsn>.generating`, which sled
// then reads as its newest snapshot. The store moves it aside, verifies
// every session, and opens with everything acknowledged (docs/durability.md).
#[test]
fn sled_refused_the_store_after_a_kill_during_its_startup_snapshot() {
    let site = Site::new(true);
    site.set_config("backend = \"sled\"\n");
    let (code, _, err) = site.run(&[
        "session",
        "start",
        "--role",
        "workagent",
        "--project",
        "p",
        "--name",
        "kept",
    ]);
    assert_eq!(code, 0, "{err}");
    for i in 0..20 {
        let (code, _, err) = site.run(&[
            "call",
            "--session",
            "kept",
            "echo.echo",
            "--input",
            &format!("{{\"message\":\"{i}\"}}"),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let (_, before, _) = site.run(&["log", "export", "kept"]);
    assert_eq!(before.lines().count(), 61, "{before}");
    // What the kill left: the file created and part of the snapshot written.
    let torn = site
        .data()
        .join("sled")
        .join("snap.00000000FFFFFFFF.generating");
    std::fs::write(&torn, [0x5a_u8; 700]).unwrap();

    let (code, out, err) = site.run(&["store", "check"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("repaired at open: moved an unfinished sled snapshot"),
        "{out}"
    );
    assert!(!torn.exists());
    assert_eq!(site.run(&["log", "export", "kept"]).1, before);
    let (code, out, err) = site.run(&["log", "verify", "kept"]);
    assert_eq!(code, 0, "{out}{err}");
}

// Once the rescue commands ran the registry's operations, at the command
// line with no server they opened the whole gateway and so loaded every
// plugin first: one whose component could not load stopped `glovebox
// rescue` (exit 2), when the operator may need it most. An operation that
// runs no tool now opens the data dir without the plugins.
#[test]
fn a_plugin_that_cannot_load_stopped_the_operators_rescue_commands() {
    let site = Site::with_plugins(&[(
        "broken.toml",
        "name = \"broken\"\ncomponent = \"broken.wasm\"\n".to_string(),
    )]);
    std::fs::write(
        site.path().join("broken.wasm"),
        b"\0asm, and then not a component",
    )
    .unwrap();
    // The plugin cannot load: a command that needs the tools says so.
    let (code, _, err) = site.run(&["tools"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot load the plugins"), "{err}");
    site.start_workagent("stuck");
    let opened = site.json(&["rescue", "open", "stuck"]);
    let rid = opened["id"].as_str().unwrap();
    let listed = site.json(&["rescue", "list", "--json"]);
    assert!(listed.to_string().contains(rid), "{listed}");
    let resolved = site.json(&["rescue", "resolve", rid, "--outcome", "abandoned"]);
    assert_eq!(resolved["outcome"], "abandoned");
}
