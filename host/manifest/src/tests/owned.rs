//! Threat 38: grants over Glovebox's own files are refused at load; the default data
//! dir lies outside the config's directory.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use super::super::owned::default_data_dir;
use super::Fixture;

/// A host config in a project dir with one plugin whose manifest says `fs`, and `extra`
/// on top of the config (which sets `data_dir` relative to the project).
fn load(
    fx: &Fixture,
    config_extra: &str,
    fs_host: &str,
) -> Result<super::HostConfig, super::ConfigError> {
    fx.mkdir("project/src");
    fx.mkdir("elsewhere");
    fx.write(
        "project/plugins/files.toml",
        &format!(
            "name = \"files\"\ncomponent = \"../../tool.wasm\"\n[[fs]]\nhost = {fs_host:?}\nguest = \"/data\"\naccess = \"read-write\"\n"
        ),
    );
    fx.write(
        "project/glovebox.toml",
        &format!("hooks = \"none\"\n{config_extra}[[plugin]]\nmanifest = \"plugins/files.toml\"\n"),
    );
    super::HostConfig::load(&fx.path("project/glovebox.toml"))
}

#[test]
fn threat_38_grants_over_gloveboxs_own_files_are_refused_naming_both_paths() {
    let data = "data_dir = \"state\"\n";
    let cache =
        "data_dir = \"../elsewhere/state\"\n[runtime]\ncache_dir = \"../elsewhere/cache\"\n";
    // (config extra, granted dir relative to the manifest, what the error must say)
    let cases = [
        (data, "..", "is the config file's directory"),
        (data, "../..", "contains the data dir"),
        (data, "../state", "is the data dir"),
        (data, "../state/store", "lies inside the data dir"),
        (cache, "../../elsewhere", "contains the data dir"),
        (cache, "../../elsewhere/cache", "is the compile cache"),
        (
            cache,
            "../../elsewhere/cache/preinit",
            "is the pre-initialization snapshots",
        ),
        (
            cache,
            "../../elsewhere/cache/modules",
            "lies inside the compile cache",
        ),
        (data, ".", "contains the manifest of plugin `files`"),
    ];
    for (extra, granted, says) in cases {
        let fx = Fixture::new();
        fx.mkdir("project/state/store");
        fx.mkdir("elsewhere/cache/preinit");
        fx.mkdir("elsewhere/cache/modules");
        let err = match load(&fx, extra, granted) {
            Ok(_) => panic!("granting `{granted}` was accepted"),
            Err(e) => e,
        };
        let message = err.to_string();
        let host = fs::canonicalize(fx.path("project/plugins").join(granted)).unwrap();
        assert_eq!(err.key(), Some("fs[0].host"), "{message}");
        assert!(message.contains(says), "`{granted}`: {message}");
        assert!(
            message.contains(&format!("`{}`", host.display())),
            "{message}"
        );
        assert!(
            message.contains("grant a directory that holds none of Glovebox's own files"),
            "{message}"
        );
    }
    // A component: the one file of a dir granted elsewhere.
    let fx = Fixture::new();
    fx.mkdir("elsewhere/bin");
    fs::copy(fx.path("tool.wasm"), fx.path("elsewhere/bin/tool.wasm")).unwrap();
    fx.write(
        "project/plugins/other.toml",
        "name = \"other\"\ncomponent = \"../../elsewhere/bin/tool.wasm\"\n",
    );
    let err = load(
        &fx,
        &format!("{data}[[plugin]]\nmanifest = \"plugins/other.toml\"\n"),
        "../../elsewhere",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("contains the component of plugin `other`"),
        "{err}"
    );
    // What holds none of them is granted: a directory beside the config, or elsewhere.
    for granted in ["../src", "../../elsewhere"] {
        let fx = Fixture::new();
        let c = load(&fx, data, granted).unwrap_or_else(|e| panic!("`{granted}`: {e}"));
        assert_eq!(c.plugins[0].fs.len(), 1);
    }
}

#[test]
fn threat_38_a_scratch_dir_over_the_compile_cache_is_refused() {
    let fx = Fixture::new();
    fx.write(
        "files.toml",
        "name = \"files\"\ncomponent = \"tool.wasm\"\nscratch = \"/scratch\"\n",
    );
    let err = fx
        .host_error("hooks = \"none\"\ndata_dir = \"d\"\n[runtime]\ncache_dir = \"d/scratch/cache\"\n[[plugin]]\nmanifest = \"files.toml\"\n")
        .to_string();
    assert!(
        err.contains("the scratch dirs") && err.contains("contains the compile cache"),
        "{err}"
    );
    assert!(err.contains("(key `scratch`)"), "{err}");
    // The usual layout is fine: scratch inside the data dir, the cache beside it.
    fx.host("hooks = \"none\"\ndata_dir = \"d\"\n[[plugin]]\nmanifest = \"files.toml\"\n")
        .unwrap();
}

fn env<'a>(vars: &'a [(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
    move |name| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| OsString::from(v))
    }
}

#[test]
fn the_default_data_dir_is_a_state_dir_keyed_by_the_config_path() {
    let config = Path::new("/home/u/my project/glovebox.toml");
    let xdg = default_data_dir(
        config,
        env(&[("XDG_STATE_HOME", "/x/state"), ("HOME", "/home/u")]),
    )
    .unwrap();
    assert!(xdg.starts_with("/x/state/glovebox"), "{}", xdg.display());
    let name = xdg.file_name().unwrap().to_str().unwrap().to_owned();
    assert!(
        name.starts_with("my_project-") && name.len() == "my_project-".len() + 12,
        "{name}"
    );
    let home = default_data_dir(config, env(&[("HOME", "/home/u")])).unwrap();
    assert_eq!(
        home,
        PathBuf::from("/home/u/.local/state/glovebox").join(&name)
    );
    // A relative XDG_STATE_HOME is ignored, as the XDG spec says.
    let relative = default_data_dir(
        config,
        env(&[("XDG_STATE_HOME", "state"), ("HOME", "/home/u")]),
    )
    .unwrap();
    assert_eq!(relative, home);
    // Another config, another data dir.
    let other = default_data_dir(
        Path::new("/home/u/other/my project/glovebox.toml"),
        env(&[("HOME", "/home/u")]),
    )
    .unwrap();
    assert_ne!(other, home);
    // No HOME: an error that says what to set, never a shared temp dir.
    let err = default_data_dir(config, env(&[])).unwrap_err().to_string();
    assert!(
        err.contains("`HOME`") && err.contains("`XDG_STATE_HOME`"),
        "{err}"
    );
}

#[test]
fn a_config_without_data_dir_uses_the_state_dir_not_its_own_directory() {
    let fx = Fixture::new();
    let c = fx.host("hooks = \"none\"\n").unwrap();
    let root = fs::canonicalize(fx.dir.path()).unwrap();
    assert!(!c.data_dir.starts_with(&root), "{}", c.data_dir.display());
    assert_eq!(
        c.data_dir,
        default_data_dir(&root.join("glovebox.toml"), |v| std::env::var_os(v)).unwrap()
    );
    assert_eq!(c.cache_dir(), c.data_dir.join("cache"));
}

#[test]
fn threat_26_a_grant_over_the_chain_key_file_is_refused() {
    let key = "data_dir = \"state\"\n[storage]\nchain_key_file = \"../elsewhere/keys/chain.key\"\n";
    for granted in ["../../elsewhere/keys", "../../elsewhere"] {
        let fx = Fixture::new();
        fx.mkdir("elsewhere/keys");
        let err = match load(&fx, key, granted) {
            Ok(_) => panic!("granting `{granted}` was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("contains the chain key file"), "{err}");
    }
    // A grant beside it, holding none of it, is fine.
    let fx = Fixture::new();
    fx.mkdir("elsewhere/keys");
    fx.mkdir("elsewhere/work");
    let c = load(&fx, key, "../../elsewhere/work").unwrap();
    assert_eq!(
        c.storage.chain_key_file,
        Some(fx.path("elsewhere/keys/chain.key"))
    );
}

#[test]
fn threat_26_a_chain_key_file_inside_the_data_dir_is_refused() {
    let fx = Fixture::new();
    fx.mkdir("project/state");
    let err = load(
        &fx,
        "data_dir = \"state\"\n[storage]\nchain_key_file = \"state/chain.key\"\n",
        "../src",
    )
    .unwrap_err();
    let message = err.to_string();
    assert_eq!(err.key(), Some("storage.chain_key_file"), "{message}");
    assert!(
        message.contains("lies inside the data dir") && message.contains("chain.key"),
        "{message}"
    );
}

/// A 0600 file with `text` at `rel` in the fixture.
fn secret(fx: &Fixture, rel: &str, text: &str) {
    let path = fx.write(rel, text);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    }
}

// Threat 56: a grant over a file holding a secret the config names would let an agent
// become a principal after the next reload (a credential file), or forge webhooks and
// notifications (a secret file): each is refused like the data dir, naming both paths.
#[test]
fn threat_56_grants_over_the_secret_files_the_config_names_are_refused() {
    let hash = super::super::principal::credential_of("a-token-of-the-operator");
    let secrets = "data_dir = \"state\"\n\
        [[principal]]\nname = \"ops\"\nkind = \"operator\"\ncredential_file = \"../elsewhere/keys/ops.sha256\"\n\
        [[notify]]\nname = \"chat\"\nurl = \"http://127.0.0.1:9/x\"\nevents = [\"job_failed\"]\nsecret_file = \"../elsewhere/hooks/notify.secret\"\n\
        [[trigger]]\nname = \"nightly\"\non = \"webhook\"\nsecret_file = \"../elsewhere/triggers/nightly.secret\"\naction = \"sweep\"\n";
    // (granted dir relative to the manifest, what the error says, the key to fix)
    let cases = [
        (
            "../../elsewhere/keys",
            "contains the credential file of principal `ops`",
            "principal[0].credential_file",
        ),
        (
            "../../elsewhere/hooks",
            "contains the secret file of notify target `chat`",
            "notify[0].secret_file",
        ),
        (
            "../../elsewhere/triggers",
            "contains the secret file of trigger `nightly`",
            "trigger[0].secret_file",
        ),
    ];
    let prepare = |fx: &Fixture| {
        secret(fx, "elsewhere/keys/ops.sha256", &hash);
        secret(
            fx,
            "elsewhere/hooks/notify.secret",
            "0123456789abcdef0123456789abcdef",
        );
        secret(
            fx,
            "elsewhere/triggers/nightly.secret",
            "fedcba9876543210fedcba9876543210",
        );
        fx.mkdir("elsewhere/work");
    };
    for (granted, says, key) in cases {
        let fx = Fixture::new();
        prepare(&fx);
        let err = match load(&fx, secrets, granted) {
            Ok(_) => panic!("granting `{granted}` was accepted"),
            Err(e) => e,
        };
        let message = err.to_string();
        assert_eq!(err.key(), Some("fs[0].host"), "{message}");
        assert!(message.contains(says), "`{granted}`: {message}");
        // Both paths, and the fix: move the file and point the key at it.
        let dir = fs::canonicalize(fx.path("project/plugins").join(granted)).unwrap();
        assert!(
            message.contains(&format!("`{}`", dir.display())),
            "{message}"
        );
        let file = fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
        assert!(
            message.contains(&format!("`{}`", file.display())),
            "{message}"
        );
        assert!(
            message.contains("move the file out of every granted directory")
                && message.contains(&format!("point `{key}` at it")),
            "{message}"
        );
    }
    // The scratch dirs too: a secret file under the data dir's scratch.
    let fx = Fixture::new();
    secret(&fx, "project/state/scratch/keys/ops.sha256", &hash);
    fx.write(
        "project/plugins/scratchy.toml",
        "name = \"scratchy\"\ncomponent = \"../../tool.wasm\"\nscratch = \"/scratch\"\n",
    );
    fx.write(
        "project/glovebox.toml",
        "hooks = \"none\"\ndata_dir = \"state\"\n[[principal]]\nname = \"ops\"\nkind = \"operator\"\ncredential_file = \"state/scratch/keys/ops.sha256\"\n[[plugin]]\nmanifest = \"plugins/scratchy.toml\"\n",
    );
    let err = super::HostConfig::load(&fx.path("project/glovebox.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the scratch dirs")
            && err.contains("contains the credential file of principal `ops`"),
        "{err}"
    );
    // A grant beside them, holding none, is fine; the files are listed as owned.
    let fx = Fixture::new();
    prepare(&fx);
    let c = load(&fx, secrets, "../../elsewhere/work").unwrap();
    let keys: Vec<String> = c.secret_files().into_iter().map(|s| s.key).collect();
    assert_eq!(
        keys,
        [
            "principal[0].credential_file",
            "notify[0].secret_file",
            "trigger[0].secret_file"
        ]
    );
}
