//! The fleet's shape over the real binary: a principal's card (the
//! registry) on the dashboard's principals page, the card a session
//! recorded at its start on its page and in the sessions list after the
//! operator changed the model, spend by principal split by that model in
//! `glovebox billing` and on the billing page, and the compliance score of
//! `glovebox doctor` with its daily trend on the doctor page (records the
//! sweep of the running server writes, and older ones seeded in the store).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use glovebox::billing::{day_of, format_day, parse_date};
use glovebox::doctor::{ComplianceRecords, DailyScore, Score};
use serde_json::json;

use crate::dashboard::{bearer, http, serve};
use crate::mcp::Server;
use crate::principals::add;
use crate::util::Site;

/// Starts session `name` as `scorer` over MCP and reports `cost` of model use in it.
fn session_with_usage(site: &Site, name: &str, cost: f64) {
    let mut server = Server::initialized(&site.config(), &["--as", "scorer"]);
    server.ok(
        1,
        "session_start",
        json!({"role": "workagent", "project": "leads", "name": name}),
    );
    server.ok(2, "session_usage", json!({"tokens_in": 100, "cost": cost}));
}

fn seeded(day: &str, score: u32) -> DailyScore {
    DailyScore {
        day: day.into(),
        at_ms: 1,
        score: Score {
            score,
            warnings: u64::from((100 - score) / 10),
            notices: 0,
        },
        rules: Default::default(),
    }
}

#[test]
fn the_dashboard_shows_the_registry_the_recorded_card_spend_by_model_and_the_compliance_trend() {
    let site = Site::new(false);
    site.set_config("[detector]\nsweep_interval = \"1s\"\n");
    let ops = add(&site, &["ops", "--kind", "operator"]);
    add(
        &site,
        &[
            "scorer",
            "--kind",
            "agent",
            "--roles",
            "workagent",
            "--projects",
            "leads",
            "--model",
            "m-small",
            "--agent-version",
            "1",
            "--owner",
            "data-team",
            "--description",
            "<b>scores</b> leads",
        ],
    );
    session_with_usage(&site, "leads-old", 1.5);
    // The operator moves the agent to another model.
    let config = std::fs::read_to_string(site.config()).unwrap();
    let moved = config
        .replace("model = \"m-small\"", "model = \"m-large\"")
        .replace("version = \"1\"", "version = \"2\"");
    assert_ne!(config, moved, "{config}");
    std::fs::write(site.config(), moved).unwrap();
    session_with_usage(&site, "leads-new", 4.0);

    // Billing by principal: the spend split by the model each session
    // recorded, whatever the config says today.
    let report = site.json(&["billing", "--by", "principal", "--json"]);
    let scorer = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == "scorer")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(scorer["total"]["model_cost"], 5.5, "{scorer}");
    assert_eq!(scorer["models"]["m-small@1"]["total"]["model_cost"], 1.5);
    assert_eq!(scorer["models"]["m-small@1"]["sessions"], 1);
    assert_eq!(scorer["models"]["m-large@2"]["model"], "m-large");
    assert_eq!(scorer["models"]["m-large@2"]["total"]["model_cost"], 4.0);
    let (code, text, err) = site.run(&["billing", "--by", "principal"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("  model m-small@1: 1 sessions, 0 calls, 0 background, cost 1.5000"),
        "{text}"
    );
    let by_session = site.json(&["billing", "--by", "session", "--json"]);
    let old = by_session["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["label"] == "leads-old")
        .unwrap_or_else(|| panic!("{by_session}"));
    assert_eq!(old["agent"]["model"], "m-small", "{old}");

    // Older daily scores, as earlier sweeps left them.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let today = day_of(now);
    let ago = |days: i64| format_day(parse_date(&today).unwrap() - days);
    {
        let config = glovebox::HostConfig::load(&site.config()).unwrap();
        let durable = glovebox::open_sessions(&config).unwrap();
        let records = ComplianceRecords(durable.storage.clone());
        for (day, score) in [(ago(40), 10), (ago(3), 60), (ago(1), 80)] {
            assert!(records.record(&seeded(&day, score)).unwrap());
        }
    }

    let served = serve(&site);
    let auth = bearer(&ops);
    let get = |path: &str| get_from(&served.admin, &auth, path);

    // The registry: today's card, escaped.
    let page = get("/ui/principals");
    assert!(page.contains("<tr data-principal=\"scorer\">"), "{page}");
    assert!(page.contains("<td class=\"card-model\">m-large</td><td class=\"card-version\">2</td><td class=\"card-owner\">data-team</td><td class=\"card-description\">&lt;b&gt;scores&lt;/b&gt; leads</td>"), "{page}");
    assert!(!page.contains("<b>scores</b>"), "{page}");

    // A session's page: the card it recorded at start, and today's.
    let page = get("/ui/sessions/leads-old");
    assert!(
        page.contains("<p id=\"agent-card\">agent at start: model <b class=\"card-model\">m-small</b> · version <b class=\"card-version\">1</b> · owner <b class=\"card-owner\">data-team</b> · description <b class=\"card-description\">&lt;b&gt;scores&lt;/b&gt; leads</b></p>"),
        "{page}"
    );
    assert!(
        page.contains("<p id=\"agent-card-now\" class=\"warn\">the principal's card has changed since: now model <b class=\"card-model\">m-large</b>"),
        "{page}"
    );
    let page = get("/ui/sessions/leads-new");
    assert!(
        page.contains("model <b class=\"card-model\">m-large</b>"),
        "{page}"
    );
    assert!(!page.contains("agent-card-now"), "{page}");
    // The list: each session's recorded model under its owner.
    let page = get("/ui/sessions");
    assert!(
        page.contains("scorer<br><span class=\"muted model\">m-small</span>"),
        "{page}"
    );
    assert!(
        page.contains("scorer<br><span class=\"muted model\">m-large</span>"),
        "{page}"
    );

    // The billing page: by principal, a row per model.
    let page = get("/ui/billing");
    let at = page
        .find("id=\"billing-principal\"")
        .unwrap_or_else(|| panic!("{page}"));
    let section = &page[at..];
    assert!(
        section.contains("<tr class=\"model-share\" data-model=\"m-small@1\">"),
        "{section}"
    );
    assert!(
        section.contains("<tr class=\"model-share\" data-model=\"m-large@2\">"),
        "{section}"
    );

    // The score: `doctor` (over the server) and the doctor page agree,
    // and today's record comes from the server's own sweep.
    let (code, out, err) = site.run(&["doctor", "--json", "--score"]);
    let scored: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let findings = scored["findings"].as_array().unwrap();
    let warnings = findings
        .iter()
        .filter(|f| f["severity"] == "warning")
        .count() as i64;
    // Exit 1 on a warning, as ever (the plugins have no digest pin).
    assert_eq!(code, i32::from(warnings > 0), "{err}");
    assert!(warnings > 0, "{scored}");
    let notices = findings.len() as i64 - warnings;
    let want = (100 - 10 * warnings - 2 * notices).max(0);
    assert_eq!(scored["score"], want, "{scored}");
    assert_eq!(scored["weights"], json!({"warning": 10, "notice": 2}));
    let (_, text, _) = site.run(&["doctor"]);
    assert!(
        text.contains(&format!("compliance score: {want}/100 (")),
        "{text}"
    );
    let today_row = format!("<tr data-day=\"{today}\"><td>{today}</td><td>{want}</td>");
    let start = Instant::now();
    let page = loop {
        let page = get("/ui/doctor");
        if page.contains(&today_row) {
            break page;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no record of today: {page}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        page.contains(&format!(
            "<p id=\"compliance-score\">compliance score <b>{want}</b>/100"
        )),
        "{page}"
    );
    assert!(page.contains("<svg id=\"compliance-trend\""), "{page}");
    assert!(page.contains("<polyline class=\"score\""), "{page}");
    for (day, score) in [(ago(3), 60), (ago(1), 80)] {
        assert!(
            page.contains(&format!(
                "<tr data-day=\"{day}\"><td>{day}</td><td>{score}</td>"
            )),
            "{page}"
        );
        assert!(
            page.contains(&format!("<title>{day}: {score}</title>")),
            "{page}"
        );
    }
    // Outside the 30 days shown.
    assert!(!page.contains(&ago(40)), "{page}");

    // The same through the HTTP API (`doctor.score`): the score now, its
    // weights, and the recorded days, oldest first, the 40-day-old one left out.
    let api: serde_json::Value = serde_json::from_str(&get("/api/v1/doctor/score")).unwrap();
    assert_eq!(api["score"], want, "{api}");
    assert_eq!(api["weights"], json!({"warning": 10, "notice": 2}), "{api}");
    assert_eq!(
        api["findings"].as_array().map(Vec::len),
        Some(findings.len())
    );
    let days: Vec<(String, i64)> = api["trend"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["day"].as_str().unwrap().to_string(),
                d["score"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        days,
        [(ago(3), 60), (ago(1), 80), (today.clone(), want)],
        "{api}"
    );

    // A restart the same day writes no second record: today's keeps the
    // time the first sweep wrote it.
    let recorded = || {
        let config = glovebox::HostConfig::load(&site.config()).unwrap();
        let durable = glovebox::open_sessions(&config).unwrap();
        ComplianceRecords(durable.storage.clone())
            .get(&today)
            .unwrap()
            .unwrap_or_else(|| panic!("no record of {today}"))
    };
    drop(served);
    let first = recorded();
    let served = serve(&site);
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        get_from(&served.admin, &auth, "/ui/doctor").contains(&today_row),
        "today's record after a restart"
    );
    drop(served);
    assert_eq!(recorded(), first);
}

/// A page of the dashboard at `admin`, as the operator of token `auth`.
fn get_from(admin: &str, auth: &str, path: &str) -> String {
    let answer = http(admin, "GET", path, &[("Authorization", auth)], "");
    assert_eq!(answer.status, 200, "{path}: {}", answer.body);
    answer.body
}
