//! Plugin manifests, loaded on their own.

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use super::super::plugin::valid_plugin_name;
use super::super::{Access, ConfigError, FsGrant, Limits, PluginManifest, ToolOverride};
use super::{BASE, Fixture, assert_error};

#[test]
fn minimal_manifest_gets_the_defaults_and_no_grants() {
    let fx = Fixture::new();
    let m = fx.manifest(BASE).unwrap();
    assert_eq!(m.name, "files");
    assert_eq!(
        m.path,
        Some(fs::canonicalize(fx.path("plugin.toml")).unwrap())
    );
    assert_eq!(m.component, fs::canonicalize(fx.path("tool.wasm")).unwrap());
    assert!(m.component.is_absolute());
    assert_eq!(m.sha256, None);
    assert_eq!(m.limits, Limits::default());
    assert!(m.fs.is_empty() && m.env.is_empty() && m.http.is_empty() && m.tools.is_empty());
}

#[test]
fn full_manifest_parses_every_key() {
    let fx = Fixture::new();
    fx.mkdir("work/data");
    fx.mkdir("ref");
    let hash = "AB".repeat(32);
    let m = fx
        .manifest(&format!(
            r#"
name = "files_2"
component = "./tool.wasm"
sha256 = "{hash}"
env = ["LANG", "API_TOKEN"]

[limits]
memory = "128 MiB"
deadline = "250ms"
output = 2048
stdio = "1 KiB"
fuel = 1000000
max_wasm_stack = "512 KiB"
write = "2 MiB"

[[fs]]
host = "work/data"
guest = "/data/"
access = "read-write"

[[fs]]
host = "ref"
guest = "/ref"

[[http]]
url = "https://API.example.com/"

[[http]]
url = "http://127.0.0.1:8080"

[tools.write]
action = "write:file"
destructive = true
idempotent = false
cost = 0.5

[tools."read-all"]
action = "read:file:*"
cost = 1
"#
        ))
        .unwrap();
    assert_eq!(m.name, "files_2");
    assert_eq!(m.sha256, Some("ab".repeat(32)));
    assert_eq!(m.env, ["LANG", "API_TOKEN"]);
    assert_eq!(
        m.limits,
        Limits {
            memory: 128 << 20,
            deadline: Duration::from_millis(250),
            output: 2048,
            stdio: 1024,
            fuel: Some(1_000_000),
            max_wasm_stack: 512 << 10,
            write: 2 << 20,
        }
    );
    let root = fs::canonicalize(fx.dir.path()).unwrap();
    assert_eq!(
        m.fs,
        [
            FsGrant {
                host: root.join("work/data"),
                guest: "/data".into(),
                access: Access::ReadWrite
            },
            FsGrant {
                host: root.join("ref"),
                guest: "/ref".into(),
                access: Access::ReadOnly
            },
        ]
    );
    let urls: Vec<String> = m.http.iter().map(ToString::to_string).collect();
    assert_eq!(
        urls,
        ["https://api.example.com:443", "http://127.0.0.1:8080"]
    );
    assert_eq!(
        m.tools["write"],
        ToolOverride {
            action: Some("write:file".into()),
            destructive: Some(true),
            idempotent: Some(false),
            cost: Some(0.5),
        }
    );
    assert_eq!(m.tools["read-all"].cost, Some(1.0));
    assert_eq!(m.tools["read-all"].destructive, None);
}

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
fn unknown_top_level_key_lists_the_allowed_ones() {
    let fx = Fixture::new();
    let error = fx.manifest_error("\ngrnats = 1\n");
    let file = fx.path("plugin.toml");
    assert_eq!(
        error.to_string(),
        format!(
            "in `{}`: unknown key `grnats` at line 4: expected one of `name`, `component`, `sha256`, `limits`, `fs`, `env`, `http`, `scratch`, `tools`",
            file.display()
        )
    );
    assert_error(&error, &file, "grnats", &[]);
}

#[test]
fn unknown_nested_keys_are_named_with_their_table() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    let error = fx.manifest_error("[limits]\nmemroy = \"1 MiB\"\n");
    assert_error(
        &error,
        &file,
        "limits.memroy",
        &["at line 4", "expected one of `memory`"],
    );
    fx.mkdir("d");
    let error = fx.manifest_error("[[fs]]\nhost = \"d\"\nguest = \"/d\"\nmode = \"rw\"\n");
    assert_error(&error, &file, "fs[0].mode", &["at line 6", "`access`"]);
    let error = fx.manifest_error("[tools.read]\nactoin = \"read\"\n");
    assert_error(
        &error,
        &file,
        "tools.read.actoin",
        &["at line 4", "expected one of `action`"],
    );
    let error =
        fx.manifest_error("http = [{ url = \"https://a.example\", methods = [\"GET\"] }]\n");
    assert_error(
        &error,
        &file,
        "http[0].methods",
        &["at line 3", "expected `url`"],
    );
}

#[test]
fn missing_keys_say_what_to_add() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    let error = fx.manifest("name = \"files\"\n").unwrap_err();
    assert_error(
        &error,
        &file,
        "component",
        &["missing key", "set `component = "],
    );
    let error = fx.manifest_error("[[fs]]\nhost = \"x\"\n[[fs]]\nhost = \"y\"\n");
    assert_error(
        &error,
        &file,
        "fs[0].guest",
        &["missing key", "at line 3", "guest = \"/data\""],
    );
}

#[test]
fn syntax_errors_name_the_file_and_line() {
    let fx = Fixture::new();
    let error = fx
        .manifest("name = \"files\"\ncomponent = \"tool.wasm\n")
        .unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, ConfigError::Syntax { line: 2, .. }),
        "{message}"
    );
    assert!(message.starts_with(&format!(
        "in `{}`: invalid toml at line 2",
        fx.path("plugin.toml").display()
    )));
    assert!(
        message.ends_with("fix the syntax (see https://toml.io)"),
        "{message}"
    );
    // Duplicate keys are a syntax error too.
    let error = fx.manifest("name = \"a\"\nname = \"b\"\n").unwrap_err();
    assert!(
        matches!(error, ConfigError::Syntax { line: 2, .. }),
        "{error}"
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

#[test]
fn wrong_types_name_the_key_and_hint() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    let error = fx
        .manifest("name = 3\ncomponent = \"tool.wasm\"\n")
        .unwrap_err();
    assert_error(
        &error,
        &file,
        "name",
        &[
            "invalid type: integer `3`",
            "at line 1",
            "lowercase letters",
        ],
    );
    let error = fx.manifest_error("[limits]\nmemory = true\n");
    assert_error(
        &error,
        &file,
        "limits.memory",
        &["expected a size", "at line 4", "\"64 MiB\""],
    );
    let error = fx.manifest_error("env = \"LANG\"\n");
    assert_error(&error, &file, "env", &["at line 3", "env = [\"LANG\""]);
    let error = fx.manifest_error("[tools.x]\ndestructive = \"yes\"\n");
    assert_error(
        &error,
        &file,
        "tools.x.destructive",
        &["at line 4", "`true` or `false`"],
    );
}

#[test]
fn plugin_names_are_lowercase_identifiers() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    for bad in ["Files", "-files", "_x", "", "a b", " a", "a.b", "ünïcode"] {
        let error = fx
            .manifest(&format!("name = \"{bad}\"\ncomponent = \"tool.wasm\"\n"))
            .unwrap_err();
        assert_error(
            &error,
            &file,
            "name",
            &[
                &format!("invalid plugin name `{bad}`"),
                "at line 1",
                "lowercase letters",
            ],
        );
    }
    for good in ["a", "0x", "tool-echo", "tool_echo2"] {
        let m = fx
            .manifest(&format!("name = \"{good}\"\ncomponent = \"tool.wasm\"\n"))
            .unwrap();
        assert_eq!(m.name, good);
    }
}

#[test]
fn missing_component_names_the_path_and_how_it_was_resolved() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    let error = fx
        .manifest("name = \"x\"\ncomponent = \"../build/x.wasm\"\n")
        .unwrap_err();
    assert_error(
        &error,
        &file,
        "component",
        &[
            "component `../build/x.wasm` not found",
            "at line 2",
            "relative paths are resolved from the directory of",
        ],
    );
    fx.mkdir("dir.wasm");
    let error = fx
        .manifest("name = \"x\"\ncomponent = \"dir.wasm\"\n")
        .unwrap_err();
    assert_error(&error, &file, "component", &["is not a file"]);
}

#[test]
fn sha256_must_be_64_hex_digits() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    for bad in ["abc", &"g".repeat(64), &"a".repeat(65)] {
        let error = fx.manifest_error(&format!("sha256 = \"{bad}\"\n"));
        assert_error(
            &error,
            &file,
            "sha256",
            &["is not a sha-256 digest", "at line 3", "sha256sum"],
        );
    }
}

#[test]
fn zero_limits_are_refused() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    let cases = [
        ("memory = 0", "limits.memory", "the memory limit is zero"),
        (
            "memory = \"0 MiB\"",
            "limits.memory",
            "the memory limit is zero",
        ),
        (
            "deadline = \"0s\"",
            "limits.deadline",
            "the deadline is zero",
        ),
        ("deadline = 0", "limits.deadline", "the deadline is zero"),
        ("output = 0", "limits.output", "the output limit is zero"),
        ("fuel = 0", "limits.fuel", "fuel is zero"),
        (
            "max_wasm_stack = 0",
            "limits.max_wasm_stack",
            "stack limit is zero",
        ),
    ];
    for (line, key, problem) in cases {
        let error = fx.manifest_error(&format!("[limits]\n{line}\n"));
        assert_error(&error, &file, key, &[problem, "at line 4"]);
    }
    // No stdio at all is a legitimate choice.
    let m = fx
        .manifest(&format!("{BASE}[limits]\nstdio = 0\n"))
        .unwrap();
    assert_eq!(m.limits.stdio, 0);
}

#[test]
fn bad_sizes_and_durations_say_how_to_write_them() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    let error = fx.manifest_error("[limits]\nmemory = \"64 MBs\"\n");
    assert_error(
        &error,
        &file,
        "limits.memory",
        &["invalid size `64 MBs`", "at line 4", "\"64 MiB\""],
    );
    let error = fx.manifest_error("[limits]\noutput = -5\n");
    assert_error(
        &error,
        &file,
        "limits.output",
        &["size -5 is negative", "integer number of bytes"],
    );
    let error = fx.manifest_error("[limits]\ndeadline = \"soon\"\n");
    assert_error(
        &error,
        &file,
        "limits.deadline",
        &["invalid duration `soon`", "\"250ms\""],
    );
    let error = fx.manifest_error("[limits]\nfuel = \"lots\"\n");
    assert_error(
        &error,
        &file,
        "limits.fuel",
        &["invalid fuel `lots`", "\"off\""],
    );
}

#[test]
fn fs_grants_need_an_existing_host_directory() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    let error = fx.manifest_error("[[fs]]\nhost = \"missing\"\nguest = \"/data\"\n");
    assert_error(
        &error,
        &file,
        "fs[0].host",
        &[
            "directory `missing` not found",
            "at line 4",
            "create it or fix the path",
            "relative paths are resolved",
        ],
    );
    let error = fx.manifest_error("[[fs]]\nhost = \"tool.wasm\"\nguest = \"/data\"\n");
    assert_error(&error, &file, "fs[0].host", &["is not a directory"]);
    // Absolute host paths are taken as they are.
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
fn guest_paths_are_absolute_without_dotdot_and_unique() {
    let fx = Fixture::new();
    fx.mkdir("d");
    let file = fx.path("plugin.toml");
    let cases = [
        ("data", "is not absolute"),
        ("./data", "is not absolute"),
        ("/data/../etc", "contains `..`"),
        ("/..", "contains `..`"),
        ("/", "is the root"),
        ("//.", "is the root"),
    ];
    for (guest, problem) in cases {
        let error = fx.manifest_error(&format!("[[fs]]\nhost = \"d\"\nguest = \"{guest}\"\n"));
        assert_error(
            &error,
            &file,
            "fs[0].guest",
            &[problem, "at line 5", "guest = \"/data\""],
        );
    }
    let error = fx.manifest_error(
        "[[fs]]\nhost = \"d\"\nguest = \"/data\"\n[[fs]]\nhost = \"d\"\nguest = \"/data/./\"\n",
    );
    assert_error(
        &error,
        &file,
        "fs[1].guest",
        &[
            "guest path `/data` is already used by `fs[0]`",
            "at line 8",
            "its own `guest`",
        ],
    );
    let m = fx
        .manifest(&format!(
            "{BASE}[[fs]]\nhost = \"d\"\nguest = \"//a/./b//\"\n"
        ))
        .unwrap();
    assert_eq!(m.fs[0].guest, "/a/b");
}

#[test]
fn access_is_read_only_or_read_write() {
    let fx = Fixture::new();
    fx.mkdir("d");
    let error = fx.manifest_error("[[fs]]\nhost = \"d\"\nguest = \"/d\"\naccess = \"rw\"\n");
    assert_error(
        &error,
        &fx.path("plugin.toml"),
        "fs[0].access",
        &["unknown variant `rw`", "at line 6", "\"read-write\""],
    );
}

#[test]
fn env_names_are_checked() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    let error = fx.manifest_error("env = [\"LANG\", \"\"]\n");
    assert_error(
        &error,
        &file,
        "env[1]",
        &["name is empty", "at line 3", "by name only"],
    );
    let error = fx.manifest_error("env = [\"A=1\"]\n");
    assert_error(&error, &file, "env[0]", &["`A=1` contains `=`"]);
    let error = fx.manifest_error("env = [\n  \"LANG\",\n  \"LANG\",\n]\n");
    assert_error(
        &error,
        &file,
        "env[1]",
        &["`LANG` is listed twice", "at line 5"],
    );
}

#[test]
fn http_grants_refuse_paths_userinfo_queries_and_other_schemes() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    let cases = [
        ("https://example.com/v1", "has the path `/v1`"),
        ("https://me:pw@example.com", "has user info"),
        ("https://example.com/?q=1", "has a query"),
        ("ftp://example.com", "has scheme `ftp`"),
        ("example.com", "is not a url"),
    ];
    for (url, problem) in cases {
        let error = fx.manifest_error(&format!("[[http]]\nurl = \"{url}\"\n"));
        assert_error(&error, &file, "http[0].url", &[problem, "at line 4"]);
    }
    let error = fx.manifest_error(
        "[[http]]\nurl = \"https://a.example\"\n[[http]]\nurl = \"https://A.example:443/\"\n",
    );
    assert_error(
        &error,
        &file,
        "http[1].url",
        &["`https://a.example:443` is granted twice", "at line 6"],
    );
}

#[test]
fn tool_actions_are_colon_paths_and_costs_non_negative() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    for bad in [
        "",
        "Write:file",
        "write::file",
        "write:",
        "write file",
        "write/file",
    ] {
        let error = fx.manifest_error(&format!("[tools.write]\naction = \"{bad}\"\n"));
        assert_error(
            &error,
            &file,
            "tools.write.action",
            &[
                &format!("invalid action `{bad}`"),
                "at line 4",
                "colon path",
            ],
        );
    }
    for good in ["write", "execute:database:*", "net:http-get", "a_b:0"] {
        let m = fx
            .manifest(&format!("{BASE}[tools.write]\naction = \"{good}\"\n"))
            .unwrap();
        assert_eq!(m.tools["write"].action.as_deref(), Some(good));
    }
    let error = fx.manifest_error("[tools.\"odd name\"]\ncost = -1.0\n");
    assert_error(
        &error,
        &file,
        "tools.\"odd name\".cost",
        &["cost -1 is not a non-negative number", "at line 4"],
    );
    let error = fx.manifest_error("[tools.x]\ncost = nan\n");
    assert_error(
        &error,
        &file,
        "tools.x.cost",
        &["is not a non-negative number"],
    );
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

#[test]
fn scratch_is_a_guest_path_of_its_own() {
    let fx = Fixture::new();
    fx.mkdir("d");
    let file = fx.path("plugin.toml");
    assert_eq!(fx.manifest(BASE).unwrap().scratch, None);
    let m = fx
        .manifest(&format!("{BASE}scratch = \"/scratch/\"\n"))
        .unwrap();
    assert_eq!(m.scratch.as_deref(), Some("/scratch"));
    let error = fx.manifest_error("scratch = \"tmp\"\n");
    assert_error(&error, &file, "scratch", &["is not absolute", "at line 3"]);
    let error = fx.manifest_error("scratch = \"/data\"\n[[fs]]\nhost = \"d\"\nguest = \"/data\"\n");
    assert_error(
        &error,
        &file,
        "scratch",
        &["guest path `/data` is already used by `fs[0]`"],
    );
}

#[test]
fn the_wasm_stack_is_host_wide_not_per_plugin() {
    let fx = Fixture::new();
    let file = fx.path("plugin.toml");
    let error = fx.manifest_error("[limits]\nmax_wasm_stack = \"8 MiB\"\n");
    assert_error(
        &error,
        &file,
        "limits.max_wasm_stack",
        &[
            "cannot have its own wasm stack limit",
            "`[defaults]` table of glovebox.toml",
        ],
    );
}
