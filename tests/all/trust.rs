//! Signed plugins and `[trust]`, over the real binary and the real echo
//! plugin and hook: a plugin signed by a trusted key loads and serves; a
//! component or a manifest (its grants) changed after signing, a signature
//! by another key and no signature at all are refused naming the plugin,
//! the key expected and the fix; without `[trust]` nothing changes; a
//! reload and a hook are held to the same check. Each site copies the
//! components it signs, so that tampering touches only its own copy.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::mcp::Server;
use crate::util::{Site, glovebox, plugins};

/// A site whose config lists `echo.toml` (its own copy of the echo
/// component, `echo.wasm`), with `extra` in the config.
fn echo_site(extra: &str) -> Site {
    let site = Site::with_config(
        extra,
        &[(
            "echo.toml",
            "name = \"echo\"\ncomponent = \"echo.wasm\"\n".to_string(),
        )],
    );
    std::fs::copy(plugins::TOOL_ECHO, site.path().join("echo.wasm")).unwrap();
    site
}

/// `glovebox plugin keygen DIR/NAME`: the key's id.
fn keygen(dir: &Path, name: &str) -> String {
    let out = glovebox()
        .args(["plugin", "keygen"])
        .arg(dir.join(name))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "keygen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = stdout
        .lines()
        .find_map(|l| l.strip_prefix("key id:"))
        .expect("keygen prints the key id")
        .trim()
        .to_string();
    assert_eq!(id.len(), 16, "{stdout}");
    id
}

/// `glovebox plugin sign PATH --key DIR/NAME.key`.
fn sign(path: &Path, key: &Path) {
    let out = glovebox()
        .args(["plugin", "sign"])
        .arg(path)
        .arg("--key")
        .arg(key)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sign: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn trust_all(key_file: &str) -> String {
    format!("[trust]\nkeys = [\"{key_file}\"]\n")
}

/// `glovebox call echo.echo`: its exit code and output, stderr last.
fn call_echo(site: &Site) -> (i32, String) {
    let (code, out, err) = site.run(&["call", "echo.echo", "--input", r#"{"message":"hi"}"#]);
    (code, format!("{out}{err}"))
}

fn manifest(site: &Site) -> PathBuf {
    site.path().join("echo.toml")
}

fn key(site: &Site, name: &str) -> PathBuf {
    site.path().join(format!("{name}.key"))
}

#[test]
fn a_signed_plugin_loads_serves_and_check_names_its_signer() {
    let site = echo_site("");
    let alice = keygen(site.path(), "alice");
    sign(&manifest(&site), &key(&site, "alice"));
    site.set_config(&trust_all("alice.pub"));

    let (code, out) = call_echo(&site);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("hi"), "{out}");

    let (code, out, err) = site.run(&["plugin", "check", manifest(&site).to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("signed:    by key {alice} (trusted by `[trust]`")),
        "{out}"
    );
}

#[test]
fn a_component_changed_after_signing_is_refused() {
    let site = echo_site("");
    keygen(site.path(), "alice");
    sign(&manifest(&site), &key(&site, "alice"));
    // A custom section appended: still a valid component, another digest.
    let component = site.path().join("echo.wasm");
    let mut bytes = std::fs::read(&component).unwrap();
    bytes.extend_from_slice(&[0, 5, 4, b'e', b'v', b'i', b'l']);
    std::fs::write(&component, bytes).unwrap();

    // It loads without `[trust]` (so only the signature refuses it below).
    let (code, out) = call_echo(&site);
    assert_eq!(
        code, 0,
        "the tampered component is still a component: {out}"
    );

    site.set_config(&trust_all("alice.pub"));
    let (code, out) = call_echo(&site);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("plugin `echo`: its component"), "{out}");
    assert!(out.contains("is not the one signed"), "{out}");
    assert!(out.contains("glovebox plugin sign"), "{out}");
}

#[test]
fn a_manifest_whose_grants_changed_after_signing_is_refused() {
    let site = echo_site(&trust_all("alice.pub"));
    keygen(site.path(), "alice");
    sign(&manifest(&site), &key(&site, "alice"));
    assert_eq!(call_echo(&site).0, 0);

    let text = std::fs::read_to_string(manifest(&site)).unwrap();
    std::fs::write(manifest(&site), format!("{text}env = [\"HOME\"]\n")).unwrap();
    let (code, out) = call_echo(&site);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("plugin `echo`: its manifest")
            && out.contains("is not the one signed (its grants or limits may differ)"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "glovebox plugin sign {}",
            manifest(&site).canonicalize().unwrap().display()
        )),
        "{out}"
    );

    // Signed again after review, it loads.
    sign(&manifest(&site), &key(&site, "alice"));
    assert_eq!(call_echo(&site).0, 0);
}

#[test]
fn a_plugin_signed_by_an_untrusted_key_is_refused_naming_the_expected_key() {
    let site = echo_site("");
    let alice = keygen(site.path(), "alice");
    let mallory = keygen(site.path(), "mallory");
    sign(&manifest(&site), &key(&site, "mallory"));
    // Alice's key inline, as `keygen` suggests; per plugin this time.
    let public = std::fs::read_to_string(site.path().join("alice.pub")).unwrap();
    let inline = public.lines().nth(1).unwrap();
    site.set_config(&format!("[trust.plugins.echo]\nkeys = [\"{inline}\"]\n"));

    let (code, out) = call_echo(&site);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("plugin `echo`: its signature")
            && out.contains(&format!(
                "is by key {mallory}, which `[trust]` does not trust for it"
            ))
            && out.contains(&format!("it expects a signature by key {alice}")),
        "{out}"
    );
}

#[test]
fn an_unsigned_plugin_is_refused_when_trust_covers_it() {
    let site = echo_site("");
    let alice = keygen(site.path(), "alice");
    site.set_config(&trust_all("alice.pub"));
    let (code, out) = call_echo(&site);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("plugin `echo`: it is not signed (no `")
            && out.contains(&format!("requires a signature by key {alice}"))
            && out.contains("glovebox plugin sign"),
        "{out}"
    );

    // A signature file that is not one is refused too, not ignored.
    std::fs::write(site.path().join("echo.toml.sig"), "hello\n").unwrap();
    let (code, out) = call_echo(&site);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("cannot be read"), "{out}");
}

#[test]
fn without_trust_plugins_load_as_before() {
    let site = echo_site("");
    let (code, out) = call_echo(&site);
    assert_eq!(code, 0, "{out}");
    let (code, out, err) = site.run(&["plugin", "check", manifest(&site).to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("signed:"), "no signature, no line: {out}");

    site.set_config("[trust]\nrequired = false\n[trust.hooks]\n");
    let (code, out) = call_echo(&site);
    assert_ne!(code, 0, "a `[trust]` with no key at all is refused: {out}");
    assert!(out.contains("`[trust]` lists no key"), "{out}");
}

#[test]
fn a_reload_holds_the_new_config_to_trust() {
    let site = echo_site("");
    keygen(site.path(), "alice");
    sign(&manifest(&site), &key(&site, "alice"));
    site.set_config(&trust_all("alice.pub"));
    let mut server = Server::initialized(&site.config(), &[]);
    site.wait_for_control_socket();
    let answer = server.call(1, "echo.echo", json!({"message": "signed"}));
    assert_eq!(answer["result"]["isError"], false, "{answer}");

    // Grants widened behind the signature: the reload is refused, the
    // signed plugin keeps serving.
    let text = std::fs::read_to_string(manifest(&site)).unwrap();
    std::fs::write(manifest(&site), format!("{text}env = [\"HOME\"]\n")).unwrap();
    let (code, _, err) = site.run(&["reload"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not the one signed"), "{err}");
    let answer = server.call(2, "echo.echo", json!({"message": "still here"}));
    assert_eq!(answer["result"]["isError"], false, "{answer}");

    // Reviewed and signed again, the reload goes through.
    sign(&manifest(&site), &key(&site, "alice"));
    let (code, out, err) = site.run(&["reload"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("reloaded `"), "{out}");
}

#[test]
fn a_bare_hook_component_is_held_to_the_configs_trust_by_plugin_check_and_hook_test() {
    let site = echo_site("");
    let alice = keygen(site.path(), "alice");
    sign(&manifest(&site), &key(&site, "alice"));
    // Not a hook of the config: a file checked before it is configured.
    std::fs::copy(
        plugins::HOOK_DESTRUCTIVE,
        site.path().join("new-guard.wasm"),
    )
    .unwrap();
    site.set_config(&trust_all("alice.pub"));
    let file = site.path().join("new-guard.wasm");
    let file = file.to_str().unwrap();
    let request = r#"{"action":"read:files"}"#;

    for args in [
        vec!["plugin", "check", file],
        vec!["hook", "test", file, "--request", request],
    ] {
        let (code, out, err) = site.run(&args);
        assert_eq!(code, 2, "{args:?} unsigned: {out}{err}");
        assert!(
            err.contains("it is not signed") && err.contains(&format!("key {alice}")),
            "{args:?}: {err}"
        );
    }

    sign(&site.path().join("new-guard.wasm"), &key(&site, "alice"));
    let (code, out, err) = site.run(&["plugin", "check", file]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("signed:    by a key `[trust]` lists"), "{out}");
    let (code, out, err) = site.run(&["hook", "test", file, "--request", request]);
    assert_eq!(code, 0, "{out}{err}");

    // Without `[trust]`, an unsigned hook file checks as before.
    std::fs::copy(plugins::HOOK_DESTRUCTIVE, site.path().join("other.wasm")).unwrap();
    site.set_config("");
    let (code, out, err) = site.run(&[
        "plugin",
        "check",
        site.path().join("other.wasm").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("signed:"), "{out}");
}

#[test]
fn a_hook_is_held_to_trust_and_denies_every_call_unsigned() {
    let site = echo_site("");
    let alice = keygen(site.path(), "alice");
    std::fs::copy(plugins::HOOK_DESTRUCTIVE, site.path().join("guard.wasm")).unwrap();
    site.set_config(&format!(
        "[[hook]]\nname = \"guard\"\ncomponent = \"guard.wasm\"\n{}",
        trust_all("alice.pub")
    ));
    sign(&manifest(&site), &key(&site, "alice"));
    let judge = || {
        site.run(&[
            "hook",
            "test",
            "guard",
            "--request",
            r#"{"action":"read:files"}"#,
        ])
    };

    let (code, _, err) = judge();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("hook `guard` cannot be loaded: it is not signed")
            && err.contains(&format!("key {alice}")),
        "{err}"
    );
    // The chain of a serving host fails closed: every call is denied.
    let (code, out) = call_echo(&site);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("guard"), "{out}");

    sign(&site.path().join("guard.wasm"), &key(&site, "alice"));
    let (code, out, err) = judge();
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(call_echo(&site).0, 0);
}
