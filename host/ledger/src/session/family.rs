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
//!
//! The store's side of a family (the children index read, the check at a
//! parent's end, the wake-ups of `session_wait`) is in `children.rs`.

use std::collections::HashSet;
use std::time::Duration;

use serde::Serialize;

use super::access::SessionScope;
use super::actor;
use super::children::ChildStatus;
use super::error::SessionError;
use super::event::Event;
use super::handoff::{Handoff, HandoffKind};
use super::kind::{EndOutcome, EventKind, Role};
use super::lifecycle::SessionStatus;
use super::quota;
use super::start::StartSession;
use super::state::{ChildLink, SessionState};
use super::store::Sessions;
use crate::budget::{self, Cap, Used};
use crate::manifest::{BudgetCaps, BudgetsConfig, Principal};
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
) -> Result<BudgetCaps, CarveError> {
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
            None => return Err(CarveError::Uncapped { flag, what, fix }),
            Some(c) if c > left => {
                return Err(CarveError::Beyond {
                    flag,
                    asked: cap.show(c),
                    what,
                    fix,
                });
            }
            Some(_) => {}
        }
    }
    Ok(caps)
}

/// Why a child's caps do not fit in its parent's budget: names the cap,
/// what the parent has left of it, and the fix.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CarveError {
    /// The parent has the cap and the child none.
    #[error(
        "the child has no `{flag}` cap, but {what}: a child's budget is carved out of its parent's; {fix}"
    )]
    Uncapped {
        flag: &'static str,
        /// What the parent's cap is and how much of it is left.
        what: String,
        fix: String,
    },
    /// The child asks for more than the parent has left.
    #[error("the child's `{flag}` cap of {asked} is beyond its parent's budget: {what}; {fix}")]
    Beyond {
        flag: &'static str,
        /// The child's cap, shown in its unit.
        asked: String,
        what: String,
        fix: String,
    },
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
        self.spawn_read_only(parent, spawn, budgets, reserved, false)
    }

    /// [`SessionScope::spawn`], the child read-only for good when
    /// `read_only`. A child of a read-only session, or spawned by a
    /// read-only caller, is read-only whatever `read_only` says.
    pub fn spawn_read_only(
        self,
        parent: &str,
        spawn: SpawnChild,
        budgets: &BudgetsConfig,
        reserved: &HashSet<String>,
        read_only: bool,
    ) -> Result<Spawned, SessionError> {
        let (sessions, caller) = (self.sessions, self.caller);
        let parent = self.act(parent)?;
        check_spawn(caller, &parent, &spawn, reserved)?;
        let mut task = task_of(&parent, spawn.role, spawn.task)?;
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
        let caps = carve_for_spawn(&parent, budgets, spawn.role, &spawn.budget, now)?;
        let link = ChildLink {
            role: spawn.role,
            name: spawn.name.clone(),
            budget: caps,
            spawned_at_ms: now,
            report: None,
        };

        let start = StartSession {
            role: spawn.role,
            project: parent.header.project.clone(),
            name: spawn.name,
            tags: with_pinned(spawn.tags, &parent.pinned_tags),
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
                super::start::StartedAs {
                    // The child is its parent's owner's too: the card the
                    // parent recorded.
                    agent: parent.agent.clone(),
                    // Never less narrow than its parent or who spawns it.
                    read_only: read_only || parent.read_only || caller.read_only,
                },
            )
        })?;
        task.target_session = Some(child.header.id.clone());
        let linked = actor::scoped(by, || {
            let child_state = hand_task(sessions, &child.header.id, &parent.header.id, &task)?;
            let event = log_child_spawned(
                sessions,
                &parent.header.id,
                &child_state,
                &task,
                budgets,
                spawn.role,
                &spawn.budget,
            )?;
            Ok(Spawned {
                child: child_state,
                event,
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

/// Whether `caller` may spawn `spawn` as a child of `parent`, before
/// anything is written: a created or active parent that is no judge, a
/// child that is no judge either, whose role is at or below its parent's
/// and within the caller's ceiling, and whose tags include none pinned by
/// the operator (unless the caller is one, or the parent has it pinned).
fn check_spawn(
    caller: &Principal,
    parent: &SessionState,
    spawn: &SpawnChild,
    reserved: &HashSet<String>,
) -> Result<(), SessionError> {
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
    Ok(())
}

/// The handoff a child of role `role` is given by `parent`: `task` as a
/// task from the parent's role to the child's (its target set once the
/// child exists). Refused without an objective.
fn task_of(parent: &SessionState, role: Role, mut task: Handoff) -> Result<Handoff, SessionError> {
    task.kind = HandoffKind::Task;
    task.from_role = parent.header.role;
    task.to_role = Some(role);
    task.target_session = None;
    if task.objective.trim().is_empty() {
        return Err(SessionError::InvalidInput(
            "the child's task has no objective: say what the child is to do".into(),
        ));
    }
    Ok(task)
}

/// [`carve`], refused as the spawn's error.
fn carve_for_spawn(
    parent: &SessionState,
    config: &BudgetsConfig,
    role: Role,
    asked: &BudgetCaps,
    now_ms: u64,
) -> Result<BudgetCaps, SessionError> {
    carve(parent, config, role, asked, now_ms)
        .map_err(|e| SessionError::NotAllowed(format!("cannot spawn the child: {e}")))
}

/// A child's tags: its own, then each of `pinned` (its parent's pinned
/// tags) it does not have.
fn with_pinned(mut tags: Vec<String>, pinned: &[String]) -> Vec<String> {
    for tag in pinned {
        if !tags.contains(tag) {
            tags.push(tag.clone());
        }
    }
    tags
}

/// Gives session `child_id` its task from session `parent_id`
/// (`handoff_received`); returns the child as it then stands.
fn hand_task(
    sessions: &Sessions,
    child_id: &str,
    parent_id: &str,
    task: &Handoff,
) -> Result<SessionState, SessionError> {
    sessions.with_slot(child_id, |this, slot, id| {
        this.append_locked(
            slot,
            id,
            EventKind::HandoffReceived {
                from_session: parent_id.to_string(),
                handoff: task.clone(),
            },
        )?;
        this.current(slot, id)
    })
}

/// Logs `child_spawned` for `child` (of role `role`) in session `parent_id`, with the caps
/// carved for it: carved again under the parent's lock, with the parent's
/// children quota, as the parent may have spent, or spawned others, since
/// the look before the child started. If they no longer fit nothing is
/// logged and the error is returned.
fn log_child_spawned(
    sessions: &Sessions,
    parent_id: &str,
    child: &SessionState,
    task: &Handoff,
    budgets: &BudgetsConfig,
    role: Role,
    asked: &BudgetCaps,
) -> Result<Event, SessionError> {
    let (events, carved) = sessions.append_with(parent_id, |state, now| {
        let carved = quota::check_children(&sessions.config.quotas, state)
            .and_then(|()| carve_for_spawn(state, budgets, role, asked, now));
        match carved {
            Ok(caps) => (
                vec![EventKind::ChildSpawned {
                    child: child.header.id.clone(),
                    role: child.header.role,
                    name: child.header.name.clone(),
                    budget: caps,
                    task: task.clone(),
                }],
                Ok(()),
            ),
            Err(e) => (Vec::new(), Err(e)),
        }
    })?;
    carved?;
    events
        .into_iter()
        .next()
        .ok_or_else(|| SessionError::NotFound(parent_id.to_string()))
}
