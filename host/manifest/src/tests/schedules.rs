//! `[[schedule]]` and `[[trigger]]`: each rule refuses a bad entry naming
//! its key and the fix, and a good one loads as written.

use super::super::{Action, NotifyKind, Role, Severity, TriggerOn};
use super::Fixture;

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

// Threat 57: an event trigger has a cooldown unless the operator says
// otherwise, so an agent that causes events in a loop fires it at most
// once per cooldown.
#[test]
fn threat_57_an_event_trigger_has_a_cooldown_by_default() {
    let fx = Fixture::new();
    let trigger = |body: &str| {
        format!(
            "{NOTIFY}[[trigger]]\nname = \"t\"\naction = \"sweep\"\non = \"job_failed\"\n{body}"
        )
    };
    let c = fx.host(&trigger("")).unwrap();
    assert_eq!(c.triggers[0].cooldown, std::time::Duration::from_secs(60));
    let c = fx.host(&trigger("cooldown = \"10s\"\n")).unwrap();
    assert_eq!(c.triggers[0].cooldown, std::time::Duration::from_secs(10));
    let c = fx.host(&trigger("cooldown = \"0s\"\n")).unwrap();
    assert_eq!(c.triggers[0].cooldown, std::time::Duration::ZERO);
}
