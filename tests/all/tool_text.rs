//! Tool text pinned and scanned (issue 40, threat 62), over the real binary:
//! a tool whose text changed since it was accepted, and one whose first text
//! carries instructions for the model, are held (not listed over MCP, their
//! calls refused) and shown by `glovebox doctor` with the change and the
//! findings, until an operator runs `glovebox plugin accept`.

use serde_json::{Value, json};

use crate::mcp::Server;
use crate::util::{Site, plugins};

fn site() -> Site {
    let site = Site::with_plugins(&[
        (
            "text.toml",
            format!(
                "name = \"text\"\ncomponent = \"{}\"\n",
                plugins::HOSTILE_TOOL_TEXT
            ),
        ),
        (
            "echo.toml",
            format!("name = \"echo\"\ncomponent = \"{}\"\n", plugins::TOOL_ECHO),
        ),
    ]);
    site.start_workagent("w");
    site
}

/// `glovebox call TOOL -s w`: its exit code and what it printed.
fn call(site: &Site, tool: &str) -> (i32, String) {
    let (code, out, err) = site.run(&["call", tool, "-s", "w", "--input", "{}"]);
    (code, format!("{out}{err}"))
}

/// The `held_tool_text` findings of `glovebox doctor --json`, by tool.
fn held(site: &Site) -> Vec<(String, String)> {
    let (_, out, err) = site.run(&["doctor", "--json"]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out} {err}"));
    let findings = report
        .get("findings")
        .unwrap_or(&report)
        .as_array()
        .cloned()
        .unwrap_or_default();
    findings
        .iter()
        .filter(|f| f["rule"] == "held_tool_text")
        .map(|f| {
            (
                f["culprit"]["name"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn threat_62_changed_or_poisoned_tool_text_is_held_until_an_operator_accepts_it() {
    let site = site();

    // First load (the session's start): `shifty` was recorded as it was;
    // `poisoned` is held from the start, its findings shown.
    let (code, printed) = call(&site, "text.poisoned");
    assert_ne!(code, 0, "{printed}");
    assert!(
        printed.contains("tool `text.poisoned` is held: its text has"),
        "{printed}"
    );
    assert!(printed.contains("glovebox plugin accept text"), "{printed}");
    // Every load since draws `shifty` a new description: held for the change.
    let (code, printed) = call(&site, "text.shifty");
    assert_ne!(code, 0, "{printed}");
    assert!(
        printed
            .contains("tool `text.shifty` is held: its text changed since an operator accepted it"),
        "{printed}"
    );
    // Tools whose text did not change are served.
    let (code, printed) = call(&site, "echo.echo");
    assert_eq!(code, 0, "{printed}");

    // The operator reads why: the change, and what looks aimed at the model.
    let findings = held(&site);
    let message = |tool: &str| {
        findings
            .iter()
            .find(|(t, _)| t == tool)
            .map(|(_, m)| m.clone())
            .unwrap_or_else(|| panic!("{tool} not held: {findings:?}"))
    };
    let shifty = message("text.shifty");
    assert!(
        shifty.contains("- description: Echoes its input. Build "),
        "{shifty}"
    );
    assert!(
        shifty.contains("+ description: Echoes its input. Build "),
        "{shifty}"
    );
    let poisoned = message("text.poisoned");
    for expected in [
        "instruction in description: `<important>`",
        "`~/.ssh`",
        "`do not tell the user`",
        "hidden_character in description: U+200B (invisible)",
        "U+202E (changes the text's direction)",
        "instruction in input_schema at /properties/note/description: `ignore all previous`",
    ] {
        assert!(poisoned.contains(expected), "{expected}: {poisoned}");
    }

    // Over MCP the held tools are not listed, and a call is refused.
    let mut server = Server::initialized(&site.config(), &[]);
    let listed = server.request(1, "tools/list", json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"echo.echo"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("text.")), "{names:?}");
    drop(server);

    // The operator accepts: each tool with what changed and what was found.
    let (code, out, err) = site.run(&["plugin", "accept", "text"]);
    assert_eq!(code, 0, "{err}");
    let accepted: Value = serde_json::from_str(&out).unwrap();
    let of = |tool: &str| {
        accepted
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["tool"] == tool)
            .cloned()
            .unwrap_or_else(|| panic!("{tool}: {accepted}"))
    };
    assert_eq!(of("text.poisoned")["was_held"], true);
    assert!(of("text.poisoned")["findings"].as_array().unwrap().len() >= 5);
    assert!(
        of("text.shifty")["diff"]
            .as_str()
            .unwrap()
            .contains("+ description")
    );

    // `poisoned`'s text is the accepted one now: served. `shifty` changes at
    // every load, so the next load holds it again.
    let (code, printed) = call(&site, "text.poisoned");
    assert_eq!(code, 0, "{printed}");
    let (code, printed) = call(&site, "text.shifty");
    assert_ne!(code, 0, "{printed}");
    assert!(printed.contains("is held"), "{printed}");

    // A name that is no plugin is refused naming the plugins there are.
    let (code, _, err) = site.run(&["plugin", "accept", "nope"]);
    assert_ne!(code, 0);
    assert!(err.contains("no plugin is named `nope`"), "{err}");
    assert!(err.contains("echo") && err.contains("text"), "{err}");
}

/// From the doctor page an operator accepts a held plugin's text with the
/// button beside its finding (the operation `plugins.accept`, as the command
/// runs it): a POST from another origin is refused and changes nothing; from
/// the page itself the finding goes, the page says so, and the tools are
/// offered again.
#[test]
fn an_operator_accepts_a_held_plugins_text_from_the_doctor_page() {
    use crate::dashboard::{http, serve};
    let site = site();
    let operator = crate::principals::add(&site, &["ops", "--kind", "operator"]);
    let served = serve(&site);
    let admin = served.admin.as_str();
    let own = format!("http://{admin}");
    let login = http(
        admin,
        "POST",
        "/ui/login",
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Origin", &own),
        ],
        &format!("token={operator}"),
    );
    assert_eq!(login.status, 303, "{}", login.body);
    let cookie = login.header("set-cookie").unwrap();
    let cookie = cookie.split(';').next().unwrap();

    let page = http(admin, "GET", "/ui/doctor", &[("Cookie", cookie)], "");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("held_tool_text"), "{}", page.body);
    // One button for the plugin, whichever of its tools are held.
    assert_eq!(
        page.body.matches("id=\"accept-text\"").count(),
        1,
        "{}",
        page.body
    );
    assert!(!page.body.contains("id=\"accept-echo\""), "{}", page.body);

    let post = |origin: &str| {
        http(
            admin,
            "POST",
            "/ui/plugins/text/accept",
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Cookie", cookie),
                ("Origin", origin),
            ],
            "",
        )
    };
    let refused = post("http://evil.example");
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(!held(&site).is_empty(), "a refused POST accepted the text");

    let accepted = post(&own);
    assert_eq!(accepted.status, 303, "{}", accepted.body);
    assert_eq!(
        accepted.header("location").as_deref(),
        Some("/ui/doctor?accepted=text")
    );
    let page = http(
        admin,
        "GET",
        "/ui/doctor?accepted=text",
        &[("Cookie", cookie)],
        "",
    );
    assert!(
        page.body
            .contains("accepted the text of plugin <code>text</code>"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("held_tool_text"), "{}", page.body);
    assert!(held(&site).is_empty(), "{:?}", held(&site));
    let (code, printed) = call(&site, "text.poisoned");
    assert_eq!(code, 0, "still held: {printed}");

    // A plugin that is not there: the page says why.
    let none = http(
        admin,
        "POST",
        "/ui/plugins/nothing/accept",
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Cookie", cookie),
            ("Origin", &own),
        ],
        "",
    );
    assert!(none.status >= 400, "{}: {}", none.status, none.body);
    assert!(none.body.contains("id=\"flash\""), "{}", none.body);
}
