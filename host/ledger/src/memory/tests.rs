//! The memory bank's rules, on the real storage (sled in a tempdir): each
//! refusal names its rule and writes nothing; only approved entries reach
//! new sessions, bounded; reads and writes are logged in the caller's session.

use std::collections::HashSet;
use std::sync::Arc;

use super::*;
use crate::manifest::{MemoryScopeKind, PrincipalKind, Role};
use crate::session::{SessionState, SessionsConfig, StartSession};
use crate::storage::{Durability, SledStore};
use crate::values::ContextEntry;

struct Rig {
    _dir: tempfile::TempDir,
    storage: Arc<dyn Storage>,
    sessions: Sessions,
    bank: MemoryBank,
}

/// Every role may propose to every scope, unless `config` says otherwise.
fn open_to_all() -> MemoryConfig {
    let mut config = MemoryConfig::default();
    for kind in MemoryScopeKind::ALL {
        config.propose.insert(kind, Role::ALL.to_vec());
    }
    config
}

fn rig(config: MemoryConfig) -> Rig {
    rig_with(config, crate::manifest::QuotasConfig::default())
}

/// A rig whose sessions and bank hold `config` and `quotas`.
fn rig_with(config: MemoryConfig, quotas: crate::manifest::QuotasConfig) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> =
        Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
    let sessions = Sessions::with_config(
        storage.clone(),
        SessionsConfig {
            memory: config.clone(),
            quotas,
            ..SessionsConfig::default()
        },
    );
    let bank = MemoryBank::new(storage.clone(), config);
    Rig {
        _dir: dir,
        storage,
        sessions,
        bank,
    }
}

fn agent(name: &str, projects: &[&str]) -> Principal {
    Principal {
        name: name.to_string(),
        kind: PrincipalKind::Agent,
        roles: Role::ALL.to_vec(),
        projects: projects.iter().map(|p| p.to_string()).collect(),
        tags: vec![],
        approve_by: Default::default(),
        card: Default::default(),
        toolsets: Vec::new(),
        read_only: false,
    }
}

/// The agent most tests write as: one project, `alpha`.
fn alice() -> Principal {
    agent("alice", &["alpha"])
}

impl Rig {
    /// A workagent session of `who` in project `alpha`.
    fn workagent(&self, who: &Principal) -> SessionState {
        self.start(who, "alpha", Role::Workagent)
    }

    fn start(&self, who: &Principal, project: &str, role: Role) -> SessionState {
        self.sessions
            .scope(who)
            .start(
                StartSession {
                    role,
                    project: project.to_string(),
                    name: None,
                    tags: vec![],
                    expected_duration: None,
                    budget: Default::default(),
                    completion: Default::default(),
                },
                &HashSet::new(),
            )
            .unwrap()
    }

    fn memory_of(&self, state: &SessionState) -> Vec<ContextEntry> {
        state
            .context
            .iter()
            .filter(|c| c.source.starts_with("memory:"))
            .cloned()
            .collect()
    }

    /// `who`'s proposal of `text` to the scope `spec`, from its session `session`.
    fn propose(
        &self,
        who: &Principal,
        session: &SessionState,
        spec: &str,
        text: &str,
    ) -> Result<(MemoryEntry, Event), MemoryError> {
        self.bank
            .propose_in(&self.sessions, who, &session.header.id, spec, text)
    }

    fn all(&self) -> Vec<MemoryEntry> {
        self.list(&MemoryFilter::default())
    }

    fn list(&self, filter: &MemoryFilter) -> Vec<MemoryEntry> {
        let page = self
            .bank
            .page(
                filter,
                &crate::page::PageRequest::first(crate::page::MAX_PAGE),
            )
            .unwrap();
        assert_eq!(page.next_cursor, None);
        page.items
    }

    fn events(&self, id: &str) -> Vec<EventKind> {
        self.sessions
            .events(id, 1, 1000)
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect()
    }
}

#[test]
fn a_proposed_entry_reaches_new_sessions_only_once_approved() {
    let r = rig(open_to_all());
    let alice = alice();
    let s = r.workagent(&alice);
    let (entry, event) = r
        .propose(&alice, &s, "project", "  the staging DB needs --ssl ")
        .unwrap();
    assert_eq!(entry.state, MemoryState::Proposed);
    assert_eq!(entry.scope, Scope::Project("alpha".into()));
    assert_eq!(entry.text, "the staging DB needs --ssl");
    assert_eq!(entry.provenance.by, "alice");
    assert_eq!(
        entry.provenance.session.as_deref(),
        Some(s.header.id.as_str())
    );
    assert_eq!(event.by.as_deref(), Some("alice"));
    assert!(matches!(
        &event.kind,
        EventKind::MemoryProposed { id, scope, .. } if *id == entry.id && scope == "project:alpha"
    ));

    let before = r.workagent(&alice);
    assert!(r.memory_of(&before).is_empty(), "proposed: not handed out");

    let approved = r.bank.approve(&entry.id, "cli:1000", 5).unwrap();
    assert_eq!(approved.state, MemoryState::Approved);
    assert_eq!(approved.approved.as_ref().unwrap().by, "cli:1000");
    let after = r.workagent(&alice);
    let handed = r.memory_of(&after);
    assert_eq!(handed.len(), 1);
    assert_eq!(handed[0].id, entry.id);
    assert_eq!(handed[0].source, "memory:project:alpha");
    assert!(r.events(&after.header.id).iter().any(|k| matches!(
        k,
        EventKind::ContextInjected { source, entries } if source == MEMORY_SOURCE && entries.len() == 1
    )));
    assert_eq!(
        r.sessions.resume(&after.header.id).unwrap().context,
        after.context
    );

    // Another project's session is not handed it.
    let beta = r.start(&agent("bob", &["beta"]), "beta", Role::Workagent);
    assert!(r.memory_of(&beta).is_empty());

    // Retired: no longer handed out, kept in the bank.
    let retired = r
        .bank
        .retire(&entry.id, "cli:1000", Some("stale"), 6)
        .unwrap();
    assert_eq!(retired.retired.as_ref().unwrap().by, "cli:1000");
    let later = r.workagent(&alice);
    assert!(r.memory_of(&later).is_empty());
    assert_eq!(r.all().len(), 1);
}

#[test]
fn user_and_role_scopes_reach_their_sessions_only() {
    let r = rig(open_to_all());
    let alice = alice();
    let s = r.start(&alice, "alpha", Role::Supervisor);
    let (mine, _) = r
        .propose(&alice, &s, "user", "alice prefers small commits")
        .unwrap();
    let (role, _) = r
        .propose(&alice, &s, "role", "supervisors split work in threes")
        .unwrap();
    assert_eq!(role.scope, Scope::Role(Role::Supervisor));
    r.bank.approve(&mine.id, "op", 1).unwrap();
    r.bank.approve(&role.id, "op", 2).unwrap();

    let ids =
        |s: &SessionState| -> Vec<String> { r.memory_of(s).into_iter().map(|c| c.id).collect() };
    // Newest approval first.
    assert_eq!(
        ids(&r.start(&alice, "alpha", Role::Supervisor)),
        [role.id.as_str(), mine.id.as_str()]
    );
    assert_eq!(ids(&r.workagent(&alice)), [mine.id.as_str()]);
    let bob = agent("bob", &["alpha"]);
    assert_eq!(
        ids(&r.start(&bob, "alpha", Role::Supervisor)),
        [role.id.as_str()]
    );
    assert!(ids(&r.workagent(&bob)).is_empty());
}

#[test]
fn what_a_session_starts_with_is_bounded_newest_first() {
    let mut config = open_to_all();
    config.max_entries_at_start = 2;
    config.max_bytes_at_start = 100;
    let r = rig(config);
    let alice = alice();
    let s = r.workagent(&alice);
    let mut ids = Vec::new();
    for (i, text) in ["a".repeat(60), "b".repeat(30), "c".repeat(30)]
        .iter()
        .enumerate()
    {
        let (e, _) = r.propose(&alice, &s, "project", text).unwrap();
        r.bank.approve(&e.id, "op", 10 + i as u64).unwrap();
        ids.push(e.id);
    }
    let handed: Vec<String> = r
        .memory_of(&r.workagent(&alice))
        .into_iter()
        .map(|c| c.id)
        .collect();
    // The two newest fit both bounds (60 bytes); the oldest would pass 100 bytes and 2 entries.
    assert_eq!(handed, [ids[2].clone(), ids[1].clone()]);

    let mut none = open_to_all();
    none.max_entries_at_start = 0;
    let r0 = rig(none);
    let s = r0.workagent(&alice);
    let (e, _) = r0.propose(&alice, &s, "project", "x y").unwrap();
    r0.bank.approve(&e.id, "op", 1).unwrap();
    assert!(r0.memory_of(&r0.workagent(&alice)).is_empty());
}

#[test]
fn a_write_outside_the_writers_scopes_is_refused_and_nothing_is_written() {
    let r = rig(open_to_all());
    let alice = alice();
    let s = r.workagent(&alice);
    for spec in ["project:beta", "user:bob", "role:supervisor"] {
        let e = r.propose(&alice, &s, spec, "x").unwrap_err();
        assert!(
            matches!(&e, MemoryError::NotAllowed(m) if m.contains("own scopes") && m.contains(spec)),
            "{spec}: {e}"
        );
    }
    // Its own, named in full, is fine.
    r.propose(&alice, &s, "user:alice", "x").unwrap();
    let e = r.propose(&alice, &s, "team:x", "x").unwrap_err();
    assert!(
        matches!(&e, MemoryError::InvalidInput(m) if m.contains("project:NAME")),
        "{e}"
    );
    assert_eq!(r.all().len(), 1);
    let proposals = r
        .events(&s.header.id)
        .into_iter()
        .filter(|k| matches!(k, EventKind::MemoryProposed { .. }))
        .count();
    assert_eq!(proposals, 1, "refusals log nothing");
}

#[test]
fn who_may_propose_is_the_operators_setting_and_denied_by_default() {
    let r = rig(MemoryConfig::default());
    let alice = alice();
    let s = r.workagent(&alice);
    let e = r.propose(&alice, &s, "project", "x").unwrap_err();
    assert!(
        matches!(&e, MemoryError::NotAllowed(m) if m.contains("[memory.propose] project") && m.contains("adds \"workagent\"")),
        "{e}"
    );
    let mut config = MemoryConfig::default();
    config
        .propose
        .insert(MemoryScopeKind::Role, vec![Role::Workagent]);
    let r = rig(config);
    let s = r.workagent(&alice);
    r.propose(&alice, &s, "role", "x").unwrap();
    assert!(matches!(
        r.propose(&alice, &s, "user", "x"),
        Err(MemoryError::NotAllowed(_))
    ));
    assert_eq!(r.all().len(), 1);
}

#[test]
fn an_over_long_or_empty_entry_is_refused() {
    let mut config = open_to_all();
    config.max_entry_bytes = 32;
    let r = rig(config);
    let alice = alice();
    let s = r.workagent(&alice);
    let e = r
        .propose(&alice, &s, "project", &"x".repeat(33))
        .unwrap_err();
    assert!(
        matches!(&e, MemoryError::InvalidInput(m) if m.contains("at most 32 bytes") && m.contains("max_entry_bytes") && m.contains("shorten")),
        "{e}"
    );
    assert!(matches!(
        r.propose(&alice, &s, "project", "   "),
        Err(MemoryError::InvalidInput(m)) if m.contains("empty")
    ));
    r.propose(&alice, &s, "project", &"x".repeat(32)).unwrap();
    assert_eq!(r.all().len(), 1);
}

#[test]
fn review_steps_follow_the_states_and_name_the_fix() {
    let r = rig(open_to_all());
    let alice = alice();
    let s = r.workagent(&alice);
    let (a, _) = r.propose(&alice, &s, "project", "a").unwrap();
    let (b, _) = r.propose(&alice, &s, "project", "b").unwrap();

    assert!(matches!(
        r.bank.approve("m-000000000000", "op", 1),
        Err(MemoryError::NotFound(m)) if m.contains("glovebox memory list")
    ));
    let e = r.bank.retire(&a.id, "op", None, 1).unwrap_err();
    assert!(
        matches!(&e, MemoryError::InvalidInput(m) if m.contains("is proposed") && m.contains("reject")),
        "{e}"
    );
    assert!(matches!(
        r.bank.reject(&a.id, "op", " ", 1),
        Err(MemoryError::InvalidInput(m)) if m.contains("--reason")
    ));
    assert_eq!(
        r.bank.get(&a.id).unwrap().state,
        MemoryState::Proposed,
        "nothing changed"
    );

    r.bank.approve(&a.id, "op", 2).unwrap();
    let e = r.bank.approve(&a.id, "op", 3).unwrap_err();
    assert!(
        matches!(&e, MemoryError::InvalidInput(m) if m.contains("already approved")),
        "{e}"
    );
    let rejected = r.bank.reject(&b.id, "op2", "not true", 3).unwrap();
    assert_eq!(
        rejected.rejected.as_ref().unwrap().reason.as_deref(),
        Some("not true")
    );
    assert_eq!(rejected.rejected.as_ref().unwrap().by, "op2");
    assert!(matches!(
        r.bank.approve(&b.id, "op", 4),
        Err(MemoryError::InvalidInput(m)) if m.contains("closed")
    ));

    let review = r.list(&MemoryFilter {
        state: Some(MemoryState::Proposed),
        ..Default::default()
    });
    assert!(review.is_empty());
    let approved = r.list(&MemoryFilter {
        scope: Some(Scope::Project("alpha".into())),
        state: Some(MemoryState::Approved),
    });
    assert_eq!(approved.len(), 1);
}

#[test]
fn search_is_ranked_within_the_callers_scopes_and_logged() {
    let r = rig(open_to_all());
    let alice = alice();
    let bob = agent("bob", &["beta"]);
    let sa = r.workagent(&alice);
    let sb = r.start(&bob, "beta", Role::Workagent);
    let propose = |who: &Principal, s: &SessionState, spec: &str, text: &str| {
        r.propose(who, s, spec, text).unwrap().0
    };
    let one = propose(&alice, &sa, "project", "the database needs ssl");
    let both = propose(
        &alice,
        &sa,
        "user",
        "database ssl ssl certificates live in vault",
    );
    let other = propose(&bob, &sb, "project", "the database of beta needs ssl too");
    let pending = propose(&alice, &sa, "project", "unreviewed database ssl");
    for e in [&one, &both, &other] {
        r.bank.approve(&e.id, "op", 1).unwrap();
    }
    let (found, event) = r
        .bank
        .search_in(&r.sessions, &alice, &sa.header.id, "SSL database", 10, None)
        .unwrap();
    assert_eq!(found.next_cursor, None);
    let found = found.items;
    let ids: Vec<&str> = found.iter().map(|f| f.entry.id.as_str()).collect();
    assert_eq!(
        ids,
        [both.id.as_str(), one.id.as_str()],
        "more hits first; not bob's, not proposed"
    );
    assert!(!ids.contains(&pending.id.as_str()));
    assert_eq!(found[0].matched_words, 2);
    assert!(matches!(
        &event.kind,
        EventKind::MemorySearched { query, found } if query == "SSL database" && found.len() == 2
    ));
    assert_eq!(event.by.as_deref(), Some("alice"));

    let (found, _) = r
        .bank
        .search_in(&r.sessions, &bob, &sb.header.id, "ssl", 1, None)
        .unwrap();
    let found = found.items;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].entry.id, other.id);
    for (query, limit, part) in [
        ("  ", 5, "no words"),
        ("x", 0, "`limit`"),
        ("x", 51, "`limit`"),
    ] {
        assert!(matches!(
            r.bank.search_in(&r.sessions, &alice, &sa.header.id, query, limit, None),
            Err(MemoryError::InvalidInput(m)) if m.contains(part)
        ));
    }
}

#[test]
fn scopes_read_and_write_as_text() {
    for s in ["project:alpha", "user:cli:1000", "role:workagent"] {
        let scope: Scope = s.parse().unwrap();
        assert_eq!(scope.to_string(), s);
        let json = serde_json::to_string(&scope).unwrap();
        assert_eq!(serde_json::from_str::<Scope>(&json).unwrap(), scope);
    }
    assert!(
        "role:boss"
            .parse::<Scope>()
            .unwrap_err()
            .to_string()
            .contains("workagent")
    );
    assert!("project:".parse::<Scope>().is_err());
    assert!("alpha".parse::<Scope>().is_err());
}

#[test]
fn memory_events_round_trip_and_skip_empty_results() {
    let kind = EventKind::MemorySearched {
        query: "x".into(),
        found: vec![],
    };
    let json = serde_json::to_value(&kind).unwrap();
    assert_eq!(json["type"], "memory_searched");
    assert!(json.get("found").is_none(), "{json}");
    assert_eq!(serde_json::from_value::<EventKind>(json).unwrap(), kind);
    assert_eq!(kind.name(), "memory_searched");
}

#[test]
fn an_unreadable_bank_does_not_stop_a_session_start() {
    let r = rig(open_to_all());
    r.storage
        .put(records::BUCKET, "m-broken", b"not json")
        .unwrap();
    let s = r.workagent(&alice());
    assert!(r.memory_of(&s).is_empty());
}

#[test]
fn only_the_operators_a_scope_lists_review_its_entries() {
    let mut config = open_to_all();
    config
        .approve
        .insert(MemoryScopeKind::Project, vec!["lead-ops".into()]);
    let r = rig(config);
    let alice = alice();
    let s = r.workagent(&alice);
    let (project, _) = r
        .propose(&alice, &s, "project", "use the staging DB")
        .unwrap();
    let (user, _) = r
        .propose(&alice, &s, "user", "alice prefers short PRs")
        .unwrap();
    for refused in [
        r.bank.approve(&project.id, "cli:1000", 1).map(|_| ()),
        r.bank.reject(&project.id, "cli:1000", "no", 1).map(|_| ()),
    ] {
        let err = refused.unwrap_err();
        assert!(matches!(err, MemoryError::NotAllowed(_)), "{err:?}");
        assert!(
            err.to_string().contains("`[memory.approve] project`"),
            "{err}"
        );
    }
    assert_eq!(
        r.bank.get(&project.id).unwrap().state,
        MemoryState::Proposed
    );
    // The listed operator reviews it; a scope not listed is every operator's.
    r.bank.approve(&project.id, "lead-ops", 2).unwrap();
    let err = r.bank.retire(&project.id, "cli:1000", None, 3).unwrap_err();
    assert!(matches!(err, MemoryError::NotAllowed(_)), "{err:?}");
    r.bank.approve(&user.id, "cli:1000", 4).unwrap();
}

#[test]
fn threat_49_proposals_past_the_principals_quota_are_refused_until_reviewed() {
    // Why: an agent could pile up proposals nobody reviews, without end.
    let mut quotas = crate::manifest::QuotasConfig {
        memory_proposals_per_principal: 2,
        ..Default::default()
    };
    quotas.set.insert("memory_proposals_per_principal");
    let r = rig_with(open_to_all(), quotas);
    let alice = alice();
    let bob = agent("bob", &["alpha"]);
    let sa = r.workagent(&alice);
    let sb = r.workagent(&bob);
    let first = r.propose(&alice, &sa, "project", "one").unwrap().0;
    r.propose(&alice, &sa, "project", "two").unwrap();
    let before = r.events(&sa.header.id).len();
    let refused = r.propose(&alice, &sa, "project", "three").unwrap_err();
    let text = refused.to_string();
    assert!(
        matches!(&refused, MemoryError::Session(SessionError::Quota { limit, .. }) if limit.key == "memory_proposals_per_principal"),
        "{text}"
    );
    assert!(
        text.contains("`quotas.memory_proposals_per_principal` = 2, set by the operator"),
        "{text}"
    );
    assert_eq!(r.all().len(), 2, "nothing was written");
    assert_eq!(r.events(&sa.header.id).len(), before);
    // Another principal has its own places.
    r.propose(&bob, &sb, "project", "bob's").unwrap();
    // A review gives the place back.
    r.bank.reject(&first.id, "op", "no", 5).unwrap();
    r.propose(&alice, &sa, "project", "three").unwrap();
    // Operators are not held to it.
    let op = Principal::operator("op");
    let so = r.workagent(&op);
    for text in ["a", "b", "c"] {
        r.propose(&op, &so, "project", text).unwrap();
    }
}

#[test]
fn threat_49_a_search_reads_pages_of_the_index_and_pages_on_with_a_cursor() {
    // Why: `memory_search` decoded every entry of the bank on every call.
    let r = rig(open_to_all());
    let alice = alice();
    let sa = r.workagent(&alice);
    let mut ids = Vec::new();
    for n in 0..7 {
        let text = format!("ssl {}", "ssl ".repeat(n));
        let e = r.propose(&alice, &sa, "project", &text).unwrap().0;
        r.bank.approve(&e.id, "op", 10 + n as u64).unwrap();
        ids.push(e.id);
    }
    // Proposed (unreviewed) and other projects' entries are not looked at.
    r.propose(&alice, &sa, "project", "ssl pending").unwrap();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let (page, _) = r
            .bank
            .search_in(
                &r.sessions,
                &alice,
                &sa.header.id,
                "ssl",
                3,
                cursor.as_deref(),
            )
            .unwrap();
        assert!(page.items.len() <= 3);
        seen.extend(page.items.iter().map(|f| f.entry.id.clone()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    // Most hits first, each once.
    ids.reverse();
    assert_eq!(seen, ids);
    // A cursor is its query's own.
    let (page, _) = r
        .bank
        .search_in(&r.sessions, &alice, &sa.header.id, "ssl", 3, None)
        .unwrap();
    let other = r.bank.search_in(
        &r.sessions,
        &alice,
        &sa.header.id,
        "tls",
        3,
        page.next_cursor.as_deref(),
    );
    assert!(matches!(other, Err(MemoryError::InvalidInput(m)) if m.contains("cursor")));
}

#[test]
fn a_bank_written_before_the_index_is_indexed_once_and_reads_as_before() {
    let r = rig(open_to_all());
    let alice = alice();
    let sa = r.workagent(&alice);
    let e = r.propose(&alice, &sa, "project", "keep ssl on").unwrap().0;
    let approved = r.bank.approve(&e.id, "op", 5).unwrap();
    // As an older host left it: the records alone.
    for (key, _) in r.storage.scan_page(index::INDEX, "", None, 100).unwrap() {
        r.storage.delete(index::INDEX, &key).unwrap();
    }
    assert!(r.all().is_empty());
    r.bank.index_old_records().unwrap();
    assert_eq!(r.all(), [approved]);
    let s2 = r.workagent(&alice);
    assert_eq!(r.memory_of(&s2).len(), 1);
}
