//! Plugin manifests, loaded on their own.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use super::super::guest::valid_plugin_name;
use super::super::{Limits, PluginManifest};
use super::{BASE, Fixture};

#[test]
fn limits_override_only_what_they_name() {
    let fx = Fixture::new();
    let defaults = Limits {
        memory: 32 << 20,
        deadline: Duration::from_secs(3),
        fuel: Some(500),
        ..Limits::default()
    };
    let path = fx.write("plugin.toml", &format!("{BASE}[limits]\ndeadline = 1500\n"));
    let m = PluginManifest::load(&path, &defaults).unwrap();
    assert_eq!(
        m.limits,
        Limits {
            deadline: Duration::from_millis(1500),
            ..defaults.clone()
        }
    );
    // A plugin can turn a fuel default off.
    let path = fx.write("plugin.toml", &format!("{BASE}[limits]\nfuel = \"off\"\n"));
    assert_eq!(
        PluginManifest::load(&path, &defaults).unwrap().limits.fuel,
        None
    );
}

#[test]
fn missing_files_are_read_errors() {
    let fx = Fixture::new();
    let error = PluginManifest::load(&fx.path("nope.toml"), &Limits::default()).unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "cannot read `{}`: no such file",
            fx.path("nope.toml").display()
        )),
        "{message}"
    );
    assert!(
        message.ends_with("check the path and its permissions"),
        "{message}"
    );
}

/// Absolute host paths are taken as they are (a case file cannot know its directory:
/// `tests/ui/invalid/plugin/fs_host_*.toml` hold the refusals).
#[test]
fn absolute_fs_hosts_are_taken_as_they_are() {
    let fx = Fixture::new();
    let abs = fx.mkdir("abs");
    let m = fx
        .manifest(&format!(
            "{BASE}[[fs]]\nhost = {:?}\nguest = \"/data\"\n",
            abs.display().to_string()
        ))
        .unwrap();
    assert_eq!(m.fs[0].host, fs::canonicalize(abs).unwrap());
}

#[test]
fn for_component_derives_a_valid_name_and_grants_nothing() {
    let defaults = Limits {
        memory: 1 << 20,
        ..Limits::default()
    };
    let m = PluginManifest::for_component(PathBuf::from("target/Tool_Echo.wasm"), &defaults);
    assert_eq!(m.name, "tool-echo");
    assert!(m.component.is_absolute());
    assert_eq!(m.limits, defaults);
    assert_eq!(m.path, None);
    assert!(m.fs.is_empty() && m.env.is_empty() && m.http.is_empty() && m.tools.is_empty());
    for (stem, name) in [
        ("__x.y", "x-y"),
        ("_", "plugin"),
        ("ÄB", "b"),
        ("9lives", "9lives"),
    ] {
        let m = PluginManifest::for_component(PathBuf::from(format!("{stem}.wasm")), &defaults);
        assert_eq!(m.name, name, "{stem}");
        assert!(valid_plugin_name(&m.name), "{}", m.name);
    }
}
