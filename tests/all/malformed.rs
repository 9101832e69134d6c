//! docs/threats.md "Malformed plugins and host faults" (30, 31) where a case folder
//! cannot say it: the refusals with one message each are `tests/cases/load-*`; 32 is in
//! `cpu` and `tests/cases/guest-panic-is-a-trap`.

use glovebox::LoadError;

use crate::util::{manifest, plugins, try_host};

/// Loads a host with one plugin named `name` and returns the load error.
async fn load_error(m: glovebox::PluginManifest) -> (String, Option<LoadError>) {
    let err = try_host(vec![m])
        .await
        .err()
        .expect("the plugin must be refused");
    let msg = format!("{err:#}");
    let load = err.downcast::<LoadError>().ok();
    (msg, load)
}

#[tokio::test]
async fn a_huge_file_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.wasm");
    // A sparse 300 GiB file: reading it would take minutes and all memory.
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(300 * 1024 * 1024 * 1024).unwrap();
    let start = std::time::Instant::now();
    let (msg, err) = load_error(manifest("huge", path.to_str().unwrap())).await;
    assert!(matches!(err, Some(LoadError::TooLarge { .. })), "{msg}");
    assert!(
        msg.contains("`huge`") && msg.contains("max_component_bytes"),
        "{msg}"
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

#[tokio::test]
async fn a_missing_component_file_is_named() {
    let (msg, err) = load_error(manifest("gone", "/nonexistent/glovebox/plugin.wasm")).await;
    assert!(matches!(err, Some(LoadError::Read { .. })), "{msg}");
    assert!(msg.contains("/nonexistent/glovebox/plugin.wasm"), "{msg}");
}

#[tokio::test]
async fn a_matching_digest_loads() {
    use sha2_digest::sha256_hex;
    let mut m = manifest("pinned", plugins::TOOL_ECHO);
    m.sha256 = Some(sha256_hex(&std::fs::read(plugins::TOOL_ECHO).unwrap()));
    let h = try_host(vec![m]).await.expect("the pinned digest matches");
    assert_eq!(
        h.plugins()[0].digest,
        h.plugins()[0].manifest.sha256.clone().unwrap()
    );
}

mod sha2_digest {
    /// The digest as `sha256sum` prints it, computed by the system tool so the
    /// test does not trust the host's own hashing.
    pub fn sha256_hex(bytes: &[u8]) -> String {
        use std::io::Write;
        let mut child = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sha256sum is available");
        child.stdin.take().unwrap().write_all(bytes).unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    }
}

/// A plugin that asks for pre-initialization runs `wizer-initialize` with no grants;
/// when that fails, the plugin is refused with what it said, and nothing is cached.
#[tokio::test]
async fn a_failing_pre_initialization_refuses_the_plugin_and_caches_nothing() {
    let (h, data) = {
        let (config, data) =
            crate::util::config(vec![manifest("preinit", plugins::HOSTILE_PREINIT)]);
        // A compile cache of its own, so the check below sees only this plugin's.
        let mut config = config;
        config.runtime.cache_dir = Some(data.path().join("cache"));
        (glovebox::Host::load(config).await, data)
    };
    let err = h.err().expect("the plugin must be refused");
    let msg = format!("{err:#}");
    assert!(
        matches!(
            err.downcast_ref::<LoadError>(),
            Some(LoadError::PreInit { .. })
        ),
        "{msg}"
    );
    assert!(
        msg.contains("`preinit`") && msg.contains("wizer-initialize"),
        "{msg}"
    );
    assert!(msg.contains("`wizer-initialize` trapped"), "{msg}");
    // Its own panic message, and what it saw: no environment, no filesystem.
    assert!(
        msg.contains("wanted a config file at initialization, found HOME=None, / entries=None"),
        "{msg}"
    );
    let snapshots = data.path().join("cache").join("preinit");
    let cached = std::fs::read_dir(&snapshots)
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(cached, 0, "a failed pre-initialization left a snapshot");
}

/// A host over the JavaScript runner (pre-initialized) with `data` as its data dir and
/// `data/cache` as its compile cache.
async fn js_host(data: &std::path::Path) -> glovebox::Host {
    let mut m = manifest("code-js", plugins::CODE_JS);
    m.limits.memory = 128 * 1024 * 1024;
    let mut config = glovebox::HostConfig::from_plugins(data.to_path_buf(), vec![m]);
    config.runtime.cache_dir = Some(data.join("cache"));
    config.runtime.max_memory_per_instance = 1024 * 1024 * 1024;
    glovebox::Host::load(config)
        .await
        .unwrap_or_else(|e| panic!("host failed to load: {e:#}"))
}

async fn js_works(h: &glovebox::Host) {
    let out = crate::util::run_code(h, "code-js.run", "6 * 7", serde_json::json!({})).await;
    assert_eq!(out["value"], 42, "{out}");
}

// Threat 39: a pre-initialization snapshot changed on disk after it was made is a
// logged cache miss: made again, never loaded.
#[tokio::test]
async fn threat_39_a_tampered_snapshot_is_made_again_not_loaded() {
    let data = tempfile::tempdir().unwrap();
    // The shared cache's compiled code and the digests that vouch for it, so only
    // the snapshot is made here.
    let compiled = glovebox::compiled_dir(&crate::util::cache_dir());
    copy_tree(
        &compiled,
        &glovebox::compiled_dir(&data.path().join("cache")),
    );
    copy_tree(&crate::util::digests_dir(), &data.path().join("digests"));
    let h = js_host(data.path()).await;
    js_works(&h).await;
    drop(h);
    let preinit = data.path().join("cache").join("preinit");
    let snapshots: Vec<_> = std::fs::read_dir(&preinit)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
        .collect();
    assert_eq!(snapshots.len(), 1, "{snapshots:?}");
    let snapshot = &snapshots[0];
    // Swap in another valid component: a host that trusted the file would load the
    // echo plugin as the JavaScript runner.
    std::fs::write(snapshot, std::fs::read(plugins::TOOL_ECHO).unwrap()).unwrap();
    let h = js_host(data.path()).await;
    js_works(&h).await;
    drop(h);
    // Made again (pre-initialization need not give the same bytes twice), so
    // no longer the swapped-in file.
    let remade = std::fs::read(snapshot).unwrap();
    assert!(
        remade != std::fs::read(plugins::TOOL_ECHO).unwrap() && !remade.is_empty(),
        "the tampered snapshot was not replaced by a new one"
    );
    // A snapshot with no digest on record (copied in from elsewhere) is not trusted
    // either.
    std::fs::write(snapshot, std::fs::read(plugins::TOOL_ECHO).unwrap()).unwrap();
    std::fs::remove_dir_all(data.path().join("digests")).unwrap();
    let h = js_host(data.path()).await;
    js_works(&h).await;
    let remade = std::fs::read(snapshot).unwrap();
    assert!(remade != std::fs::read(plugins::TOOL_ECHO).unwrap() && !remade.is_empty());
}

// Threat 39: a compiled component changed in the compile cache is a logged cache
// miss: compiled again, never loaded (and run as machine code with the host's rights).
#[tokio::test]
async fn threat_39_a_tampered_compiled_component_is_compiled_again_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let load = async |name: &str, component: &str| {
        let mut config = glovebox::HostConfig::from_plugins(
            dir.path().join("data"),
            vec![manifest(name, component)],
        );
        config.runtime.cache_dir = Some(dir.path().join("cache"));
        glovebox::Host::load(config)
            .await
            .unwrap_or_else(|e| panic!("host failed to load: {e:#}"))
    };
    let compiled = glovebox::compiled_dir(&dir.path().join("cache"));
    let files = || -> std::collections::BTreeSet<std::path::PathBuf> {
        std::fs::read_dir(&compiled)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
            .collect()
    };
    let echo_works = async |h: &glovebox::Host| {
        let out = crate::util::call_ok(h, "echo.echo", r#"{"message":"m"}"#).await;
        assert_eq!(out["message"], "m", "{out}");
    };
    let h = load("echo", plugins::TOOL_ECHO).await;
    echo_works(&h).await;
    drop(h);
    let echo_files = files();
    assert_eq!(echo_files.len(), 1, "{echo_files:?}");
    let echo = echo_files.first().unwrap().clone();
    drop(load("text", plugins::TOOL_TEXT).await);
    let text = files().difference(&echo_files).next().unwrap().clone();
    let text_bytes = std::fs::read(&text).unwrap();

    // Another valid compiled component in echo's place: a host that trusted the
    // file would run the text plugin's code as `echo`.
    std::fs::write(&echo, &text_bytes).unwrap();
    let h = load("echo", plugins::TOOL_ECHO).await;
    echo_works(&h).await;
    drop(h);
    assert_ne!(
        std::fs::read(&echo).unwrap(),
        text_bytes,
        "not compiled again"
    );
    // With no digest on record (a cache copied in from elsewhere), not trusted either.
    std::fs::write(&echo, &text_bytes).unwrap();
    std::fs::remove_dir_all(dir.path().join("data").join("digests")).unwrap();
    let h = load("echo", plugins::TOOL_ECHO).await;
    echo_works(&h).await;
    assert_ne!(
        std::fs::read(&echo).unwrap(),
        text_bytes,
        "not compiled again"
    );
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    for entry in entries {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
