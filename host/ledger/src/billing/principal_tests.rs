//! The report grouped by principal: a principal's spend split by the model
//! its sessions recorded when they started, so a change of model in the
//! middle of a range shows what each model cost; grouped by session, each
//! session's recorded card.

use std::collections::HashSet;
use std::sync::Arc;

use super::*;
use crate::manifest::{AgentCard, Principal, PrincipalKind};
use crate::session::{Role, StartSession};
use crate::storage::{Durability, SledStore, Storage};

fn scorer(model: &str, version: &str) -> Principal {
    Principal {
        name: "scorer".into(),
        kind: PrincipalKind::Agent,
        roles: vec![Role::Workagent],
        projects: vec!["*".into()],
        tags: Vec::new(),
        approve_by: Default::default(),
        card: AgentCard {
            model: Some(model.into()),
            version: Some(version.into()),
            owner: Some("data-team".into()),
            description: None,
        },
        toolsets: Vec::new(),
        read_only: false,
    }
}

fn start(sessions: &Sessions, caller: &Principal, name: &str) -> String {
    let start = StartSession {
        role: Role::Workagent,
        project: "leads".into(),
        name: Some(name.into()),
        tags: Vec::new(),
        expected_duration: None,
        budget: Default::default(),
        completion: Default::default(),
    };
    sessions
        .scope(caller)
        .start(start, &HashSet::new())
        .unwrap()
        .header
        .id
}

fn usage(sessions: &Sessions, id: &str, cost_micros: u64) {
    sessions
        .append(
            id,
            EventKind::UsageReported {
                tokens_in: 10,
                tokens_out: 5,
                cost_micros,
                model: None,
                context_tokens: None,
                context_limit: None,
            },
        )
        .unwrap();
}

#[test]
fn grouped_by_principal_spend_is_split_by_the_model_recorded_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Storage> = Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
    let sessions = Sessions::new(store);
    // Two sessions on the old model, then the operator moves it to a new one.
    let old = scorer("m-small", "1");
    let a = start(&sessions, &old, "a");
    usage(&sessions, &a, 1_000_000);
    let b = start(&sessions, &old, "b");
    usage(&sessions, &b, 500_000);
    let new = scorer("m-large", "2");
    let c = start(&sessions, &new, "c");
    usage(&sessions, &c, 4_000_000);
    usage(&sessions, &c, 4_000_000);
    // Usage reported in an old session after the change still counts
    // under the model that session started with.
    usage(&sessions, &a, 250_000);
    // An operator's session: no card.
    let d = sessions
        .start(StartSession {
            role: Role::Workagent,
            project: "leads".into(),
            name: None,
            tags: Vec::new(),
            expected_duration: None,
            budget: Default::default(),
            completion: Default::default(),
        })
        .unwrap()
        .header
        .id;
    usage(&sessions, &d, 1);

    let now = sessions.clock_ms();
    let range = DateRange::parse(None, None, now).unwrap();
    let report = report(&sessions, &range, GroupBy::Principal).unwrap();
    let keys: Vec<&str> = report.groups.iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys, ["local", "scorer"]);
    let scorer = &report.groups[1];
    assert_eq!(scorer.total.model_cost_micros, 9_750_000);
    type Share<'a> = (&'a str, Option<&'a str>, Option<&'a str>, u64, u64);
    let shares: Vec<Share<'_>> = scorer
        .models
        .iter()
        .map(|(k, s)| {
            (
                k.as_str(),
                s.model.as_deref(),
                s.version.as_deref(),
                s.sessions,
                s.total.model_cost_micros,
            )
        })
        .collect();
    assert_eq!(
        shares,
        [
            ("m-large@2", Some("m-large"), Some("2"), 1, 8_000_000),
            ("m-small@1", Some("m-small"), Some("1"), 2, 1_750_000),
        ]
    );
    let local = &report.groups[0];
    assert_eq!(local.models.keys().collect::<Vec<_>>(), ["unknown"]);
    // In JSON: the split is a new field; the others are as they were.
    let json = serde_json::to_value(scorer).unwrap();
    assert_eq!(json["models"]["m-small@1"]["model"], "m-small", "{json}");
    assert_eq!(json["models"]["m-small@1"]["total"]["model_cost"], 1.75);
    assert!(json.get("roles").is_none() && json.get("agent").is_none());

    // By session: each session's recorded card.
    let by_session = report_of(&sessions, &range, GroupBy::Session);
    let model_of = |id: &str| {
        by_session
            .groups
            .iter()
            .find(|g| g.key == id)
            .and_then(|g| g.agent.as_ref())
            .and_then(|c| c.model.clone())
    };
    assert_eq!(model_of(&a).as_deref(), Some("m-small"));
    assert_eq!(model_of(&c).as_deref(), Some("m-large"));
    assert_eq!(model_of(&d), None);
    // Other groupings carry neither.
    let by_role = report_of(&sessions, &range, GroupBy::Role);
    assert!(
        by_role
            .groups
            .iter()
            .all(|g| g.models.is_empty() && g.agent.is_none())
    );
}

fn report_of(sessions: &Sessions, range: &DateRange, by: GroupBy) -> Report {
    report(sessions, range, by).unwrap()
}
