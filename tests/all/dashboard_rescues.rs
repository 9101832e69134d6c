//! The rescue page's actions (`/ui/rescues`), over the real binary: the
//! forms' POSTs are refused from another origin or `Host` and change
//! nothing; from the page itself, in headless Chromium, an operator assigns
//! an open rescue, records its diagnosis, hands the session a description,
//! a file's content and a spec change, and closes it with a lesson, each by
//! the registry's operation and recorded as theirs; a refused action says
//! why on the page.

use serde_json::Value;

use crate::dashboard::{Browser, http, run_ok, serve, site, start_session};

/// A form's POST as a browser on `origin` sends it, with the login `cookie`.
fn post_form(
    admin: &str,
    path: &str,
    cookie: &str,
    extra: &[(&str, &str)],
    body: &str,
) -> crate::dashboard::Answer {
    let mut headers = vec![
        ("Content-Type", "application/x-www-form-urlencoded"),
        ("Cookie", cookie),
    ];
    headers.extend_from_slice(extra);
    http(admin, "POST", path, &headers, body)
}

/// The text of the page's `#flash.CLASS` once it says `word`: a click on a
/// form's button returns before the browser has the answer's page, and the
/// page it leaves may show the flash of the action before.
async fn flash_saying(b: &Browser, class: &str, word: &str) -> String {
    let css = format!("#flash.{class}");
    let start = std::time::Instant::now();
    let mut last = String::new();
    loop {
        if let Ok(el) = b.client.find(fantoccini::Locator::Css(&css)).await
            && let Ok(text) = el.text().await
        {
            if text.contains(word) {
                return text;
            }
            last = text;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "no `{css}` saying `{word}` within 60 s (last: `{last}`)"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_assigns_diagnoses_injects_and_closes_a_rescue_from_its_page_in_chromium() {
    let (site, operator, _agent) = site();
    let served = serve(&site);
    let admin = served.admin.as_str();
    start_session(&site, "stuck");
    let rescue = site.json(&["rescue", "open", "stuck"]);
    let rid = rescue["id"].as_str().unwrap().to_string();
    let show = || site.json(&["rescue", "show", &rid]);

    // Plain HTTP first: a login cookie, then the forms' POSTs from elsewhere.
    let own_origin = format!("http://{admin}");
    let login = http(
        admin,
        "POST",
        "/ui/login",
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Origin", &own_origin),
        ],
        &format!("token={operator}"),
    );
    assert_eq!(login.status, 303, "{}", login.body);
    let cookie = login
        .header("set-cookie")
        .expect("a login cookie")
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let assign = format!("/ui/rescues/{rid}/assign");
    for headers in [
        vec![],
        vec![("Origin", "http://evil.example")],
        vec![("Sec-Fetch-Site", "cross-site")],
        vec![("Origin", "null")],
        vec![("Origin", own_origin.as_str()), ("Host", "evil.example")],
    ] {
        let a = post_form(admin, &assign, &cookie, &headers, "to=mallory");
        assert_eq!(a.status, 403, "{headers:?}: {}", a.body);
    }
    let resolve = format!("/ui/rescues/{rid}/resolve");
    let a = post_form(
        admin,
        &resolve,
        &cookie,
        &[("Origin", "http://evil.example")],
        "outcome=abandoned",
    );
    assert_eq!(a.status, 403, "{}", a.body);
    let record = show();
    assert!(
        record["assignee"].is_null(),
        "a refused POST assigned it: {record}"
    );
    assert!(
        record["outcome"].is_null(),
        "a refused POST closed it: {record}"
    );
    // Without a login the form's POST changes nothing either.
    let a = http(
        admin,
        "POST",
        &assign,
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Origin", &own_origin),
        ],
        "to=mallory",
    );
    assert!(a.status >= 300, "{}: {}", a.status, a.body);
    assert!(
        show()["assignee"].is_null(),
        "a POST without a login assigned it"
    );

    // The page, in a browser, as the signed-in operator.
    let browser = Browser::start(admin).await;
    let b = &browser;
    b.goto("/ui/login").await;
    b.find("#token").await.send_keys(&operator).await.unwrap();
    b.find("#login-submit").await.click().await.unwrap();
    b.find("table#sessions").await;
    b.goto("/ui/rescues").await;
    b.find(&format!("#rescue-{rid}")).await;
    b.shoot("rescue-actions").await;
    b.assert_no_errors("the rescues page with an open rescue")
        .await;

    // Assign.
    b.find(&format!("#assignee-{rid}"))
        .await
        .send_keys("bob")
        .await
        .unwrap();
    b.find(&format!("#assign-{rid}"))
        .await
        .click()
        .await
        .unwrap();
    let flash = flash_saying(b, "good", "assigned to bob").await;
    assert!(
        flash.contains(&rid) && flash.contains("assigned to bob"),
        "{flash}"
    );
    assert_eq!(show()["assignee"], "bob");

    // Diagnose: a category, two pieces of evidence (a line each), the cause.
    b.hook().await;
    b.find(&format!("#category-{rid} option[value=\"tool_defect\"]"))
        .await
        .click()
        .await
        .unwrap();
    b.find(&format!("#evidence-{rid}"))
        .await
        .send_keys("panics every time\nsame input")
        .await
        .unwrap();
    b.find(&format!("#root-cause-{rid}"))
        .await
        .send_keys("the tool is broken")
        .await
        .unwrap();
    b.find(&format!("#diagnose-{rid}"))
        .await
        .click()
        .await
        .unwrap();
    flash_saying(b, "good", "diagnosed").await;
    let record = show();
    assert_eq!(record["diagnosis"]["category"], "tool_defect", "{record}");
    assert_eq!(
        record["diagnosis"]["evidence"],
        serde_json::json!(["panics every time", "same input"])
    );
    assert_eq!(record["diagnosis"]["root_cause"], "the tool is broken");

    // An empty injection is refused, saying why, and hands over nothing.
    b.hook().await;
    b.find(&format!("#inject-{rid}"))
        .await
        .click()
        .await
        .unwrap();
    flash_saying(b, "error", "nothing to inject").await;
    assert_eq!(show()["injections"], serde_json::json!([]));
    // The browser logs the refusal's status (400), and nothing else.
    let errors = b.console_errors().await;
    assert!(
        errors
            .iter()
            .all(|e| e.contains(&format!("/ui/rescues/{rid}/inject")) && e.contains("400")),
        "{errors:#?}"
    );

    // Inject: a description, a file's content under its path, a spec change.
    let spec = "# Deploy\nUse the staging database with --ssl.";
    b.goto("/ui/rescues").await;
    b.find(&format!("#description-{rid}"))
        .await
        .send_keys("the deploy needs TLS to the database")
        .await
        .unwrap();
    // A rescue opened meanwhile changes the page's rescues (a live update);
    // the form being filled is not swapped away under the operator.
    start_session(&site, "other");
    let other = site.json(&["rescue", "open", "other"]);
    let other = other["id"].as_str().unwrap().to_string();
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let kept = b
        .client
        .execute(
            &format!("return document.getElementById('description-{rid}').value;"),
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(kept, "the deploy needs TLS to the database");
    b.find(&format!("#file-path-{rid}"))
        .await
        .send_keys("runbook.md")
        .await
        .unwrap();
    b.find(&format!("#file-content-{rid}"))
        .await
        .send_keys(spec)
        .await
        .unwrap();
    b.find(&format!("#spec-changes-{rid}"))
        .await
        .send_keys("deploy to staging first")
        .await
        .unwrap();
    b.find(&format!("#inject-{rid}"))
        .await
        .click()
        .await
        .unwrap();
    flash_saying(b, "good", "injected").await;
    b.find(&format!("#rescue-{other}")).await;
    let record = show();
    let injection = &record["injections"][0];
    assert_eq!(
        injection["description"], "the deploy needs TLS to the database",
        "{record}"
    );
    assert_eq!(injection["attached"][0]["path"], "runbook.md", "{record}");
    assert_eq!(injection["spec_changes"][0], "deploy to staging first");
    // The session's log holds the content as typed.
    let log = run_ok(&site, &["log", "export", "stuck"]);
    assert!(
        log.contains("Use the staging database with --ssl."),
        "the file's content is not in the session's log: {log}"
    );

    // Close it with a lesson: proposed to the project's memory, by the operator.
    b.hook().await;
    b.find(&format!("#outcome-{rid} option[value=\"resolved\"]"))
        .await
        .click()
        .await
        .unwrap();
    b.find(&format!("#enrich-{rid}"))
        .await
        .send_keys("the deploy needs --ssl")
        .await
        .unwrap();
    b.find(&format!("#resolve-{rid}"))
        .await
        .click()
        .await
        .unwrap();
    flash_saying(b, "good", "resolved").await;
    assert!(
        b.client
            .find_all(fantoccini::Locator::Css(&format!("#rescue-{rid}")))
            .await
            .unwrap()
            .is_empty(),
        "a closed rescue still has its forms"
    );
    b.shoot("rescue-closed").await;
    b.assert_no_errors("the rescues page after closing").await;
    let record = show();
    assert_eq!(record["outcome"], "resolved", "{record}");
    let review = site.json(&["memory", "review", "--json"]);
    let lesson: &Value = review
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["provenance"]["rescue"] == rid.as_str())
        .unwrap_or_else(|| panic!("the lesson is not proposed: {review}"));
    assert_eq!(lesson["text"], "the deploy needs --ssl");
    assert_eq!(lesson["provenance"]["by"], "ops", "{lesson}");
    // The session's log, with the handed-over content, still verifies.
    run_ok(&site, &["log", "verify", "stuck"]);
    browser.client.clone().close().await.unwrap();
}
