//! Hooks that judge a call by the HTTP request it makes, over the real binary:
//! the fetch tool's manifest declares which input fields hold the URL and the
//! method (`[tools.fetch] http`), the host reads them (the path as the egress's
//! `paths` rules read it) into the 0.2.0 hook request, and the example
//! http-guard hook denies or asks by method, host and path (issue 40).

use crate::util::{Site, plugins};

fn site() -> Site {
    Site::with_config(
        &format!(
            "[[hook]]\nname = \"http-guard\"\ncomponent = \"{}\"\n\
             [[hook.settings.deny]]\nmethod = \"DELETE\"\n\
             [[hook.settings.deny]]\npath = \"/admin*\"\n\
             [[hook.settings.ask]]\nmethod = [\"POST\", \"PUT\", \"PATCH\"]\n",
            plugins::HOOK_HTTP_GUARD
        ),
        &[(
            "fetch.toml",
            format!(
                "name = \"fetch\"\ncomponent = \"{}\"\n[tools.fetch]\nhttp = {{ url = \"url\", method = \"method\" }}\n",
                plugins::TOOL_HTTP_FETCH
            ),
        )],
    )
}

/// `glovebox call fetch.fetch` with `input`: (exit code, stderr).
fn fetch(site: &Site, input: &str) -> (i32, String) {
    let (code, _, err) = site.run(&["call", "fetch.fetch", "--input", input]);
    (code, err)
}

#[test]
fn a_hook_judges_a_calls_http_request_by_method_host_and_path() {
    let site = site();
    // A detour through `..`, encoded, reaches the path the rule names.
    let (code, err) = fetch(
        &site,
        r#"{"url": "http://127.0.0.1:9/repos/acme/%2e%2e/%2e%2e/admin/users", "method": "get"}"#,
    );
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("denied by hook `http-guard`")
            && err.contains("fetch.fetch may not send GET 127.0.0.1/admin/users: rule `deny[1]` of this hook denies it"),
        "{err}"
    );
    let (code, err) = fetch(
        &site,
        r#"{"url": "http://127.0.0.1:9/repos/acme/x", "method": "DELETE"}"#,
    );
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("rule `deny[0]`"), "{err}");
    // A write asks a human (outside a session, nobody can answer: refused).
    let (code, err) = fetch(
        &site,
        r#"{"url": "http://127.0.0.1:9/repos/acme/x", "method": "PUT"}"#,
    );
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains(
            "fetch.fetch would send PUT 127.0.0.1/repos/acme/x (rule `ask[0]`): approve to send it"
        ),
        "{err}"
    );
    // A read the rules let through runs: the egress then refuses it, since
    // the plugin has no `[[http]]` grant.
    let (code, err) = fetch(&site, r#"{"url": "http://127.0.0.1:9/repos/acme/x"}"#);
    assert_ne!(code, 0, "{err}");
    assert!(!err.contains("denied by hook"), "{err}");
    // A URL the host cannot read: the hook cannot tell where it goes.
    let (code, err) = fetch(&site, r#"{"url": "no url at all"}"#);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("a URL this hook cannot read"), "{err}");
}
