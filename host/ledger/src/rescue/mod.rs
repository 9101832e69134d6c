//! Rescue missions: the structured way out for a stuck session, and the
//! context index that turns each rescue into knowledge for the next session.
//!
//! A rescue goes open → diagnose → inject → resolve:
//!
//! - `open` records the session and call it concerns and when the blocker
//!   was detected (its oldest active flag, or now); the session moves to the
//!   `rescue` step of the escalation ladder and is paused if it was active.
//! - `diagnose` records the category of the root cause, the evidence and the
//!   root cause itself.
//! - `assign` names who works on it (the designated engineer).
//! - `inject` hands the session a description, files with their content and
//!   spec changes (`handover.rs`): a `context_injected` event in its log,
//!   which its next `resume` returns.
//! - `resolve` records the outcome (resolved, re-escalated, abandoned) and
//!   the time; its enrich step proposes entries to the project's scope of
//!   the memory bank (`crate::memory`), which every new session of the
//!   project gets when it starts once an operator approved them (a lesson
//!   drawn in the heat of a rescue is reviewed like any other). A resolved
//!   rescue takes the session back to the ladder's `none` step and lifts
//!   the pause the rescue took (not one a flag, an operator or the agent
//!   took); the others leave it on `blocker`, paused.
//!
//! Records are JSON in the bucket `rescues` under their id (`r-…`); what
//! lists them reads their indexes (`index.rs`), a page at a time.

mod context;
mod error;
mod handover;
mod index;
mod listing;
mod report;
#[cfg(test)]
mod tests;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

pub use context::{
    ContextEntry, ContextIndex, ContextKind, INDEX_SOURCE, IndexEntry, MAX_ENTRY_BYTES,
};
pub use error::RescueError;
pub use handover::{
    AttachedFile, HandedFile, Handover, MAX_FILE_BYTES, MAX_FILES, MAX_HANDOVER_BYTES,
};
pub use report::{RescueReport, Tally, report_of};

use crate::detect::EscalationStep;
use crate::manifest::{ContextConfig, ContextWriter, MemoryConfig};
use crate::memory::{MemoryBank, MemoryError, Proposal, Provenance, Scope};
use crate::session::{EventKind, SessionError, SessionStatus, Sessions};
use crate::storage::{Storage, StorageError};

const BUCKET: &str = "rescues";
const DAY_MS: u64 = 86_400_000;

/// The category of a blocker's root cause.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    MissingContext,
    AmbiguousSpec,
    ConstraintViolation,
    ToolDefect,
    Budget,
    Other,
}

impl Category {
    pub const ALL: [Category; 6] = [
        Category::MissingContext,
        Category::AmbiguousSpec,
        Category::ConstraintViolation,
        Category::ToolDefect,
        Category::Budget,
        Category::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::MissingContext => "missing_context",
            Category::AmbiguousSpec => "ambiguous_spec",
            Category::ConstraintViolation => "constraint_violation",
            Category::ToolDefect => "tool_defect",
            Category::Budget => "budget",
            Category::Other => "other",
        }
    }
}

glovebox_manifest::named_enum!(Category, "category");

/// How a rescue ended.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The session is unblocked.
    Resolved,
    /// Handed further up: the session stays blocked.
    ReEscalated,
    /// Given up: the session stays blocked (end it).
    Abandoned,
}

impl Outcome {
    pub const ALL: [Outcome; 3] = [Outcome::Resolved, Outcome::ReEscalated, Outcome::Abandoned];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Resolved => "resolved",
            Outcome::ReEscalated => "re_escalated",
            Outcome::Abandoned => "abandoned",
        }
    }
}

glovebox_manifest::named_enum!(Outcome, "outcome");

/// What the blocker was.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub category: Category,
    pub evidence: Vec<String>,
    pub root_cause: String,
    pub at_ms: u64,
}

/// What was handed to the session.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Injection {
    /// What the operator found, as handed over (absent in injections made
    /// before injections had one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The paths handed over, with or without their content.
    pub context_files: Vec<String>,
    /// The files whose content was handed over, with its digest and size
    /// (the content itself is in the session's log).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attached: Vec<AttachedFile>,
    pub spec_changes: Vec<String>,
    pub at_ms: u64,
    /// The `context_injected` event in the session's log.
    pub seq: u64,
}

/// One rescue mission.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rescue {
    pub id: String,
    pub session: String,
    pub session_name: Option<String>,
    pub project: String,
    /// The call it concerns.
    pub call_id: Option<String>,
    /// Who works on it (the designated engineer), as the operator named them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// When the blocker was detected: the oldest active flag, or the opening.
    pub detected_at_ms: u64,
    pub opened_at_ms: u64,
    /// The blocker flags active when it was opened (rule: reason).
    pub flags: Vec<String>,
    pub diagnosis: Option<Diagnosis>,
    pub injections: Vec<Injection>,
    pub outcome: Option<Outcome>,
    /// The memory entries (`m-…`) its enrich step proposed (context index
    /// entries, `c-…`, in rescues resolved before the memory bank).
    pub context_updates: Vec<String>,
    pub resolved_at_ms: Option<u64>,
}

impl Rescue {
    /// `open`, `diagnosed`, `injected`, or the outcome.
    pub fn status(&self) -> &'static str {
        match (&self.outcome, self.injections.is_empty(), &self.diagnosis) {
            (Some(o), _, _) => o.as_str(),
            (None, false, _) => "injected",
            (None, true, Some(_)) => "diagnosed",
            (None, true, None) => "open",
        }
    }

    /// Detection to resolution, for a resolved rescue.
    pub fn time_to_unblock_ms(&self) -> Option<u64> {
        match (self.outcome, self.resolved_at_ms) {
            (Some(Outcome::Resolved), Some(at)) => Some(at.saturating_sub(self.detected_at_ms)),
            _ => None,
        }
    }
}

/// The rescues of a data dir.
pub struct Rescues {
    sessions: Arc<Sessions>,
    storage: Arc<dyn Storage>,
    index: ContextIndex,
    /// Where the enrich step proposes its lessons (for an operator's review).
    memory: MemoryBank,
    /// Set once the data dir's rescues are known to be indexed (`index.rs`).
    indexed: AtomicBool,
    indexing: Mutex<()>,
}

impl Rescues {
    /// Rescues over `sessions` (whose clock they use), stored in `storage`,
    /// with the operator's `[context]` setting.
    pub fn new(
        sessions: Arc<Sessions>,
        storage: Arc<dyn Storage>,
        context: ContextConfig,
    ) -> Rescues {
        let index = ContextIndex::new(storage.clone(), context);
        let memory = MemoryBank::new(storage.clone(), MemoryConfig::default());
        Rescues {
            sessions,
            storage,
            index,
            memory,
            indexed: AtomicBool::new(false),
            indexing: Mutex::new(()),
        }
    }

    /// The same, with the operator's `[memory]` settings for the entries the
    /// enrich step proposes (the default ones otherwise).
    pub fn with_memory(mut self, config: MemoryConfig) -> Rescues {
        self.memory = MemoryBank::new(self.storage.clone(), config);
        self
    }

    /// The context index.
    pub fn index(&self) -> &ContextIndex {
        &self.index
    }

    pub fn now(&self) -> u64 {
        self.sessions.now()
    }

    /// Opens a rescue of `session` (id or name), about call `call_id` (by
    /// default the call its flags name, or the call failing most).
    pub fn open(&self, session: &str, call_id: Option<&str>) -> Result<Rescue, RescueError> {
        // The old records first, so the new one's entries are not the only ones.
        self.ensure_indexed()?;
        let state = self.sessions.show(session)?;
        if !state.header.status.is_live() {
            return Err(RescueError::InvalidInput(format!(
                "session {} is {}: a rescue is for a live session",
                state.label(),
                state.header.status
            )));
        }
        if let Some(open) = &state.watch.rescue
            && self.get(open).is_ok_and(|r| r.outcome.is_none())
        {
            return Err(RescueError::InvalidInput(format!(
                "session {} is already being rescued by `{open}`: resolve that one first",
                state.label()
            )));
        }
        let call_id = match call_id {
            Some(c) => {
                let known = self.sessions.events(&state.header.id, 1, usize::MAX)?.iter().any(
                    |e| matches!(&e.kind, EventKind::CallRequested { call_id, .. } if call_id == c),
                );
                if !known {
                    return Err(RescueError::NotFound(format!(
                        "session {} has no call `{c}`: `glovebox log show {}` lists its calls",
                        state.label(),
                        state.header.id
                    )));
                }
                Some(c.to_string())
            }
            None => state
                .watch
                .flags
                .values()
                .find_map(|f| f.call_id.clone())
                .or_else(|| {
                    state
                        .watch
                        .failing
                        .values()
                        .max_by_key(|f| f.failures)
                        .map(|f| f.last_call_id.clone())
                }),
        };
        let now = self.now();
        let rescue = Rescue {
            id: format!("r-{}", uuid::Uuid::new_v4().simple()),
            session: state.header.id.clone(),
            session_name: state.header.name.clone(),
            project: state.header.project.clone(),
            call_id,
            assignee: None,
            detected_at_ms: state
                .watch
                .flags
                .values()
                .map(|f| f.at_ms)
                .min()
                .unwrap_or(now)
                .min(now),
            opened_at_ms: now,
            flags: state
                .watch
                .flags
                .iter()
                .map(|(rule, f)| format!("{rule} ({}): {}", f.severity, f.reason))
                .collect(),
            diagnosis: None,
            injections: Vec::new(),
            outcome: None,
            context_updates: Vec::new(),
            resolved_at_ms: None,
        };
        self.index_new(&rescue)?;
        self.put(&rescue)?;
        let id = rescue.id.clone();
        let logged = self.sessions.append_with(&state.header.id, |state, _| {
            let mut events = vec![EventKind::Escalation {
                step: EscalationStep::Rescue,
                reason: format!("rescue `{id}` opened"),
                rescue: Some(id.clone()),
            }];
            if state.header.status == SessionStatus::Active {
                events.push(EventKind::Paused {
                    reason: pause_reason(&id),
                    by: None,
                });
            }
            (events, ())
        });
        if let Err(e) = logged {
            let _ = self.storage.delete(BUCKET, &rescue.id);
            self.unindex(&rescue, false);
            return Err(e.into());
        }
        Ok(rescue)
    }

    /// Records the diagnosis of an unresolved rescue (a later one replaces it).
    pub fn diagnose(
        &self,
        id: &str,
        category: Category,
        evidence: Vec<String>,
        root_cause: &str,
    ) -> Result<Rescue, RescueError> {
        let mut rescue = self.unresolved(id, "diagnose")?;
        if root_cause.trim().is_empty() {
            return Err(RescueError::InvalidInput(
                "a diagnosis names its root cause: `--root-cause TEXT`".into(),
            ));
        }
        rescue.diagnosis = Some(Diagnosis {
            category,
            evidence,
            root_cause: root_cause.trim().to_string(),
            at_ms: self.now(),
        });
        self.put(&rescue)?;
        Ok(rescue)
    }

    /// Names who works on an unresolved rescue (a later name replaces it).
    pub fn assign(&self, id: &str, assignee: &str) -> Result<Rescue, RescueError> {
        let mut rescue = self.unresolved(id, "assign")?;
        let assignee = assignee.trim();
        if assignee.is_empty() || assignee.len() > 256 {
            return Err(RescueError::InvalidInput(format!(
                "an assignee is a name of 1 to 256 bytes, not {}: `--to NAME`",
                assignee.len()
            )));
        }
        rescue.assignee = Some(assignee.to_string());
        self.put(&rescue)?;
        Ok(rescue)
    }

    /// Hands the rescued session what `handover` holds (a description, files
    /// with their content, spec changes): appended to its log, returned by
    /// its next resume. Every bound is checked before anything is written.
    pub fn inject(&self, id: &str, handover: Handover) -> Result<Rescue, RescueError> {
        let mut rescue = self.unresolved(id, "inject into")?;
        handover.check()?;
        let source = format!("rescue:{}", rescue.id);
        let entries = handover.entries(&rescue.id, &source, self.now());
        let event = self.sessions.append(
            &rescue.session,
            EventKind::ContextInjected { source, entries },
        )?;
        rescue.injections.push(Injection {
            description: handover
                .description
                .as_deref()
                .map(|d| d.trim().to_string()),
            context_files: handover.files.iter().map(|f| f.path.clone()).collect(),
            attached: handover.attached(),
            spec_changes: handover.spec_changes,
            at_ms: event.at_ms,
            seq: event.seq,
        });
        self.put(&rescue)?;
        Ok(rescue)
    }

    /// Closes a rescue with `outcome`; `enrich` proposes entries to the
    /// project's scope of the memory bank, for an operator's review (refused,
    /// with nothing changed, unless `[context] writers` allows rescues, or
    /// when an entry is empty or longer than `[memory] max_entry_bytes`).
    pub fn resolve(
        &self,
        id: &str,
        outcome: Outcome,
        enrich: &[String],
    ) -> Result<Rescue, RescueError> {
        let mut rescue = self.unresolved(id, "resolve")?;
        if !enrich.is_empty() {
            self.index.check_writer(ContextWriter::Rescue)?;
        }
        // Each lesson becomes a proposed memory entry of the project: every
        // one is checked before any is written.
        let now = self.now();
        let by = crate::session::actor::current().to_string();
        let mut proposed = Vec::new();
        for text in enrich {
            let proposal = Proposal {
                scope: Scope::Project(rescue.project.clone()),
                text: text.clone(),
                provenance: Provenance {
                    by: by.clone(),
                    session: Some(rescue.session.clone()),
                    rescue: Some(rescue.id.clone()),
                },
            };
            let entry = self.memory.prepare(proposal, now).map_err(|e| {
                RescueError::InvalidInput(format!("an enrich entry is refused: {e}"))
            })?;
            proposed.push(entry);
        }
        for entry in proposed {
            self.memory.record(&entry).map_err(|e| match e {
                MemoryError::Storage(s) => RescueError::Storage(s),
                other => RescueError::InvalidInput(other.to_string()),
            })?;
            rescue.context_updates.push(entry.id);
        }
        rescue.outcome = Some(outcome);
        rescue.resolved_at_ms = Some(now);
        self.put(&rescue)?;
        self.unindex(&rescue, true);
        let step = if outcome == Outcome::Resolved {
            EscalationStep::None
        } else {
            EscalationStep::Blocker
        };
        let kind = EventKind::Escalation {
            step,
            reason: format!("rescue `{}` {outcome}", rescue.id),
            rescue: None,
        };
        // A resolved rescue lifts the pause it took itself (not one a flag,
        // an operator or the agent took): the agent goes on with what it
        // was handed.
        let own_pause = pause_reason(&rescue.id);
        let logged = self.sessions.append_with(&rescue.session, |state, _| {
            let mut events = vec![kind];
            if outcome == Outcome::Resolved
                && state.header.status == SessionStatus::Paused
                && state.paused_by.is_none()
                && state.paused_reason.as_deref() == Some(own_pause.as_str())
            {
                events.push(EventKind::Resumed);
            }
            (events, ())
        });
        // The record is what counts; a session that ended since keeps its log closed.
        match logged {
            Ok(_) => {}
            Err(SessionError::InvalidEvent { .. } | SessionError::IllegalTransition { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        Ok(rescue)
    }

    /// The rescue `id`.
    pub fn get(&self, id: &str) -> Result<Rescue, RescueError> {
        let bytes = self.storage.get(BUCKET, id)?.ok_or_else(|| {
            RescueError::NotFound(format!(
                "no rescue `{id}`: `glovebox rescue list` lists them"
            ))
        })?;
        serde_json::from_slice(&bytes)
            .map_err(|e| RescueError::Storage(StorageError::Corrupt(format!("rescue `{id}`: {e}"))))
    }

    fn unresolved(&self, id: &str, action: &str) -> Result<Rescue, RescueError> {
        let rescue = self.get(id)?;
        if let Some(outcome) = rescue.outcome {
            return Err(RescueError::InvalidInput(format!(
                "rescue `{id}` is closed ({outcome}): cannot {action} it; open a new one"
            )));
        }
        Ok(rescue)
    }

    fn put(&self, rescue: &Rescue) -> Result<(), RescueError> {
        let bytes = serde_json::to_vec_pretty(rescue).unwrap_or_default();
        self.storage.put(BUCKET, &rescue.id, &bytes)?;
        Ok(())
    }
}

/// The reason of the pause a rescue takes when it opens on an active
/// session: how its resolution knows the pause is its own to lift.
fn pause_reason(id: &str) -> String {
    format!("rescue `{id}` under way: wait for its injected context")
}
