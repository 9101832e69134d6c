//! `[[schedule]]` and `[[trigger]]`: each rule refuses a bad entry naming
//! its key and the fix, and a good one loads as written.

use super::super::{Action, NotifyKind, Role, Severity, TriggerOn};
use super::{Fixture, assert_error};

const NOTIFY: &str = "hooks = \"none\"\n[[notify]]\nname = \"ops\"\nurl = \"http://127.0.0.1:9/x\"\nevents = [\"job_failed\"]\n";

fn schedule(body: &str) -> String {
    format!("{NOTIFY}[[schedule]]\nname = \"watch\"\n{body}")
}

const CALL: &str = "cron = \"0 */6 * * *\"\naction = \"call\"\nsession = \"billing-watch\"\nproject = \"billing\"\ntool = \"report.overdue\"\ninput = { days = 30 }\nalert_if = \"count > 0\"\nnotify = [\"ops\"]\n";

#[test]
fn a_schedule_and_triggers_load_as_written() {
    let fx = Fixture::new();
    let secret = fx.write("hook.secret", "0123456789abcdef0123\n");
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let text = format!(
        "{}\n[[trigger]]\nname = \"ci\"\non = \"flag:warning\"\nfrom_project = \"ci\"\naction = \"start\"\nsession = \"triage\"\nproject = \"ci\"\nrole = \"supervisor\"\nobjective = \"look\"\nnext_steps = [\"a\"]\n\n[[trigger]]\nname = \"deploy\"\non = \"webhook\"\nsecret_file = \"hook.secret\"\naction = \"sweep\"\n",
        schedule(CALL)
    );
    let c = fx.host(&text).unwrap();
    let s = &c.schedules[0];
    assert_eq!(s.name, "watch");
    assert!(
        s.catch_up,
        "missed fires run once at start unless turned off"
    );
    assert_eq!(s.cron.as_str(), "0 */6 * * *");
    match &s.run.action {
        Action::Call {
            session,
            tool,
            input,
        } => {
            assert_eq!(session.name, "billing-watch");
            assert_eq!(session.role, Role::Workagent);
            assert_eq!(tool, "report.overdue");
            assert_eq!(input, &serde_json::json!({"days": 30}));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.run.alert_if.as_ref().unwrap().as_str(), "count > 0");
    assert_eq!(s.run.notify, vec!["ops".to_string()]);
    assert_eq!(
        c.triggers[0].on,
        TriggerOn::Event {
            kind: NotifyKind::Flag,
            min_severity: Severity::Warning
        }
    );
    assert_eq!(c.triggers[0].from_project.as_deref(), Some("ci"));
    assert_eq!(c.triggers[1].on, TriggerOn::Webhook);
    assert_eq!(
        c.triggers[1].secret.as_deref(),
        Some("0123456789abcdef0123")
    );
    assert!(!format!("{:?}", c.triggers[1]).contains("0123456789"));
}

#[test]
fn an_invalid_cron_expression_is_refused_naming_the_rule() {
    let fx = Fixture::new();
    let file = fx.path("glovebox.toml");
    for bad in ["0 */6 * *", "61 * * * *", "every 6 hours", "0 0 30 2 *"] {
        let text = schedule(&CALL.replace("0 */6 * * *", bad));
        assert_error(
            &fx.host_error(&text),
            &file,
            "schedule[0].cron",
            &[bad, "minute hour day-of-month month day-of-week"],
        );
    }
    let text = schedule(&CALL.replace("cron = \"0 */6 * * *\"\n", ""));
    assert_error(
        &fx.host_error(&text),
        &file,
        "schedule[0].cron",
        &["not a cron expression"],
    );
}

#[test]
fn each_action_rule_names_the_key_and_the_fix() {
    let fx = Fixture::new();
    let file = fx.path("glovebox.toml");
    let bad = |body: &str, key: &str, parts: &[&str]| {
        assert_error(&fx.host_error(&schedule(body)), &file, key, parts);
    };
    bad(
        &CALL.replace("\"call\"", "\"explode\""),
        "schedule[0].action",
        &["`explode` is not an action", "sweep"],
    );
    bad(
        &CALL.replace("tool = \"report.overdue\"\n", ""),
        "schedule[0].tool",
        &["names no tool"],
    );
    bad(
        &CALL.replace("session = \"billing-watch\"\n", ""),
        "schedule[0].session",
        &["named session"],
    );
    bad(
        &CALL.replace("project = \"billing\"\n", ""),
        "schedule[0].project",
        &["project is missing"],
    );
    bad(
        &CALL.replace("notify = [\"ops\"]", "notify = [\"pager\"]"),
        "schedule[0].notify",
        &["`pager` is not a `[[notify]]` target", "`ops`"],
    );
    bad(
        &CALL.replace("notify = [\"ops\"]\n", ""),
        "schedule[0].alert_if",
        &["no one to tell"],
    );
    bad(
        &CALL.replace("count > 0", "count is big"),
        "schedule[0].alert_if",
        &["comparison"],
    );
    bad(
        &CALL.replace("input = { days = 30 }", "input = 3"),
        "schedule[0].input",
        &["not a table"],
    );
    bad(
        &format!("{CALL}role = \"king\"\n"),
        "schedule[0].role",
        &["unknown role `king`"],
    );
    bad(
        &format!("{CALL}objective = \"x\"\n"),
        "schedule[0].objective",
        &["not a setting of `action = \"call\"`"],
    );
    bad(
        "cron = \"@daily\"\naction = \"start\"\nsession = \"s\"\nproject = \"p\"\n",
        "schedule[0].objective",
        &["no objective"],
    );
    bad(
        "cron = \"@daily\"\naction = \"sweep\"\nsession = \"s\"\n",
        "schedule[0].session",
        &["not a setting of `action = \"sweep\"`"],
    );
    // Names are unique and plain.
    let twice = format!("{}[[schedule]]\nname = \"watch\"\n{CALL}", schedule(CALL));
    assert_error(
        &fx.host_error(&twice),
        &file,
        "schedule[1].name",
        &["two schedules are named `watch`"],
    );
    let text = schedule(CALL).replace("name = \"watch\"", "name = \"a/b\"");
    assert_error(
        &fx.host_error(&text),
        &file,
        "schedule[0].name",
        &["not a name"],
    );
    let e = fx.host_error(&schedule(&format!("{CALL}every = 3\n")));
    assert!(e.to_string().contains("unknown"), "{e}");
}

#[test]
fn each_trigger_rule_names_the_key_and_the_fix() {
    let fx = Fixture::new();
    let file = fx.path("glovebox.toml");
    let trigger =
        |body: &str| format!("{NOTIFY}[[trigger]]\nname = \"t\"\naction = \"sweep\"\n{body}");
    let bad = |body: &str, key: &str, parts: &[&str]| {
        assert_error(&fx.host_error(&trigger(body)), &file, key, parts);
    };
    bad(
        "on = \"tuesday\"\n",
        "trigger[0].on",
        &["not one event", "webhook"],
    );
    bad("on = \"*\"\n", "trigger[0].on", &["not one event"]);
    bad(
        "on = \"webhook\"\n",
        "trigger[0].secret_file",
        &["no shared secret"],
    );
    bad(
        "on = \"webhook\"\nsecret = \"short\"\n",
        "trigger[0].secret",
        &["shorter than 16"],
    );
    bad(
        "on = \"job_failed\"\nsecret = \"0123456789abcdef\"\n",
        "trigger[0].secret",
        &["only a webhook trigger"],
    );
    bad(
        "on = \"webhook\"\nsecret = \"0123456789abcdef\"\nfrom_project = \"x\"\n",
        "trigger[0].from_project",
        &["comes from outside"],
    );
}
