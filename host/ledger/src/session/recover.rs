//! Verifying logs, and recovering after the host stopped: calls in flight become
//! interrupted, indexes that fell behind the logs are repaired.

use serde::Serialize;

use super::error::SessionError;
use super::index::{LIVE, PAGE, id_of};
use super::kind::EventKind;
use super::leasing::Taken;
use super::names::{NAMES_BUCKET, name_key};
use super::slots::{lock, lock_slot};
use super::state::SessionState;
use super::store::Sessions;
use super::verify::{self, VerifyReport};
use crate::storage::Swap;

/// A call found in flight by [`Sessions::recover`] and now logged as interrupted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RecoveredCall {
    pub session: String,
    pub session_name: Option<String>,
    pub call_id: String,
    pub tool: String,
    /// Whether the tool may have run (it was started).
    pub started: bool,
    /// Re-run it only if true, and with `idempotency_key`.
    pub idempotent: bool,
    pub idempotency_key: Option<String>,
}

/// What [`Sessions::recover`] did.
#[derive(Debug, Default)]
pub struct Recovery {
    pub interrupted: Vec<RecoveredCall>,
    /// Sessions that could not be loaded (a damaged log); they are left as they are.
    pub refused: Vec<SessionError>,
}

impl Sessions {
    /// Checks the session's whole hash chain, on its chain (plain or keyed);
    /// works on a damaged log. A keyed log whose key is not configured is
    /// an error ([`SessionError::KeyRequired`]), never checked as plain.
    pub fn verify(&self, id_or_name: &str) -> Result<VerifyReport, SessionError> {
        let id = self.resolve(id_or_name)?;
        self.verify_id(&id)
    }

    fn verify_id(&self, id: &str) -> Result<VerifyReport, SessionError> {
        let info = self.get_info(id)?;
        let name = info.as_ref().and_then(|i| i.header.name.clone());
        verify::verify(&*self.storage, id, name, self.chain_key(), info.as_ref())
    }

    /// [`Sessions::verify`] for every session.
    pub fn verify_all(&self) -> Result<Vec<VerifyReport>, SessionError> {
        let mut reports = Vec::new();
        for id in self.session_ids()? {
            reports.push(self.verify_id(&id)?);
        }
        Ok(reports)
    }

    /// Run once when the host starts, before any call: logs every call that was
    /// requested or running when the host stopped as `call_interrupted` and
    /// returns them (re-run only idempotent ones, with their key). Also repairs
    /// the listing, name and live indexes where they fell behind the logs. A
    /// session whose log is damaged is reported in `refused` and left alone.
    ///
    /// It visits the sessions of the live index only (`index.rs`: the live
    /// ones, and any with calls in flight), a page at a time: a restart costs
    /// as much as the sessions that may owe an ending, not every session the
    /// store ever held.
    pub fn recover(&self) -> Result<Recovery, SessionError> {
        self.ensure_indexed()?;
        let mut recovery = Recovery::default();
        let mut after: Option<String> = None;
        loop {
            let page = self.storage.scan_page(LIVE, "", after.as_deref(), PAGE)?;
            let end = page.len() < PAGE;
            for (key, _) in &page {
                self.recover_one(key, &mut recovery)?;
            }
            match page.into_iter().last() {
                Some((key, _)) if !end => after = Some(key),
                _ => break,
            }
        }
        Ok(recovery)
    }

    /// What [`Sessions::recover`] does for one entry of the live index.
    fn recover_one(&self, key: &str, recovery: &mut Recovery) -> Result<(), SessionError> {
        let id = id_of(key).to_string();
        let owner = key.split('/').next().unwrap_or_default();
        let _names = lock(&self.names);
        // A hint whose session was never written (a start that failed or
        // was cut short). On a shared store it may be another host's start
        // under way: left alone there.
        if !self.leased() && self.storage.last_seq(&id).ok() == Some(0) {
            self.unindex_live(owner, &id);
            return Ok(());
        }
        let slot = self.slot(&id);
        let mut slot = lock_slot(&slot);
        let state = match self.loaded(&mut slot, &id) {
            Ok(state) => state.clone(),
            Err(e) => {
                tracing::error!(session = %id, error = %e, "session not recovered");
                recovery.refused.push(e);
                return Ok(());
            }
        };
        self.reconcile_info(&state);
        self.reconcile_name(&state);
        // On a shared store the calls in flight may be another live
        // host's: only a lease that is free or expired makes them ours
        // to end (see `lease.rs`).
        let mut stopped = "the host stopped".to_string();
        if self.leased() && !state.in_flight.is_empty() {
            match self.lease_for_recovery(&id)? {
                None => return Ok(()),
                Some(Taken::Over(previous)) => {
                    // It may have appended since the load above.
                    slot.state = None;
                    stopped = format!(
                        "node `{}` stopped driving the session (its lease expired)",
                        previous.node
                    );
                }
                Some(Taken::Renewed | Taken::Fresh) => {}
            }
        }
        let state = match self.loaded(&mut slot, &id) {
            Ok(state) => state.clone(),
            Err(e) => {
                recovery.refused.push(e);
                return Ok(());
            }
        };
        for (call_id, call) in &state.in_flight {
            let reason = if call.started_at_ms.is_some() {
                format!("{stopped} while the call was running")
            } else {
                format!("{stopped} before the call ran")
            };
            let kind = EventKind::CallInterrupted {
                call_id: call_id.clone(),
                reason,
            };
            self.append_locked(&mut slot, &id, kind)?;
            recovery.interrupted.push(RecoveredCall {
                session: id.clone(),
                session_name: state.header.name.clone(),
                call_id: call_id.clone(),
                tool: call.tool.clone(),
                started: call.started_at_ms.is_some(),
                idempotent: call.idempotent,
                idempotency_key: call.idempotency_key.clone(),
            });
        }
        // Ended before a stop that came before its entry went.
        if !state.header.status.is_live() && state.in_flight.is_empty() {
            self.unindex_live(state.owner_name(), &id);
        }
        // Taken to recover the session, not to drive it.
        self.release_lease(&id);
        Ok(())
    }

    /// Claims a live session's name in its owner's space if nobody holds
    /// it, releases an ended one's.
    fn reconcile_name(&self, state: &SessionState) {
        let Some(name) = &state.header.name else {
            return;
        };
        let (owner, id) = (state.owner_name(), state.header.id.as_str());
        let result = if state.header.status.is_live() {
            self.storage
                .put_if(
                    NAMES_BUCKET,
                    &name_key(owner, name),
                    Swap::new(None, Some(id.as_bytes())),
                )
                .map(|_| ())
        } else {
            self.release_name(owner, name, id)
        };
        if let Err(e) = result {
            tracing::warn!(session = %id, error = %e, "could not repair the name index");
        }
    }
}
