//! `HostConfig::builds_of`: the plugins' `[build]`s of a config that does
//! not load yet because a component is not built.

use std::fs;

use super::super::{ConfigError, HostConfig, ListedBuild, PluginBuild};
use super::Fixture;

#[test]
fn builds_are_read_from_a_config_whose_components_are_not_built_yet() {
    let fx = Fixture::new();
    fx.write(
        "plugins/new/new.toml",
        "name = \"new\"\ncomponent = \"out/new.wasm\"\n[limits]\nmemory = \"32 MiB\"\n[build]\ncommand = \"sh build.sh\"\n",
    );
    fx.write(
        "plugins/old.toml",
        "name = \"old\"\ncomponent = \"../tool.wasm\"\n",
    );
    let config = fx.write(
        "glovebox.toml",
        "hooks = \"none\"\n[[plugin]]\nmanifest = \"plugins/old.toml\"\n[[plugin]]\nmanifest = \"plugins/new/new.toml\"\n",
    );
    // The config does not load: the component is missing.
    let error = HostConfig::load(&config).unwrap_err().to_string();
    assert!(
        error.contains("component `out/new.wasm` not found"),
        "{error}"
    );

    let root = fs::canonicalize(fx.dir.path()).unwrap();
    let builds = HostConfig::builds_of(&config).unwrap();
    assert_eq!(
        builds,
        vec![ListedBuild {
            plugin: "new".into(),
            manifest: root.join("plugins/new/new.toml"),
            component: root.join("plugins/new/out/new.wasm"),
            build: PluginBuild {
                command: "sh build.sh".into(),
                watch: vec!["src/**".into()],
                dir: root.join("plugins/new"),
            },
        }]
    );
}

#[test]
fn a_bad_build_or_a_missing_manifest_is_refused_as_a_load_refuses_it() {
    let fx = Fixture::new();
    fx.write(
        "new.toml",
        "name = \"new\"\ncomponent = \"out/new.wasm\"\n[build]\ncommand = \" \"\n",
    );
    let config = fx.write(
        "glovebox.toml",
        "hooks = \"none\"\n[[plugin]]\nmanifest = \"new.toml\"\n",
    );
    let error = HostConfig::builds_of(&config).unwrap_err();
    assert!(
        matches!(&error, ConfigError::Invalid { key, .. } if key == "build.command"),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("the build command is empty"),
        "{error}"
    );

    let config = fx.write(
        "glovebox.toml",
        "hooks = \"none\"\n[[plugin]]\nmanifest = \"gone.toml\"\n",
    );
    let error = HostConfig::builds_of(&config).unwrap_err();
    assert!(matches!(error, ConfigError::Read { .. }), "{error:?}");
}
