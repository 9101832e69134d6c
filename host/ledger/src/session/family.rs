//! Child sessions: a session spawns children (`session_spawn`), each with a
//! role at or below its own, a task handoff, a budget carved out of its own
//! and a parent link; it waits for them (`session_wait`) and cannot end
//! while any is live.
//!
//! Why these rules:
//! - a supervisor's workagents are sessions of their own (own log, own
//!   billing line, own budget), yet the supervisor stays answerable for
//!   them: its caps bound what its children may spend (cost and calls: the
//!   children's caps plus the parent's own use stay within the parent's cap;
//!   wall time runs side by side, so a child's wall cap may not outlast its
//!   parent's), and a parent does not end leaving children behind;
//! - the link is recorded on both sides, in the child's `session_started`
//!   (`parent`) and in the parent's log (`child_spawned`, with the carved
//!   caps and the task), so the family can be rebuilt from the logs alone;
//! - a child reaches only its family (parent, siblings, own children), or
//!   other sessions along a configured route (`[handoffs] routes`), so a
//!   worker cannot wander into its owner's unrelated sessions.
//!
//! Children belong to their parent's owner (whoever spawns them, an agent
//! or an operator): the ownership rules of `access.rs` apply to them
//! unchanged, and spawning, listing, waiting for and cancelling children
//! are methods of the caller's [`SessionScope`], checked there. Ending a
//! parent with live children is refused; the parent may end them first,
//! wait for them, or end with `cancel_children`, which ends each live child
//! (and its own children first) as `interrupted`. Children are never
//! adopted: one rule, no orphans.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::access::SessionScope;
use super::actor;
use super::error::SessionError;
use super::event::{EndOutcome, Event, EventKind, Role};
use super::handoff::{Handoff, HandoffKind};
use super::index::{CHILDREN, PAGE, id_of};
use super::lifecycle::SessionStatus;
use super::observers::ChildObserver;
use super::ops::StartSession;
use super::quota;
use super::slots::lock;
use super::state::{ChildLink, HandoffRecord, SessionState};
use super::store::Sessions;
use crate::budget::{self, Cap, Used};
use crate::manifest::{BudgetCaps, BudgetsConfig};
use crate::page::{Page, PageRequest};

/// How long `session_wait` waits when no timeout is given.
pub const WAIT_DEFAULT: Duration = Duration::from_secs(30);
/// The longest `session_wait`: wait again for longer.
pub const WAIT_MAX: Duration = Duration::from_secs(600);

/// What a child session is spawned with. Its project is its parent's.
#[derive(Clone, Debug)]
pub struct SpawnChild {
    pub role: Role,
    /// Unique among live sessions.
    pub name: Option<String>,
    pub tags: Vec<String>,
    pub expected_duration: Option<Duration>,
    /// The child's own caps, carved out of its parent's.
    pub budget: BudgetCaps,
    /// The task: objective, success criteria, and context (requirements,
    /// files, next steps). Its kind, roles and target are set by the spawn.
    pub task: Handoff,
    /// What must hold before the child ends as `completed`, set by its
    /// parent so the worker does not choose its own bar (see
    /// `completion.rs`).
    pub completion: crate::manifest::Completion,
}

/// A child session as its parent sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChildStatus {
    pub id: String,
    pub name: Option<String>,
    pub role: Role,
    pub status: SessionStatus,
    pub outcome: Option<EndOutcome>,
    pub spawned_at_ms: u64,
    /// The caps carved out of the parent's for it.
    pub budget: BudgetCaps,
    /// The latest handoff it wrote to its parent: its completion report.
    pub handoff: Option<HandoffRecord>,
    /// It posted a handoff to its parent, or it ended: `session_wait` is
    /// done with it.
    pub settled: bool,
}

/// A spawned child, and the parent's `child_spawned` event.
#[derive(Clone, Debug, Serialize)]
pub struct Spawned {
    pub child: SessionState,
    pub event: Event,
}

/// Orchestrator above supervisor above workagent.
fn rank(role: Role) -> u8 {
    match role {
        Role::Orchestrator => 3,
        Role::Supervisor => 2,
        Role::Workagent => 1,
        // Not in the chain of command: never spawned, spawns nothing.
        Role::Judge => 0,
    }
}

/// The roles a child of a `role` session may have.
fn child_roles(role: Role) -> Vec<&'static str> {
    Role::ALL
        .into_iter()
        .filter(|r| *r != Role::Judge && rank(*r) <= rank(role))
        .map(Role::as_str)
        .collect()
}

/// What `parent`'s caps leave for a new child of role `role` asking for
/// `asked`: the child's caps in force (its own, or its role's where lower),
/// or why they do not fit, naming the cap and the fix.
pub fn carve(
    parent: &SessionState,
    config: &BudgetsConfig,
    role: Role,
    asked: &BudgetCaps,
    now_ms: u64,
) -> Result<BudgetCaps, String> {
    let by_role = config.roles.get(&role);
    let mut caps = BudgetCaps::default();
    for cap in Cap::ALL {
        let own = asked.get(cap);
        let role_cap = by_role.and_then(|r| r.get(cap));
        caps.set(
            cap,
            match (own, role_cap) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        );
    }
    // What the parent spent, carved and has in flight: a call of its own
    // running now may still spend its estimate, so a child's carve may not
    // count on it (the family would spend past the parent's cap).
    let used = Used::committed(parent, now_ms);
    for limit in budget::effective(parent, config) {
        let cap = limit.cap;
        let left = limit.limit.saturating_sub(used.get(cap));
        let flag = cap.as_str();
        let fix = format!(
            "give the child a `budget.{flag}` of at most {} (`--budget-{flag}` at the command line), or ask an operator to raise the parent's cap (`glovebox session budget {} --{flag} <higher>`)",
            cap.show(left),
            parent.header.id
        );
        let what = match cap {
            Cap::Wall => format!(
                "its parent {} has a wall-time cap of {} ({}) and has run for {}, so {} is left",
                parent.label(),
                cap.show(limit.limit),
                limit.source,
                cap.show(used.wall_ms),
                cap.show(left)
            ),
            _ => format!(
                "its parent {} has a {flag} cap of {} ({}), of which {} is used or committed by the parent's calls (those in flight included) or carved for its {} children, so {} is left",
                parent.label(),
                cap.show(limit.limit),
                limit.source,
                cap.show(used.get(cap)),
                parent.children_spawned,
                cap.show(left)
            ),
        };
        match caps.get(cap) {
            None => {
                return Err(format!(
                    "the child has no `{flag}` cap, but {what}: a child's budget is carved out of its parent's; {fix}"
                ));
            }
            Some(c) if c > left => {
                return Err(format!(
                    "the child's `{flag}` cap of {} is beyond its parent's budget: {what}; {fix}",
                    cap.show(c)
                ));
            }
            Some(_) => {}
        }
    }
    Ok(caps)
}

impl SessionScope<'_> {
    /// Spawns a child of session `parent` for the caller (its owner or an
    /// operator; another's parent is "not found"): checks the role, the
    /// caller's ceiling, the task and the budget before anything is written,
    /// then starts the child (owned by the parent's owner, with its pinned
    /// tags, `parent` in its `session_started`), gives it the task
    /// (`handoff_received`) and logs `child_spawned` in the parent. The
    /// budget is checked again under the parent's lock; if it no longer fits
    /// (the parent spent meanwhile) the child is ended as interrupted and
    /// the error returned.
    pub fn spawn(
        self,
        parent: &str,
        spawn: SpawnChild,
        budgets: &BudgetsConfig,
        reserved: &HashSet<String>,
    ) -> Result<Spawned, SessionError> {
        let (sessions, caller) = (self.sessions, self.caller);
        let parent = self.act(parent)?;
        if !matches!(
            parent.header.status,
            SessionStatus::Created | SessionStatus::Active
        ) {
            return Err(SessionError::NotAllowed(format!(
                "cannot spawn a child of session {}: it is {}; only a created or active session spawns children (resume it first)",
                parent.label(),
                parent.header.status
            )));
        }
        if spawn.role == Role::Judge {
            return Err(SessionError::NotAllowed(
                "cannot spawn a judge: a child belongs to its parent's owner, and a verdict counts only from another principal; start the judge with `session_start` as a principal with the `judge` role".into(),
            ));
        }
        if parent.header.role == Role::Judge {
            return Err(SessionError::NotAllowed(format!(
                "session {} is a judge, and a judge spawns no children: it records verdicts (`session_verdict`)",
                parent.label()
            )));
        }
        if rank(spawn.role) > rank(parent.header.role) {
            return Err(SessionError::NotAllowed(format!(
                "cannot spawn a {} child of session {}, a {}: a child's role is at or below its parent's; spawn it as {}",
                spawn.role,
                parent.label(),
                parent.header.role,
                child_roles(parent.header.role).join(" or ")
            )));
        }
        if !caller.may_act_as(spawn.role) {
            let roles: Vec<&str> = caller.roles.iter().map(|r| r.as_str()).collect();
            return Err(SessionError::NotAllowed(format!(
                "cannot spawn a child as {}: it is above this principal's ceiling ({}); spawn it as one of those roles, or ask an operator to add the role to the principal's `roles`",
                spawn.role,
                roles.join(", ")
            )));
        }
        if !caller.is_operator()
            && let Some(tag) = spawn
                .tags
                .iter()
                .find(|t| reserved.contains(*t) && !parent.pinned_tags.contains(t))
        {
            return Err(SessionError::NotAllowed(format!(
                "cannot give the tag `{tag}`: it is pinned by the operator and only the operator gives it; pick another tag"
            )));
        }
        let mut task = spawn.task;
        task.kind = HandoffKind::Task;
        task.from_role = parent.header.role;
        task.to_role = Some(spawn.role);
        task.target_session = None;
        if task.objective.trim().is_empty() {
            return Err(SessionError::InvalidInput(
                "the child's task has no objective: say what the child is to do".into(),
            ));
        }
        quota::check_handoff(&sessions.config.quotas, &task)?;
        quota::check_children(&sessions.config.quotas, &parent)?;
        // The parent's log takes `child_spawned` once the child started
        // (the append does not refuse it then): its room
        // (`quotas.session_events`, `session_bytes`) is checked before the
        // child starts, with an id as long as the child's will be.
        let record = EventKind::ChildSpawned {
            child: parent.header.id.clone(),
            role: spawn.role,
            name: spawn.name.clone(),
            budget: spawn.budget.clone(),
            task: task.clone(),
        };
        self.by(|| sessions.check_log_room(&parent, &record))?;
        let now = sessions.now();
        let caps = carve(&parent, budgets, spawn.role, &spawn.budget, now)
            .map_err(|e| SessionError::NotAllowed(format!("cannot spawn the child: {e}")))?;
        let link = ChildLink {
            role: spawn.role,
            name: spawn.name.clone(),
            budget: caps,
            spawned_at_ms: now,
            report: None,
        };

        let mut tags = spawn.tags;
        for tag in &parent.pinned_tags {
            if !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
        let start = StartSession {
            role: spawn.role,
            project: parent.header.project.clone(),
            name: spawn.name,
            tags,
            expected_duration: spawn.expected_duration,
            budget: spawn.budget.clone(),
            completion: spawn.completion.clone(),
        };
        let by = caller.name.as_str();
        let child = actor::scoped(by, || {
            sessions.start_owned(
                start,
                parent.owner.clone(),
                parent.pinned_tags.clone(),
                !caller.is_operator(),
                Some((parent.header.id.clone(), link)),
            )
        })?;
        task.target_session = Some(child.header.id.clone());
        let linked = actor::scoped(by, || {
            sessions
                .with_slot(&child.header.id, |this, slot, id| {
                    this.append_locked(
                        slot,
                        id,
                        EventKind::HandoffReceived {
                            from_session: parent.header.id.clone(),
                            handoff: task.clone(),
                        },
                    )?;
                    this.current(slot, id)
                })
                .and_then(|child_state| {
                    // Checked again under the parent's lock: it may have spent,
                    // or spawned others, since the look above.
                    let (events, carved) =
                        sessions.append_with(&parent.header.id, |state, now| {
                            let carved = quota::check_children(&sessions.config.quotas, state)
                                .and_then(|()| {
                                    carve(state, budgets, spawn.role, &spawn.budget, now).map_err(
                                        |e| {
                                            SessionError::NotAllowed(format!(
                                                "cannot spawn the child: {e}"
                                            ))
                                        },
                                    )
                                });
                            match carved {
                                Ok(caps) => (
                                    vec![EventKind::ChildSpawned {
                                        child: child_state.header.id.clone(),
                                        role: child_state.header.role,
                                        name: child_state.header.name.clone(),
                                        budget: caps,
                                        task: task.clone(),
                                    }],
                                    Ok(()),
                                ),
                                Err(e) => (Vec::new(), Err(e)),
                            }
                        })?;
                    carved?;
                    let event = events
                        .into_iter()
                        .next()
                        .ok_or_else(|| SessionError::NotFound(parent.header.id.clone()))?;
                    Ok(Spawned {
                        child: child_state,
                        event,
                    })
                })
        });
        if linked.is_err() {
            // The child is not its parent's: end it rather than leave a
            // session nobody waits for.
            let _ = actor::scoped(by, || {
                sessions.end(&child.header.id, EndOutcome::Interrupted)
            });
        }
        linked
    }

    /// A page of the children of session `parent` (one the caller may see),
    /// oldest first, from the children index.
    pub fn children(
        self,
        parent: &str,
        page: &PageRequest,
    ) -> Result<Page<ChildStatus>, SessionError> {
        let parent = self.show(parent)?;
        self.sessions.children_page(&parent.header.id, page)
    }

    /// What `session_wait` looks at: the parent (one the caller may see) and
    /// its children. Refused for a session with no children.
    pub fn wait_check(
        self,
        parent: &str,
    ) -> Result<(SessionState, Vec<ChildStatus>), SessionError> {
        let parent = self.show(parent)?;
        if parent.children_spawned == 0 {
            return Err(SessionError::InvalidInput(format!(
                "session {} has no children to wait for: spawn one first (`session_spawn`, `glovebox session spawn`)",
                parent.label()
            )));
        }
        let children = self.sessions.children_of(&parent.header.id)?;
        Ok((parent, children))
    }

    /// Ends the live children of session `parent` (one the caller may see),
    /// each after its own children, as `interrupted`; returns their ids.
    pub fn cancel_children(self, parent: &str) -> Result<Vec<String>, SessionError> {
        let parent = self.show(parent)?;
        let mut ended = Vec::new();
        self.by(|| self.sessions.cancel_children_of(&parent, &mut ended))?;
        Ok(ended)
    }
}

impl Sessions {
    /// A page of the children of session `parent` (an id), oldest first:
    /// each index entry confirmed by the child's own state (its parent).
    pub fn children_page(
        &self,
        parent: &str,
        page: &PageRequest,
    ) -> Result<Page<ChildStatus>, SessionError> {
        let prefix = format!("{parent}/");
        let after = match &page.cursor {
            Some(cursor) => Some(check_child_cursor(cursor, &prefix)?),
            None => None,
        };
        let size = page.size();
        let entries = self
            .storage
            .scan_page(CHILDREN, &prefix, after.as_deref(), size)?;
        let next_cursor = (entries.len() == size)
            .then(|| entries.last().map(|(key, _)| key.clone()))
            .flatten();
        let mut items = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            if let Some(child) = self.child_status(parent, &key, &value)? {
                items.push(child);
            }
        }
        Ok(Page { items, next_cursor })
    }

    /// Every child of session `parent` (an id), oldest first, a page of the
    /// index read at a time (at most `quotas.children_per_session`).
    pub fn children_of(&self, parent: &str) -> Result<Vec<ChildStatus>, SessionError> {
        let prefix = format!("{parent}/");
        let mut children = Vec::new();
        for entry in glovebox_store::pages(&*self.storage, CHILDREN, &prefix, PAGE) {
            let (key, value) = entry?;
            if let Some(child) = self.child_status(parent, &key, &value)? {
                children.push(child);
            }
        }
        Ok(children)
    }

    /// The child of index entry `key` (value `link`) as its parent sees it;
    /// `None` for a hint no child confirms (a start that failed).
    fn child_status(
        &self,
        parent: &str,
        key: &str,
        link: &[u8],
    ) -> Result<Option<ChildStatus>, SessionError> {
        let id = id_of(key);
        let state = match self.state_of(id) {
            Ok(state) => state,
            Err(SessionError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        if state.parent.as_deref() != Some(parent) {
            return Ok(None);
        }
        let link: ChildLink = serde_json::from_slice(link).unwrap_or_else(|_| ChildLink {
            role: state.header.role,
            name: state.header.name.clone(),
            budget: Default::default(),
            spawned_at_ms: state.header.created_at_ms,
            report: None,
        });
        // The child's own report; else, for a child from before reports
        // were the child's, what its parent's state held, or its latest
        // handoff when that was its report.
        let handoff = state.report.clone().or(link.report).or_else(|| {
            state.latest_handoff.clone().filter(|h| {
                h.from_session == state.header.id
                    && h.handoff.target_session.as_deref() == Some(parent)
                    && h.handoff.kind != HandoffKind::Continuation
            })
        });
        Ok(Some(ChildStatus {
            id: id.to_string(),
            name: state.header.name.clone(),
            role: link.role,
            status: state.header.status,
            outcome: state.outcome,
            spawned_at_ms: link.spawned_at_ms,
            budget: link.budget,
            settled: handoff.is_some() || !state.header.status.is_live(),
            handoff,
        }))
    }

    fn cancel_children_of(
        &self,
        parent: &SessionState,
        ended: &mut Vec<String>,
    ) -> Result<(), SessionError> {
        for child in self.children_of(&parent.header.id)? {
            let state = self.state_of(&child.id)?;
            self.cancel_children_of(&state, ended)?;
            if state.header.status.is_live() {
                self.end(&child.id, EndOutcome::Interrupted)?;
                ended.push(child.id);
            }
        }
        Ok(())
    }

    /// Refuses to end `state` while it has live children, naming them and
    /// the ways out.
    pub(super) fn check_no_live_children(&self, state: &SessionState) -> Result<(), SessionError> {
        if state.children_spawned == 0 {
            return Ok(());
        }
        // From the children's records: an ended child's record says so once
        // its end is durable.
        let prefix = format!("{}/", state.header.id);
        let mut live = Vec::new();
        let mut more = 0;
        for entry in glovebox_store::pages(&*self.storage, CHILDREN, &prefix, PAGE) {
            let (key, _) = entry?;
            let id = id_of(&key);
            let Some(info) = self.confirmed(id, None) else {
                continue;
            };
            if info.parent.as_deref() == Some(state.header.id.as_str())
                && info.header.status.is_live()
            {
                if live.len() < 10 {
                    live.push(self.label_of(id));
                } else {
                    more += 1;
                }
            }
        }
        if live.is_empty() {
            return Ok(());
        }
        if more > 0 {
            live.push(format!("and {more} more"));
        }
        Err(SessionError::NotAllowed(format!(
            "session {} has live children: {}; a parent does not end before its children: end them, wait for them (`session_wait`), or end it with `cancel_children` (`glovebox session end {} --cancel-children`), which ends them as interrupted",
            state.label(),
            live.join(", "),
            state.header.id
        )))
    }

    /// Registers `observer`, told whenever a child of some session may
    /// have settled.
    pub fn observe_children(&self, observer: Arc<dyn ChildObserver>) {
        lock(&self.observers).push(observer);
    }

    /// After `event` was applied to `state`: tells the observers when it
    /// may settle a child (the child ended, or the parent received its
    /// handoff).
    pub(super) fn wake_parents(&self, state: &SessionState, event: &Event) {
        let parent = match &event.kind {
            EventKind::Ended { .. } | EventKind::Archived => state.parent.as_deref(),
            // The child's report, in its own log (the parent receives a
            // copy just after).
            EventKind::Handoff(handoff)
                if state.parent.is_some() && handoff.target_session == state.parent =>
            {
                state.parent.as_deref()
            }
            _ => None,
        };
        if let Some(parent) = parent {
            for observer in lock(&self.observers).iter() {
                observer.changed(parent);
            }
        }
    }
}

/// `cursor` if it is a position among the children whose keys start with
/// `prefix` (`<20 digits>/<id>` after it); else why not.
fn check_child_cursor(cursor: &str, prefix: &str) -> Result<String, SessionError> {
    if super::index::is_position(cursor, prefix) {
        Ok(cursor.to_string())
    } else {
        Err(SessionError::InvalidInput(format!(
            "the cursor `{cursor}` is not one of this session's children: pass the `next_cursor` of the previous page as it came, or none for the first page"
        )))
    }
}
