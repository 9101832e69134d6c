//! Notifications: what of a session's log the operator's `[[notify]]` targets
//! are told, and the persisted outbox the host's delivery worker sends from.
//!
//! The one place notifications come from is the session log: after each
//! acknowledged append, [`derive`] maps the event (with the session's state
//! just before it) to the notifications it means, and [`Outbox::enqueue`]
//! writes one entry per interested target into the store. Nothing else in
//! the host raises a notification, so every path that logs an event (a call,
//! the sweep, an operator's command, a job) notifies the same way. Enqueueing
//! never fails the append: the event is durable already, and a failed outbox
//! write is logged.
//!
//! Buckets: `notify_outbox` (entries still to deliver: key
//! `<target>/<created, 20 digits>/<session>/<seq, 20 digits>/<kind>`, so a
//! target's entries scan in the order they were raised), `notify_failed`
//! (entries that exhausted their attempts, same keys) and `notify_delivered`
//! (delivered entries, pruned after a while). Each entry's
//! [`OutboxEntry::delivery_id`] is stable for its (event, target), so a
//! receiver can drop the duplicates at-least-once delivery may bring.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::clock::Clock;
use crate::manifest::Severity;
pub use crate::manifest::{NotifyKind, NotifyTarget};
use crate::session::{EndOutcome, Event, EventKind, SessionState};
use crate::storage::{Storage, StorageError, Swap};
use crate::values::EscalationStep;

pub const OUTBOX_BUCKET: &str = "notify_outbox";
pub const FAILED_BUCKET: &str = "notify_failed";
pub const DELIVERED_BUCKET: &str = "notify_delivered";

/// What a target is told: the same for every format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    /// The kind (`approval_needed`, `flag`, ...).
    pub event: String,
    /// The flag's severity (flags and stalls only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    pub session: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_name: Option<String>,
    pub project: String,
    pub role: String,
    /// The log event it comes from.
    pub seq: u64,
    pub at_ms: u64,
    /// One line for a person.
    pub summary: String,
    /// The event's particulars (call, tool, rule, cap, job, rescue, ...).
    pub details: serde_json::Value,
    /// Targets the event itself names (a schedule's `notify`): they get it
    /// besides those whose `events` want its kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
}

/// Told of every notification an acknowledged event means, whether or not
/// a `[[notify]]` target wants it (the host's `[[trigger]]`s listen here).
/// Called after the event is durable, under the session's lock: it must
/// only hand the notification on, never block or touch the session.
pub trait NotifyObserver: std::fmt::Debug + Send + Sync {
    /// `by` is the event's principal.
    fn raised(&self, by: Option<&str>, kind: NotifyKind, notification: &Notification);
}

/// One notification for one target, as kept in the store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxEntry {
    /// Its key in the bucket it is in.
    pub key: String,
    pub target: String,
    /// The idempotency key, the same at every attempt: `<session>.<seq>.<kind>.<target>`.
    pub delivery_id: String,
    pub notification: Notification,
    pub created_at_ms: u64,
    /// Attempts made so far.
    pub attempts: u32,
    /// Not to be tried before this.
    pub next_attempt_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempt_at_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at_ms: Option<u64>,
    /// The delivery worker sending it now (an [`Outbox`]'s holder id), and
    /// until when that claim stands: see [`Outbox::claim`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_until_ms: Option<u64>,
}

/// One target's entries, by state.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TargetStatus {
    pub target: String,
    pub url: Option<String>,
    pub pending: usize,
    pub delivered: usize,
    pub failed: usize,
    /// The last delivery, when one is kept.
    pub last_delivered_at_ms: Option<u64>,
    /// The entries that exhausted their attempts, oldest first.
    pub failed_entries: Vec<OutboxEntry>,
    /// Pending entries that failed at least once, oldest first.
    pub retrying: Vec<OutboxEntry>,
}

/// The outbox of one store and config: where notifications wait for delivery.
pub struct Outbox {
    storage: Arc<dyn Storage>,
    targets: Vec<NotifyTarget>,
    /// This outbox's id in the claims it makes: random per process, so two
    /// hosts on one shared store (or a server and a one-off command) are two
    /// claimants.
    holder: String,
    clock: Clock,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("targets", &self.targets)
            .finish_non_exhaustive()
    }
}

impl OutboxEntry {
    /// An entry for `target`, not yet stored.
    pub fn new(
        target: &NotifyTarget,
        kind: &str,
        notification: Notification,
        now_ms: u64,
    ) -> OutboxEntry {
        let key = format!(
            "{}/{now_ms:020}/{}/{:020}/{kind}",
            target.name, notification.session, notification.seq
        );
        let delivery_id = format!(
            "{}.{}.{kind}.{}",
            notification.session, notification.seq, target.name
        );
        OutboxEntry {
            key,
            target: target.name.clone(),
            delivery_id,
            notification,
            created_at_ms: now_ms,
            attempts: 0,
            next_attempt_at_ms: now_ms,
            last_attempt_at_ms: None,
            last_error: None,
            delivered_at_ms: None,
            claimed_by: None,
            claimed_until_ms: None,
        }
    }
}

impl Outbox {
    pub fn new(storage: Arc<dyn Storage>, targets: Vec<NotifyTarget>) -> Outbox {
        Outbox {
            storage,
            targets,
            holder: uuid::Uuid::new_v4().simple().to_string(),
            clock: crate::clock::system(),
        }
    }

    /// Replaces the clock its deliveries go by (due times, claims, pruning
    /// and signatures), for tests.
    pub fn with_clock(mut self, clock: Clock) -> Outbox {
        self.clock = clock;
        self
    }

    /// Now, in unix millis, by its clock.
    pub fn clock_ms(&self) -> u64 {
        (self.clock)()
    }

    /// Claims `entry` for one delivery attempt by this outbox, until
    /// `now_ms + for_ms`: a compare-and-set of the stored entry, so of the
    /// hosts sharing a store (`backend = "nats"`) that find one entry due,
    /// exactly one sends it, and the receiver sees one request per attempt,
    /// not one per host. `None`: the entry is gone (delivered or given up
    /// by another host), another claim on it still stands, or another host
    /// claimed it first. A claim left by a host that died lapses at its
    /// time, and the entry is sent again then (still at least once).
    /// Returns the entry as stored with the claim.
    pub fn claim(
        &self,
        entry: &OutboxEntry,
        now_ms: u64,
        for_ms: u64,
    ) -> Result<Option<OutboxEntry>, StorageError> {
        let Some(stored) = self.storage.get(OUTBOX_BUCKET, &entry.key)? else {
            return Ok(None);
        };
        let Some(mut current) = decode(&entry.key, &stored) else {
            return Ok(None);
        };
        if current
            .claimed_by
            .as_ref()
            .is_some_and(|h| *h != self.holder)
            && current.claimed_until_ms.is_some_and(|until| until > now_ms)
        {
            return Ok(None);
        }
        current.claimed_by = Some(self.holder.clone());
        current.claimed_until_ms = Some(now_ms.saturating_add(for_ms));
        let bytes = encode(&current)?;
        Ok(self
            .storage
            .put_if(
                OUTBOX_BUCKET,
                &entry.key,
                Swap::new(Some(&stored), Some(&bytes)),
            )?
            .then_some(current))
    }

    pub fn targets(&self) -> &[NotifyTarget] {
        &self.targets
    }

    pub fn target(&self, name: &str) -> Option<&NotifyTarget> {
        self.targets.iter().find(|t| t.name == name)
    }

    /// Writes an entry for each target that wants `kind`; returns how many.
    pub fn enqueue(
        &self,
        kind: NotifyKind,
        notification: &Notification,
        now_ms: u64,
    ) -> Result<usize, StorageError> {
        let mut written = 0;
        for target in &self.targets {
            if !target.wants(kind, notification.severity) && !notification.to.contains(&target.name)
            {
                continue;
            }
            let entry = OutboxEntry::new(target, kind.as_str(), notification.clone(), now_ms);
            self.put(OUTBOX_BUCKET, &entry)?;
            written += 1;
        }
        Ok(written)
    }

    /// `target`'s entries waiting for delivery, oldest first.
    pub fn pending(&self, target: &str) -> Result<Vec<OutboxEntry>, StorageError> {
        self.entries(OUTBOX_BUCKET, target)
    }

    /// A failed attempt that will be retried: the entry with its new
    /// `attempts`, `last_error` and `next_attempt_at_ms`.
    pub fn retry_later(&self, entry: &OutboxEntry) -> Result<(), StorageError> {
        self.put(OUTBOX_BUCKET, entry)
    }

    /// The entry was delivered: it leaves the outbox.
    pub fn delivered(&self, entry: &OutboxEntry) -> Result<(), StorageError> {
        self.put(DELIVERED_BUCKET, entry)?;
        self.storage.delete(OUTBOX_BUCKET, &entry.key)
    }

    /// The entry exhausted its attempts: kept as failed, out of the outbox.
    pub fn failed(&self, entry: &OutboxEntry) -> Result<(), StorageError> {
        self.put(FAILED_BUCKET, entry)?;
        self.storage.delete(OUTBOX_BUCKET, &entry.key)
    }

    /// Removes delivered entries delivered before `before_ms`; returns how many.
    pub fn prune_delivered(&self, before_ms: u64) -> Result<usize, StorageError> {
        let mut removed = 0;
        for (key, bytes) in self.storage.scan(DELIVERED_BUCKET, "")? {
            let old = decode(&key, &bytes)
                .map(|e| e.delivered_at_ms.unwrap_or(e.created_at_ms) < before_ms)
                .unwrap_or(true);
            if old {
                self.storage.delete(DELIVERED_BUCKET, &key)?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Every target's counts and problem entries: the configured targets in
    /// order, then any target that is no longer configured but has entries.
    pub fn status(&self) -> Result<Vec<TargetStatus>, StorageError> {
        let mut out: Vec<TargetStatus> = self
            .targets
            .iter()
            .map(|t| TargetStatus {
                target: t.name.clone(),
                url: Some(t.url.clone()),
                ..TargetStatus::default()
            })
            .collect();
        for bucket in [OUTBOX_BUCKET, DELIVERED_BUCKET, FAILED_BUCKET] {
            for (key, bytes) in self.storage.scan(bucket, "")? {
                let Some(entry) = decode(&key, &bytes) else {
                    continue;
                };
                let index = match out.iter().position(|s| s.target == entry.target) {
                    Some(i) => i,
                    None => {
                        out.push(TargetStatus {
                            target: entry.target.clone(),
                            ..TargetStatus::default()
                        });
                        out.len() - 1
                    }
                };
                let status = &mut out[index];
                match bucket {
                    OUTBOX_BUCKET => {
                        status.pending += 1;
                        if entry.attempts > 0 {
                            status.retrying.push(entry);
                        }
                    }
                    DELIVERED_BUCKET => {
                        status.delivered += 1;
                        status.last_delivered_at_ms =
                            status.last_delivered_at_ms.max(entry.delivered_at_ms);
                    }
                    _ => {
                        status.failed += 1;
                        status.failed_entries.push(entry);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Entries waiting for delivery, over every target.
    pub fn depth(&self) -> Result<usize, StorageError> {
        Ok(self.storage.scan(OUTBOX_BUCKET, "")?.len())
    }

    fn entries(&self, bucket: &str, target: &str) -> Result<Vec<OutboxEntry>, StorageError> {
        Ok(self
            .storage
            .scan(bucket, &format!("{target}/"))?
            .into_iter()
            .filter_map(|(key, bytes)| decode(&key, &bytes))
            .collect())
    }

    /// Stores `entry` in `bucket`, its claim ended: every write after an
    /// attempt (retry later, delivered, failed) ends the attempt's claim.
    fn put(&self, bucket: &str, entry: &OutboxEntry) -> Result<(), StorageError> {
        let mut entry = entry.clone();
        entry.claimed_by = None;
        entry.claimed_until_ms = None;
        self.storage.put(bucket, &entry.key, &encode(&entry)?)
    }
}

fn encode(entry: &OutboxEntry) -> Result<Vec<u8>, StorageError> {
    serde_json::to_vec(entry)
        .map_err(|e| StorageError::Io(format!("cannot encode an outbox entry: {e}")))
}

/// An entry that does not decode is skipped with a warning: one damaged
/// record must not stop the others' delivery.
fn decode(key: &str, bytes: &[u8]) -> Option<OutboxEntry> {
    match serde_json::from_slice(bytes) {
        Ok(entry) => Some(entry),
        Err(e) => {
            tracing::warn!(key, error = %e, "notify: an outbox entry does not decode; skipped");
            None
        }
    }
}

/// The notifications `event` means, given the session's state `before` it
/// was applied. Pure: the same event always means the same notifications.
pub fn derive(before: &SessionState, event: &Event) -> Vec<(NotifyKind, Notification)> {
    let mut out = Vec::new();
    let mut push = |kind: NotifyKind, severity: Option<Severity>, summary: String, details| {
        out.push((
            kind,
            Notification {
                event: kind.as_str().to_string(),
                severity,
                session: before.header.id.clone(),
                session_name: before.header.name.clone(),
                project: before.header.project.clone(),
                role: before.header.role.to_string(),
                seq: event.seq,
                at_ms: event.at_ms,
                summary,
                details,
                to: Vec::new(),
            },
        ));
    };
    let label = before
        .header
        .name
        .clone()
        .unwrap_or_else(|| before.header.id.clone());
    match &event.kind {
        EventKind::CallFinished {
            call_id,
            outcome,
            error,
            ..
        } => {
            let call = before.in_flight.get(call_id);
            let tool = call.map(|c| c.tool.clone()).unwrap_or_default();
            if outcome == "awaiting_approval" {
                let approval = error.as_deref().and_then(approval_id);
                push(
                    NotifyKind::ApprovalNeeded,
                    None,
                    format!(
                        "session `{label}`: call to `{tool}` awaits approval{}",
                        approval
                            .as_deref()
                            .map(|a| format!(" `{a}` (`glovebox approve {a}`)"))
                            .unwrap_or_default()
                    ),
                    json!({ "call_id": call_id, "tool": tool, "approval_id": approval, "reason": error }),
                );
            } else if let Some(job) = call.and_then(|c| c.job_id.clone()) {
                let (kind, summary) = if outcome == "ok" {
                    (
                        NotifyKind::JobFinished,
                        format!("session `{label}`: job `{job}` ({tool}) finished"),
                    )
                } else {
                    (
                        NotifyKind::JobFailed,
                        format!("session `{label}`: job `{job}` ({tool}) failed: {outcome}"),
                    )
                };
                push(
                    kind,
                    None,
                    summary,
                    json!({ "job_id": job, "call_id": call_id, "tool": tool, "outcome": outcome, "error": error }),
                );
            }
        }
        EventKind::BlockerFlag(flag) => {
            let (rule, severity, reason) = (&flag.rule, flag.severity, &flag.reason);
            let details = json!({ "rule": rule, "reason": reason, "suggested_action": flag.suggested_action, "call_id": flag.call_id });
            push(
                NotifyKind::Flag,
                Some(severity),
                format!("session `{label}`: {severity} flag `{rule}`: {reason}"),
                details.clone(),
            );
            if rule == "no_progress" || rule == "stale" {
                push(
                    NotifyKind::SessionStalled,
                    Some(severity),
                    format!("session `{label}` stalled: {reason}"),
                    details,
                );
            }
        }
        EventKind::BudgetWarning {
            cap,
            used,
            limit,
            percent,
        } => push(
            NotifyKind::BudgetWarning,
            None,
            format!("session `{label}`: {percent}% of its {cap} cap used"),
            json!({ "cap": cap.as_str(), "used": used, "limit": limit, "percent": percent }),
        ),
        EventKind::BudgetExceeded {
            cap,
            used,
            limit,
            call_id,
        } => push(
            NotifyKind::BudgetExceeded,
            None,
            format!(
                "session `{label}`: {cap} cap exceeded ({used} of {limit}); the session is paused"
            ),
            json!({ "cap": cap.as_str(), "used": used, "limit": limit, "call_id": call_id }),
        ),
        EventKind::CeilingWarning {
            scope,
            period,
            period_id,
            measure,
            used,
            limit,
            percent,
        } => push(
            NotifyKind::CeilingWarning,
            None,
            format!(
                "{scope}: {percent}% of its {} {measure} ceiling used in {period} {period_id} ({} of {})",
                period.adjective(),
                measure.show(*used),
                measure.show(*limit)
            ),
            json!({ "scope": scope, "period": period, "period_id": period_id, "measure": measure, "used": used, "limit": limit, "percent": percent }),
        ),
        EventKind::CeilingReached {
            scope,
            period,
            period_id,
            measure,
            used,
            limit,
            ends_at_ms,
            call_id,
            first: true,
        } => push(
            NotifyKind::CeilingReached,
            None,
            format!(
                "{scope} reached its {} {measure} ceiling in {period} {period_id} ({} of {}): its calls are refused and its sessions paused until an operator lifts it (`glovebox budget`)",
                period.adjective(),
                measure.show(*used),
                measure.show(*limit)
            ),
            json!({ "scope": scope, "period": period, "period_id": period_id, "measure": measure, "used": used, "limit": limit, "ends_at_ms": ends_at_ms, "call_id": call_id }),
        ),
        EventKind::Escalation {
            step,
            reason,
            rescue,
        } => {
            if *step == EscalationStep::Rescue && rescue.is_some() {
                push(
                    NotifyKind::RescueOpened,
                    None,
                    format!("session `{label}`: {reason}"),
                    json!({ "rescue_id": rescue, "reason": reason }),
                );
            } else if let Some(open) = before.watch.rescue.as_ref().filter(|open| {
                *step != EscalationStep::Rescue && reason.starts_with(&format!("rescue `{open}`"))
            }) {
                push(
                    NotifyKind::RescueResolved,
                    None,
                    format!("session `{label}`: {reason}"),
                    json!({ "rescue_id": open, "reason": reason, "step": step.as_str() }),
                );
            }
        }
        EventKind::Ended {
            outcome: EndOutcome::Completed,
            summary,
        } => push(
            NotifyKind::SessionCompleted,
            None,
            format!("session `{label}` completed"),
            serde_json::to_value(summary).unwrap_or_default(),
        ),
        EventKind::ScheduleAlert {
            source,
            reason,
            notify,
            call_id,
        } => {
            push(
                NotifyKind::ScheduleAlert,
                None,
                format!("session `{label}`: {source}: {reason}"),
                json!({ "source": source, "reason": reason, "call_id": call_id }),
            );
            if let Some((_, n)) = out.last_mut() {
                n.to = notify.clone();
            }
        }
        _ => {}
    }
    out
}

/// The approval id in an `awaiting_approval` error text.
fn approval_id(error: &str) -> Option<String> {
    let rest = error.split_once("awaits approval `")?.1;
    Some(rest.split_once('`')?.0.to_string())
}

/// A notification for `glovebox notify test`: no session behind it.
pub fn test_notification(target: &str, now_ms: u64) -> Notification {
    Notification {
        event: "test".to_string(),
        severity: None,
        session: "test".to_string(),
        session_name: None,
        project: String::new(),
        role: String::new(),
        seq: now_ms,
        at_ms: now_ms,
        summary: format!("a test notification for target `{target}` from `glovebox notify test`"),
        details: json!({}),
        to: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Sessions, SessionsConfig, StartSession};
    use crate::storage::{Durability, SledStore};
    use std::sync::Mutex;

    /// What an observer was told: the event's principal, the kind, the named targets.
    type Told = (Option<String>, NotifyKind, Vec<String>);

    #[derive(Debug, Default)]
    struct Heard(Mutex<Vec<Told>>);

    impl NotifyObserver for Heard {
        fn raised(&self, by: Option<&str>, kind: NotifyKind, n: &Notification) {
            let mut heard = self.0.lock().unwrap();
            heard.push((by.map(str::to_string), kind, n.to.clone()));
        }
    }

    fn target(name: &str, events: Vec<NotifyKind>) -> NotifyTarget {
        NotifyTarget {
            name: name.into(),
            url: "http://127.0.0.1:9/x".into(),
            events,
            flag_min_severity: Severity::Info,
            format: crate::manifest::NotifyFormat::Json,
            secret: None,
            timeout: std::time::Duration::from_secs(1),
            max_attempts: 1,
            retry_initial: std::time::Duration::from_secs(1),
            retry_max: std::time::Duration::from_secs(1),
        }
    }

    #[test]
    fn a_schedule_alert_reaches_the_targets_it_names_and_the_observers() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> =
            Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
        let outbox = Arc::new(Outbox::new(
            storage.clone(),
            vec![
                // Named by the schedule, though its `events` do not list alerts.
                target("ops", vec![NotifyKind::JobFailed]),
                target("all", NotifyKind::ALL.to_vec()),
                target("other", vec![NotifyKind::Flag]),
            ],
        ));
        let config = SessionsConfig {
            notify: Some(outbox.clone()),
            ..SessionsConfig::default()
        };
        let sessions = Sessions::with_config(storage, config);
        let heard = Arc::new(Heard::default());
        sessions.observe_notifications(heard.clone());
        let state = sessions
            .start(StartSession {
                role: crate::manifest::Role::Workagent,
                project: "billing".into(),
                name: Some("billing-watch".into()),
                tags: vec![],
                expected_duration: None,
                budget: Default::default(),
                completion: Default::default(),
            })
            .unwrap();
        let alert = EventKind::ScheduleAlert {
            source: "schedule:watch".into(),
            reason: "the alert `count > 0` holds: count = 3".into(),
            notify: vec!["ops".into()],
            call_id: Some("c-1".into()),
        };
        crate::session::actor::scoped("schedule:watch", || {
            sessions.append(&state.header.id, alert).unwrap()
        });
        assert_eq!(outbox.pending("ops").unwrap().len(), 1);
        assert_eq!(outbox.pending("all").unwrap().len(), 1);
        assert!(outbox.pending("other").unwrap().is_empty());
        let entry = &outbox.pending("ops").unwrap()[0];
        assert_eq!(entry.notification.event, "schedule_alert");
        assert!(
            entry.notification.summary.contains("count = 3"),
            "{entry:?}"
        );
        let heard = heard.0.lock().unwrap();
        assert!(
            heard.contains(&(
                Some("schedule:watch".into()),
                NotifyKind::ScheduleAlert,
                vec!["ops".into()]
            )),
            "{heard:?}"
        );
    }

    /// Two hosts' outboxes on one store: of two that find an entry due,
    /// one claims it; a claim that lapsed (its host died mid-attempt) is
    /// claimed again; an entry delivered is claimed by nobody.
    #[test]
    fn an_entry_is_claimed_by_one_outbox_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> =
            Arc::new(SledStore::open(dir.path(), Durability::Flush).unwrap());
        let targets = vec![target("ops", NotifyKind::ALL.to_vec())];
        let (a, b) = (
            Outbox::new(storage.clone(), targets.clone()),
            Outbox::new(storage.clone(), targets.clone()),
        );
        let notification = Notification {
            event: "flag".into(),
            severity: None,
            session: "s-1".into(),
            session_name: None,
            project: "p".into(),
            role: "workagent".into(),
            seq: 7,
            at_ms: 1_000,
            summary: "stuck".into(),
            details: json!({}),
            to: vec![],
        };
        assert_eq!(
            a.enqueue(NotifyKind::Flag, &notification, 1_000).unwrap(),
            1
        );
        let entry = a.pending("ops").unwrap().remove(0);

        let claimed = a
            .claim(&entry, 2_000, 10_000)
            .unwrap()
            .expect("a claims it");
        assert_eq!(claimed.claimed_until_ms, Some(12_000));
        assert!(b.claim(&entry, 2_001, 10_000).unwrap().is_none());
        // The holder may claim again (a retry within its claim).
        assert!(a.claim(&entry, 3_000, 10_000).unwrap().is_some());
        // A dies: once its claim lapsed, B claims the entry and sends it.
        let claimed = b.claim(&entry, 13_001, 10_000).unwrap().expect("lapsed");
        assert!(a.claim(&entry, 13_002, 10_000).unwrap().is_none());
        b.delivered(&claimed).unwrap();
        assert!(a.claim(&entry, 30_000, 10_000).unwrap().is_none());
        assert!(b.claim(&entry, 30_000, 10_000).unwrap().is_none());
        assert_eq!(a.status().unwrap()[0].delivered, 1);

        // Many claimants at once: exactly one wins.
        assert_eq!(
            a.enqueue(NotifyKind::Flag, &notification, 40_000).unwrap(),
            1
        );
        let entry = a.pending("ops").unwrap().remove(0);
        let outboxes: Vec<Arc<Outbox>> = (0..4)
            .map(|_| Arc::new(Outbox::new(storage.clone(), targets.clone())))
            .collect();
        let barrier = Arc::new(std::sync::Barrier::new(outboxes.len()));
        let won: usize = outboxes
            .iter()
            .map(|o| {
                let (o, barrier, entry) = (o.clone(), barrier.clone(), entry.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    o.claim(&entry, 41_000, 10_000).unwrap().is_some()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| usize::from(t.join().unwrap()))
            .sum();
        assert_eq!(won, 1);
    }

    #[test]
    fn the_approval_id_is_read_from_the_error() {
        let text = "call to `fs.write` awaits approval `a-123` (gate: sure?): `glovebox approve a-123` runs it";
        assert_eq!(approval_id(text).as_deref(), Some("a-123"));
        assert_eq!(approval_id("timeout"), None);
    }
}
