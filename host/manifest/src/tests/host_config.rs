//! `glovebox.toml`, and the plugins it lists.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::super::host_config::RawHostConfig;
use super::super::paths::normalize;
use super::super::source::Source;
use super::super::{HostConfig, Limits, PluginManifest, RuntimeConfig};
use super::Fixture;

fn plugin_text(name: &str) -> String {
    format!("name = \"{name}\"\ncomponent = \"../tool.wasm\"\n")
}

#[test]
fn empty_host_config_is_all_defaults() {
    let fx = Fixture::new();
    let c = fx.host("hooks = \"none\"\n").unwrap();
    let root = fs::canonicalize(fx.dir.path()).unwrap();
    assert_eq!(c.path, root.join("glovebox.toml"));
    // The default data dir: see `owned::a_config_without_data_dir_uses_the_state_dir_not_its_own_directory`.
    assert!(!c.data_dir.starts_with(&root));
    assert_eq!(c.defaults, Limits::default());
    assert_eq!(c.runtime, RuntimeConfig::default());
    assert_eq!(c.cache_dir(), c.data_dir.join("cache"));
    assert!(c.plugins.is_empty());
    assert!(c.hooks.is_empty());
    assert!(c.hooks_explicitly_none);
    assert_eq!(c.storage.session_cache, crate::DEFAULT_SESSION_CACHE);
}

#[test]
fn host_config_loads_plugins_with_its_defaults() {
    let fx = Fixture::new();
    fx.write("plugins/echo.toml", &plugin_text("echo"));
    fx.write(
        "plugins/big.toml",
        &format!("{}[limits]\nmemory = \"1 GiB\"\n", plugin_text("big")),
    );
    let c = fx
        .host(
            r#"
data_dir = "state/../data"
hooks = "none"

[defaults]
memory = "32 MiB"
deadline = "5s"
output = "1 MiB"

[runtime]
max_concurrent_calls = 4
memory_budget = "2 GiB"
admission_wait = "250ms"
admission_queue = 0
principal_share = 1
slow_call = "2s"
slow_share = 0.25
max_input_bytes = "64 KiB"
max_component_bytes = "10 MB"
max_memory_per_instance = "1 GiB"
cache_dir = "/var/cache/glovebox"
digests_dir = "/var/lib/glovebox/digests"
scratch_quota = "1 GiB"

[storage]
min_free = "2 GiB"
session_cache = 64

[[plugin]]
manifest = "plugins/echo.toml"

[[plugin]]
manifest = "./plugins/big.toml"
"#,
        )
        .unwrap();
    let root = fs::canonicalize(fx.dir.path()).unwrap();
    assert_eq!(c.data_dir, root.join("data"));
    assert!(c.hooks_explicitly_none);
    let defaults = Limits {
        memory: 32 << 20,
        deadline: Duration::from_secs(5),
        ..Limits::default()
    };
    assert_eq!(c.defaults, defaults);
    assert_eq!(
        c.runtime,
        RuntimeConfig {
            max_concurrent_calls: 4,
            memory_budget: 2 << 30,
            admission_wait: Duration::from_millis(250),
            admission_queue: 0,
            principal_share: 1.0,
            slow_call: Duration::from_secs(2),
            slow_share: 0.25,
            max_input_bytes: 64 << 10,
            max_component_bytes: 10_000_000,
            max_memory_per_instance: 1 << 30,
            cache_dir: Some(PathBuf::from("/var/cache/glovebox")),
            digests_dir: Some(PathBuf::from("/var/lib/glovebox/digests")),
            scratch_quota: 1 << 30,
        }
    );
    assert_eq!(c.digests_dir(), PathBuf::from("/var/lib/glovebox/digests"));
    assert_eq!(c.storage.min_free, 2 << 30);
    assert_eq!(c.storage.session_cache, 64);
    assert_eq!(c.cache_dir(), PathBuf::from("/var/cache/glovebox"));
    let names: Vec<&str> = c.plugins.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["echo", "big"]);
    assert_eq!(c.plugins[0].limits, defaults);
    assert_eq!(c.plugins[1].limits.memory, 1 << 30);
    assert_eq!(c.plugins[1].limits.deadline, Duration::from_secs(5));
    assert_eq!(c.plugins[1].path, Some(root.join("plugins/big.toml")));
    assert_eq!(c.plugins[0].component, root.join("tool.wasm"));
}

#[test]
fn from_plugins_uses_defaults_everywhere() {
    let m = PluginManifest::for_component(PathBuf::from("x.wasm"), &Limits::default());
    let c = HostConfig::from_plugins(PathBuf::from("/tmp/gb"), vec![m.clone()]);
    assert_eq!(c.path, PathBuf::new());
    assert_eq!(c.data_dir, PathBuf::from("/tmp/gb"));
    assert_eq!(c.defaults, Limits::default());
    assert_eq!(c.runtime, RuntimeConfig::default());
    assert_eq!(c.plugins, [m]);
    assert!(c.hooks.is_empty());
    assert!(c.hooks_explicitly_none);
    assert_eq!(c.cache_dir(), PathBuf::from("/tmp/gb/cache"));
}

#[test]
fn normalize_is_lexical() {
    assert_eq!(normalize(Path::new("a/./b/../c")), PathBuf::from("a/c"));
    assert_eq!(normalize(Path::new("../a")), PathBuf::from("../a"));
    assert_eq!(normalize(Path::new("/../a")), PathBuf::from("/a"));
    assert_eq!(normalize(Path::new("./")), PathBuf::from("."));
}

/// The shipped examples must stay valid: every key known, every value accepted. The
/// components exist only after the plugins are built, so those runs check the rest.
#[test]
fn examples_are_valid() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let config = examples.join("glovebox.toml");
    let text = fs::read_to_string(&config).unwrap();
    let src = Source::parse("glovebox.toml".into(), text).unwrap();
    let raw: RawHostConfig = src.deserialize().unwrap();
    assert!(!raw.plugin.is_empty());
    for entry in &raw.plugin {
        let path = examples.join(&entry.manifest);
        match PluginManifest::load(&path, &Limits::default()) {
            Ok(m) => assert!(!m.name.is_empty()),
            Err(error) => assert_eq!(error.key(), Some("component"), "{error}"),
        }
    }
    match HostConfig::load(&config) {
        Ok(c) => assert_eq!(c.plugins.len(), raw.plugin.len()),
        Err(error) => assert_eq!(error.key(), Some("component"), "{error}"),
    }
}

#[test]
fn quotas_have_safe_defaults_and_parse_as_written() {
    let fx = Fixture::new();
    let c = fx.host("data_dir = \"data\"\nhooks = \"none\"\n").unwrap();
    assert_eq!(c.quotas, crate::QuotasConfig::default());
    assert_eq!(c.quotas.jobs_per_session, 64);

    let c = fx
        .host("data_dir = \"data\"\nhooks = \"none\"\n[quotas]\njobs_per_session = 3\nhandoff_bytes = \"8 KiB\"\n")
        .unwrap();
    assert_eq!(c.quotas.jobs_per_session, 3);
    assert_eq!(c.quotas.handoff_bytes, 8192);
    assert_eq!(
        c.quotas.retain_finished,
        Some(Duration::from_secs(30 * 24 * 3600))
    );
    let c = fx
        .host("data_dir = \"data\"\nhooks = \"none\"\n[quotas]\nretain_finished = \"off\"\n")
        .unwrap();
    assert_eq!(c.quotas.retain_finished, None);
}

#[test]
fn memory_denies_proposals_by_default_and_parses_as_written() {
    let fx = Fixture::new();
    let c = fx.host("data_dir = \"data\"\nhooks = \"none\"\n").unwrap();
    assert_eq!(c.memory, crate::MemoryConfig::default());
    assert!(
        crate::MemoryScopeKind::ALL.iter().all(|k| crate::Role::ALL
            .iter()
            .all(|r| !c.memory.may_propose(*r, *k))),
        "nobody proposes until the operator says so"
    );

    let c = fx
        .host("data_dir = \"data\"\nhooks = \"none\"\n[memory]\nmax_entries_at_start = 0\nmax_entry_bytes = \"1 KiB\"\n[memory.propose]\nrole = [\"supervisor\", \"supervisor\"]\n")
        .unwrap();
    assert_eq!(c.memory.max_entries_at_start, 0);
    assert_eq!(c.memory.max_entry_bytes, 1024);
    assert!(
        c.memory
            .may_propose(crate::Role::Supervisor, crate::MemoryScopeKind::Role)
    );
    assert!(
        !c.memory
            .may_propose(crate::Role::Workagent, crate::MemoryScopeKind::Role)
    );
    assert!(
        !c.memory
            .may_propose(crate::Role::Supervisor, crate::MemoryScopeKind::Project)
    );
    assert!(
        c.memory
            .may_review("cli:1000", crate::MemoryScopeKind::Project)
    );
    let c = fx
        .host("data_dir = \"data\"\nhooks = \"none\"\n[memory.approve]\nproject = [\"lead-ops\"]\n")
        .unwrap();
    assert!(
        c.memory
            .may_review("lead-ops", crate::MemoryScopeKind::Project)
    );
    assert!(
        !c.memory
            .may_review("cli:1000", crate::MemoryScopeKind::Project)
    );
    assert!(
        c.memory
            .may_review("cli:1000", crate::MemoryScopeKind::User)
    );
}
