//! The operator's files as the host reads them (`glovebox-manifest`): the
//! host config (`HostConfig::load`, `HostConfig::data_dir_of`) and a plugin
//! manifest (`PluginManifest::load`), through their real loaders, from real
//! files.
//!
//! Input: the config's text, a line `# ---- manifest ----`, then the
//! manifest's text. They are written to `cfg/glovebox.toml` and
//! `cfg/plugins/fuzz.toml` in a directory made once per process, beside an
//! (empty) component `cfg/plugins/fuzz.wasm`, a hook component `cfg/hook.wasm`
//! and a directory `work/` a grant may name (`host = "../../work"`).
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use glovebox_manifest::{HostConfig, Limits, PluginManifest};
use libfuzzer_sys::fuzz_target;

const SEPARATOR: &str = "\n# ---- manifest ----\n";

struct Layout {
    config: PathBuf,
    manifest: PathBuf,
}

static LAYOUT: LazyLock<Layout> = LazyLock::new(|| {
    let root = std::env::temp_dir().join(format!("glovebox-fuzz-config-{}", std::process::id()));
    let cfg = root.join("cfg");
    std::fs::create_dir_all(cfg.join("plugins")).expect("make the fuzz layout");
    std::fs::create_dir_all(root.join("work")).expect("make the fuzz layout");
    std::fs::write(cfg.join("plugins/fuzz.wasm"), b"").expect("make the fuzz layout");
    std::fs::write(cfg.join("hook.wasm"), b"").expect("make the fuzz layout");
    Layout {
        config: cfg.join("glovebox.toml"),
        manifest: cfg.join("plugins/fuzz.toml"),
    }
});

fuzz_target!(|data: &[u8]| {
    // The loaders read bytes; a file that is not UTF-8 is refused by them.
    let (config, manifest) = match data
        .windows(SEPARATOR.len())
        .position(|w| w == SEPARATOR.as_bytes())
    {
        Some(at) => (&data[..at], &data[at + SEPARATOR.len()..]),
        None => (data, data),
    };
    let layout = &*LAYOUT;
    std::fs::write(&layout.config, config).expect("write the config");
    std::fs::write(&layout.manifest, manifest).expect("write the manifest");
    let _ = HostConfig::data_dir_of(&layout.config);
    let _ = HostConfig::load(&layout.config);
    let _ = PluginManifest::load(&layout.manifest, &Limits::default());
});
