//! `glovebox.toml`, and the plugins it lists.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::super::host_config::RawHostConfig;
use super::super::paths::normalize;
use super::super::source::Source;
use super::super::{HostConfig, Limits, PluginManifest, RuntimeConfig};
use super::{Fixture, assert_error};

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
fn missing_manifest_names_the_entry_and_how_paths_resolve() {
    let fx = Fixture::new();
    fx.write("plugins/a.toml", &plugin_text("a"));
    fx.write("plugins/b.toml", &plugin_text("b"));
    let error = fx.host_error(
        "[[plugin]]\nmanifest = \"plugins/a.toml\"\n[[plugin]]\nmanifest = \"plugins/b.toml\"\n[[plugin]]\nmanifest = \"plugins/missing.toml\"\n",
    );
    let file = fx.path("glovebox.toml");
    assert_eq!(
        error.to_string(),
        format!(
            "in `{0}`: plugin manifest `plugins/missing.toml` not found (key `plugin[2].manifest` at line 6): check the path; relative paths are resolved from the directory of `{0}`",
            file.display()
        )
    );
    assert_error(&error, &file, "plugin[2].manifest", &[]);
}

#[test]
fn errors_inside_a_manifest_name_the_manifest_as_reached_from_the_config() {
    let fx = Fixture::new();
    fx.write(
        "plugins/bad.toml",
        "name = \"bad\"\ncomponent = \"../tool.wasm\"\nnmae = 1\n",
    );
    let error = fx.host_error("[[plugin]]\nmanifest = \"./plugins/bad.toml\"\n");
    assert_error(
        &error,
        &fx.path("plugins/bad.toml"),
        "nmae",
        &["unknown key", "at line 3"],
    );
}

#[test]
fn duplicate_plugin_names_name_both_files() {
    let fx = Fixture::new();
    fx.write("plugins/one.toml", &plugin_text("echo"));
    fx.write("plugins/two.toml", &plugin_text("echo"));
    let error = fx.host_error(
        "[[plugin]]\nmanifest = \"plugins/one.toml\"\n\n[[plugin]]\nmanifest = \"plugins/two.toml\"\n",
    );
    assert_error(
        &error,
        &fx.path("glovebox.toml"),
        "plugin[1].manifest",
        &[
            &format!(
                "plugin name `echo` is used by both `{}` and `{}`",
                fx.path("plugins/one.toml").display(),
                fx.path("plugins/two.toml").display()
            ),
            "at line 5",
            "unique `name`",
        ],
    );
}

#[test]
fn a_manifest_listed_twice_is_refused() {
    let fx = Fixture::new();
    fx.write("plugins/one.toml", &plugin_text("echo"));
    let error = fx.host_error(
        "[[plugin]]\nmanifest = \"plugins/one.toml\"\n[[plugin]]\nmanifest = \"plugins/../plugins/one.toml\"\n",
    );
    assert_error(
        &error,
        &fx.path("glovebox.toml"),
        "plugin[1].manifest",
        &[
            "is listed twice (also `plugin[0].manifest`)",
            "at line 4",
            "remove one",
        ],
    );
}

#[test]
fn plugin_memory_above_the_host_maximum_names_the_manifest() {
    let fx = Fixture::new();
    fx.write(
        "plugins/big.toml",
        &format!("{}\n[limits]\nmemory = \"8 GiB\"\n", plugin_text("big")),
    );
    let error = fx.host_error("[[plugin]]\nmanifest = \"plugins/big.toml\"\n");
    assert_error(
        &error,
        &fx.path("plugins/big.toml"),
        "limits.memory",
        &[
            "memory limit 8 GiB is above the host's `runtime.max_memory_per_instance` of 4 GiB",
            "at line 5",
            &format!(
                "raise `runtime.max_memory_per_instance` in `{}`",
                fx.path("glovebox.toml").display()
            ),
        ],
    );
    // Also above the admission budget: that call could never be admitted.
    let error = fx.host_error(
        "[runtime]\nmemory_budget = \"1 GiB\"\nmax_memory_per_instance = \"16 GiB\"\n[[plugin]]\nmanifest = \"plugins/big.toml\"\n",
    );
    assert_error(
        &error,
        &fx.path("plugins/big.toml"),
        "limits.memory",
        &["`runtime.memory_budget` of 1 GiB"],
    );
    // Loaded on its own, a manifest has no host maximum to check against.
    PluginManifest::load(&fx.path("plugins/big.toml"), &Limits::default()).unwrap();
}

#[test]
fn default_memory_above_the_host_maximum_is_refused() {
    let fx = Fixture::new();
    let error = fx.host_error(
        "[defaults]\nmemory = \"2 GiB\"\n[runtime]\nmax_memory_per_instance = \"1 GiB\"\n",
    );
    assert_error(
        &error,
        &fx.path("glovebox.toml"),
        "defaults.memory",
        &[
            "above the host's `runtime.max_memory_per_instance`",
            "at line 2",
        ],
    );
}

#[test]
fn runtime_values_are_checked() {
    let fx = Fixture::new();
    let file = fx.path("glovebox.toml");
    for calls in ["0", "1001", "-3"] {
        let error = fx.host_error(&format!("[runtime]\nmax_concurrent_calls = {calls}\n"));
        assert_error(
            &error,
            &file,
            "runtime.max_concurrent_calls",
            &["out of range", "at line 2", "from 1 to 1000"],
        );
    }
    let error = fx.host_error("[runtime]\nmax_input_bytes = 0\n");
    assert_error(
        &error,
        &file,
        "runtime.max_input_bytes",
        &["is zero", "\"64 MiB\""],
    );
    let error = fx.host_error("[runtime]\nmemory_budget = \"lots\"\n");
    assert_error(
        &error,
        &file,
        "runtime.memory_budget",
        &["invalid size `lots`", "at line 2"],
    );
    for queue in ["-1", "1000001"] {
        let error = fx.host_error(&format!("[runtime]\nadmission_queue = {queue}\n"));
        assert_error(
            &error,
            &file,
            "runtime.admission_queue",
            &["out of range", "from 0 (no queue: busy at once) to 1000000"],
        );
    }
    for key in ["principal_share", "slow_share"] {
        for share in ["0", "1.5", "-0.25", "nan"] {
            let error = fx.host_error(&format!("[runtime]\n{key} = {share}\n"));
            assert_error(
                &error,
                &file,
                &format!("runtime.{key}"),
                &["not a share of the call slots", "above 0 and at most 1"],
            );
        }
    }
    let error = fx.host_error("[runtime]\nslow_call = \"0s\"\n");
    assert_error(
        &error,
        &file,
        "runtime.slow_call",
        &["every call slow", "above zero"],
    );
    let error = fx.host_error("[runtime]\nadmission_wait = \"soon\"\n");
    assert_error(
        &error,
        &file,
        "runtime.admission_wait",
        &["invalid duration `soon`", "\"250ms\""],
    );
    let error = fx.host_error("[runtime]\nthreads = 4\n");
    assert_error(
        &error,
        &file,
        "runtime.threads",
        &["unknown key", "`max_concurrent_calls`"],
    );
    let error = fx.host_error("[defaults]\ndeadline = \"0ms\"\n");
    assert_error(
        &error,
        &file,
        "defaults.deadline",
        &["the deadline is zero", "at line 2"],
    );
}

#[test]
fn host_config_keys_are_checked() {
    let fx = Fixture::new();
    let file = fx.path("glovebox.toml");
    let error = fx.host_error("hooks = \"all\"\n");
    assert_error(
        &error,
        &file,
        "hooks",
        &[
            "`hooks = \"all\"` is not a hooks setting",
            "at line 1",
            "write `hooks = \"none\"`",
            "`[[hook]]`",
        ],
    );
    let error = fx.host_error("plugins = []\n");
    assert_error(
        &error,
        &file,
        "plugins",
        &["unknown key", "at line 1", "`plugin`"],
    );
    let error = fx.host_error("[[plugin]]\npath = \"x.toml\"\n");
    assert_error(
        &error,
        &file,
        "plugin[0].path",
        &["unknown key", "expected `manifest`"],
    );
    let error = fx.host_error("[[plugin]]\n");
    assert_error(
        &error,
        &file,
        "plugin[0].manifest",
        &[
            "missing key",
            "at line 1",
            "manifest = \"plugins/name.toml\"",
        ],
    );
    let error = fx.host_error("data_dir = \"\"\n");
    assert_error(&error, &file, "data_dir", &["is empty"]);
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
fn quotas_have_safe_defaults_and_bad_values_name_their_key() {
    let fx = Fixture::new();
    let file = fx.path("glovebox.toml");
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

    for (text, key, part) in [
        (
            "jobs_per_session = 0",
            "quotas.jobs_per_session",
            "from 1 to",
        ),
        (
            "sessions_per_principal = -1",
            "quotas.sessions_per_principal",
            "from 1 to",
        ),
        (
            "handoff_bytes = 10",
            "quotas.handoff_bytes",
            "between 1 KiB",
        ),
        ("log_bytes = 10", "quotas.log_bytes", "unknown key"),
    ] {
        let error = fx.host_error(&format!("[quotas]\n{text}\n"));
        assert_error(&error, &file, key, &[part, "at line 2"]);
    }
}

#[test]
fn memory_denies_proposals_by_default_and_bad_values_name_their_key() {
    let fx = Fixture::new();
    let file = fx.path("glovebox.toml");
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

    for (text, key, part) in [
        (
            "[memory]\nmax_entries_at_start = -1",
            "memory.max_entries_at_start",
            "from 0 to",
        ),
        (
            "[memory]\nmax_entry_bytes = 2",
            "memory.max_entry_bytes",
            "between 16 B",
        ),
        (
            "[memory.propose]\nproject = [\"boss\"]",
            "memory.propose.project",
            "unknown role `boss`",
        ),
        ("[memory]\nmax_size = 1", "memory.max_size", "unknown key"),
        (
            "[memory.approve]\nuser = []",
            "memory.approve.user",
            "would let nobody review",
        ),
    ] {
        let error = fx.host_error(&format!("{text}\n"));
        assert_error(&error, &file, key, &[part]);
    }
}

#[test]
fn a_session_cache_outside_its_range_is_refused_naming_the_key() {
    let fx = Fixture::new();
    assert_eq!(
        fx.host("hooks = \"none\"\n").unwrap().storage.session_cache,
        crate::DEFAULT_SESSION_CACHE
    );
    for bad in ["0", "-1", "1000001"] {
        let error = fx.host_error(&format!(
            "hooks = \"none\"\n[storage]\nsession_cache = {bad}\n"
        ));
        let text = error.to_string();
        assert!(text.contains("storage.session_cache"), "{text}");
        assert!(
            text.contains(&format!(
                "{bad} is not a number of sessions from 1 to 1000000"
            )),
            "{text}"
        );
    }
}
