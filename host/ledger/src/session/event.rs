//! Events: the records of a session's log, chained by hash.
//!
//! An event's `hash` covers the previous event's hash and the canonical JSON of
//! the event without its own `hash`, so changing, dropping or reordering any
//! record breaks the chain from that point on. The function is the session's
//! [`Chain`]: SHA-256, or HMAC-SHA256 under the chain key (see `chain.rs`).

use glovebox_input::shown::cut_at;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::chain::{Chain, KeyedChain};
use super::kind::EventKind;

/// The `prev_hash` of a session's first event.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Inputs and outputs up to this size are kept in the log; larger ones only by digest.
pub const MAX_INLINE_BYTES: usize = 64 * 1024;

/// One record of a session's log.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// The session id (`s-…`), also the name of the log stream.
    pub session: String,
    /// Gapless, from 1.
    pub seq: u64,
    /// Unix time in milliseconds; never decreases within a session.
    pub at_ms: u64,
    /// `hash` of the event before, or [`GENESIS_HASH`].
    pub prev_hash: String,
    /// The principal that caused it (an agent's or operator's name,
    /// `cli:<uid>` for an operator at the command line, or
    /// [`actor::HOST`](super::actor::HOST) for the host's own doing); see
    /// [`actor`](super::actor). Absent only in logs written before it was
    /// recorded: it is then left out of the hash, so they verify as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The session's chain value: hex SHA-256 (or, keyed, HMAC-SHA256) of
    /// `prev_hash` followed by the canonical JSON of this event without `hash`.
    pub hash: String,
    pub kind: EventKind,
}

/// What the hash covers: the event without its own hash, fields in this order.
#[derive(Serialize)]
struct Body<'a> {
    session: &'a str,
    seq: u64,
    at_ms: u64,
    prev_hash: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    by: Option<&'a str>,
    kind: &'a EventKind,
}

impl Event {
    /// A new event with its hash computed on `chain`, caused by the actor
    /// in force (see [`actor::current`](super::actor::current)).
    pub fn seal(
        chain: &Chain,
        session: &str,
        seq: u64,
        at_ms: u64,
        prev_hash: &str,
        kind: EventKind,
    ) -> Event {
        let by = super::actor::current();
        Event::seal_by(chain, session, seq, at_ms, prev_hash, Some(&by), kind)
    }

    /// A new event caused by `by`, with its hash computed on `chain`.
    pub fn seal_by(
        chain: &Chain,
        session: &str,
        seq: u64,
        at_ms: u64,
        prev_hash: &str,
        by: Option<&str>,
        kind: EventKind,
    ) -> Event {
        let mut event = Event {
            session: session.to_string(),
            seq,
            at_ms,
            prev_hash: prev_hash.to_string(),
            by: by.map(str::to_string),
            hash: String::new(),
            kind,
        };
        event.hash = event.compute_hash(chain);
        event
    }

    /// The hash this event should carry on `chain`, computed from its content.
    pub fn compute_hash(&self, chain: &Chain) -> String {
        let body = Body {
            session: &self.session,
            seq: self.seq,
            at_ms: self.at_ms,
            prev_hash: &self.prev_hash,
            by: self.by.as_deref(),
            kind: &self.kind,
        };
        // Serializing plain structs, enums, strings and integers cannot fail.
        let json = serde_json::to_vec(&body).unwrap_or_default();
        chain.link(&self.prev_hash, &json)
    }

    /// What a session's first event records about its chain: none for a
    /// plain log (or an event that is not `session_started`).
    pub fn keyed_chain(&self) -> Option<&KeyedChain> {
        match &self.kind {
            EventKind::SessionStarted { keyed, .. } => keyed.as_ref(),
            _ => None,
        }
    }

    /// The stored form.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Decodes a stored event; the error says why it does not decode.
    pub fn from_bytes(bytes: &[u8]) -> Result<Event, BadEvent> {
        serde_json::from_slice(bytes).map_err(BadEvent::Undecodable)
    }

    /// Checks that this event is the one stored at `seq` of `session` after an
    /// event whose hash is `prev_hash`, and that its own hash matches its
    /// content on `chain`.
    pub fn check_link(
        &self,
        session: &str,
        seq: u64,
        prev_hash: &str,
        chain: &Chain,
    ) -> Result<(), BadEvent> {
        if self.session != session {
            return Err(BadEvent::OtherSession(self.session.clone()));
        }
        if self.seq != seq {
            return Err(BadEvent::OtherSeq(self.seq));
        }
        if self.prev_hash != prev_hash {
            return Err(BadEvent::Unlinked);
        }
        if self.compute_hash(chain) != self.hash {
            return Err(match chain {
                Chain::Plain => BadEvent::Altered,
                Chain::Keyed(key) => BadEvent::AlteredKeyed {
                    key_id: key.id().to_string(),
                },
            });
        }
        Ok(())
    }
}

/// Why a stored record is not the event expected at its place in a log:
/// what `log verify` reports as the first bad event, and a load as damage.
#[derive(Debug, thiserror::Error)]
pub enum BadEvent {
    #[error("the record does not decode ({0})")]
    Undecodable(serde_json::Error),
    /// The session it names.
    #[error("the record belongs to session `{0}`")]
    OtherSession(String),
    /// The sequence it says it is.
    #[error("the record says it is event {0}")]
    OtherSeq(u64),
    #[error("its prev_hash does not match the hash of the event before")]
    Unlinked,
    #[error("its hash does not match its content")]
    Altered,
    #[error(
        "its hash does not match its content under the chain key (key id {key_id}): altered, or re-sealed without the key"
    )]
    AlteredKeyed { key_id: String },
}

/// Hex sha256 of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `text` if it is small enough to keep in the log.
pub fn inline_if_small(text: &str) -> Option<String> {
    (text.len() <= MAX_INLINE_BYTES).then(|| text.to_string())
}

/// The longest error text an event keeps: a tool chooses its error message,
/// up to its whole output cap, and the log is not the place for megabytes.
pub const MAX_ERROR_BYTES: usize = 4096;

/// An error text as the log keeps it: whole up to [`MAX_ERROR_BYTES`], else
/// cut there (on a character boundary) with its full length noted.
pub fn bounded_error(text: String) -> String {
    if text.len() <= MAX_ERROR_BYTES {
        return text;
    }
    bounded(&text, MAX_ERROR_BYTES)
}

/// Cuts `text` to at most `max` bytes on a character boundary, saying how
/// long it was.
pub fn bounded(text: &str, max: usize) -> String {
    match cut_at(text, max) {
        (head, true) => format!("{head}… ({} bytes in all)", text.len()),
        (whole, false) => whole.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::handoff::Handoff;
    use super::super::kind::{Flag, SessionSummary, UnwaitedJob};
    use super::*;
    use crate::manifest::Severity;

    #[test]
    fn hash_covers_content_and_previous_hash() {
        let a = Event::seal(
            &Chain::Plain,
            "s-1",
            1,
            10,
            GENESIS_HASH,
            EventKind::Note { text: "x".into() },
        );
        assert_eq!(a.hash.len(), 64);
        assert!(a.check_link("s-1", 1, GENESIS_HASH, &Chain::Plain).is_ok());

        let mut changed = a.clone();
        changed.kind = EventKind::Note { text: "y".into() };
        assert!(
            changed
                .check_link("s-1", 1, GENESIS_HASH, &Chain::Plain)
                .unwrap_err()
                .to_string()
                .contains("content")
        );

        let b = Event::seal(&Chain::Plain, "s-1", 2, 11, &a.hash, EventKind::Resumed);
        assert!(
            b.check_link("s-1", 2, GENESIS_HASH, &Chain::Plain)
                .unwrap_err()
                .to_string()
                .contains("prev_hash")
        );
        assert_eq!(Event::from_bytes(&b.to_bytes()).unwrap(), b);
    }

    /// An end record's summary, and a checkpoint's counters, serialize to
    /// the bytes they had before their call totals became one flattened
    /// struct: the hashes of the logs written then cover those bytes.
    #[test]
    fn summaries_and_counters_keep_their_bytes_with_the_call_totals_flattened() {
        let totals = r#""calls":2,"failures":1,"wall_us_total":30,"bytes_in":4,"bytes_out":6,"fuel_total":7,"peak_memory_max":9"#;
        for old in [
            format!(r#"{{"duration_ms":5,{totals}}}"#),
            format!(
                r#"{{"duration_ms":5,{totals},"cost_micros":12,"model_cost_micros":3,"tokens_in":100,"tokens_out":50}}"#
            ),
        ] {
            let summary: SessionSummary = serde_json::from_str(&old).unwrap();
            assert_eq!(summary.totals.peak_memory_max, 9);
            assert_eq!(serde_json::to_string(&summary).unwrap(), old);
        }
        let old = format!(
            r#"{{{totals},"calls_run":2,"cost_micros":12,"model_cost_micros":0,"tokens_in":0,"tokens_out":0}}"#
        );
        let counters: crate::session::Counters = serde_json::from_str(&old).unwrap();
        assert_eq!(counters.totals.calls, 2);
        assert_eq!(serde_json::to_string(&counters).unwrap(), old);
    }

    /// A handoff serializes to the bytes it had before its notes became one
    /// flattened struct, as an end record's summary does.
    #[test]
    fn a_handoff_keeps_its_bytes_with_its_notes_flattened() {
        let old = r#"{"kind":"continuation","from_role":"workagent","to_role":"workagent","objective":"o","requirements":["r"],"files":["a.rs"],"success_criteria":[],"work_completed":["w"],"current_phase":"p","next_steps":["n"],"blockers":["b"],"target_session":null}"#;
        let handoff: Handoff = serde_json::from_str(old).unwrap();
        assert_eq!(handoff.notes.files, ["a.rs"]);
        assert_eq!(handoff.notes.current_phase, "p");
        assert_eq!(serde_json::to_string(&handoff).unwrap(), old);
    }

    #[test]
    fn the_actor_is_covered_by_the_hash_and_absent_in_old_records() {
        let kind = || EventKind::Note { text: "x".into() };
        let by_alice = Event::seal_by(
            &Chain::Plain,
            "s-1",
            1,
            10,
            GENESIS_HASH,
            Some("alice"),
            kind(),
        );
        let mut forged = by_alice.clone();
        forged.by = Some("bob".into());
        assert!(
            forged
                .check_link("s-1", 1, GENESIS_HASH, &Chain::Plain)
                .unwrap_err()
                .to_string()
                .contains("content"),
            "changing who caused an event breaks the chain"
        );
        // A record written before `by` existed: no field, the same hash as then.
        let old = Event::seal_by(&Chain::Plain, "s-1", 1, 10, GENESIS_HASH, None, kind());
        let json = String::from_utf8(old.to_bytes()).unwrap();
        assert!(!json.contains("\"by\""), "{json}");
        assert_eq!(Event::from_bytes(json.as_bytes()).unwrap(), old);
        assert!(
            old.check_link("s-1", 1, GENESIS_HASH, &Chain::Plain)
                .is_ok()
        );
        // Sealed with no actor named: the host's.
        let sealed = Event::seal(&Chain::Plain, "s-1", 1, 10, GENESIS_HASH, kind());
        assert_eq!(sealed.by.as_deref(), Some(super::super::actor::HOST));
        let sealed = super::super::actor::scoped("alice", || {
            Event::seal(&Chain::Plain, "s-1", 1, 10, GENESIS_HASH, kind())
        });
        assert_eq!(sealed.by.as_deref(), Some("alice"));
    }

    /// A `blocker_flag` record sealed when the variant spelt its fields out
    /// (before it held a [`Flag`]): it still decodes, re-encodes to the very
    /// bytes and verifies against its hash.
    #[test]
    fn a_blocker_flag_written_before_the_flag_type_reads_and_verifies_unchanged() {
        const OLD: &str = r#"{"session":"s-old","seq":2,"at_ms":1001,"prev_hash":"0000000000000000000000000000000000000000000000000000000000000000","by":"host","hash":"69406751afd768abbb112ca8589bf5a3d06788c6fbe5c8765b0664c5d07ce856","kind":{"type":"blocker_flag","rule":"retry","severity":"critical","reason":"the same call failed 3 times","suggested_action":"change the input","call_id":"c-1"}}"#;
        let event = Event::from_bytes(OLD.as_bytes()).unwrap();
        assert_eq!(
            event.kind,
            EventKind::BlockerFlag(Flag {
                rule: "retry".into(),
                severity: Severity::Critical,
                reason: "the same call failed 3 times".into(),
                suggested_action: "change the input".into(),
                call_id: Some("c-1".into()),
            })
        );
        assert_eq!(event.to_bytes(), OLD.as_bytes());
        assert!(
            event
                .check_link("s-old", 2, GENESIS_HASH, &Chain::Plain)
                .is_ok()
        );
    }

    #[test]
    fn jobs_unwaited_is_tagged_and_round_trips() {
        let kind = EventKind::JobsUnwaited {
            jobs: vec![UnwaitedJob {
                id: "job-1".into(),
                tool: "sleep.sleep".into(),
                status: "queued".into(),
            }],
        };
        let json = serde_json::to_value(&kind).unwrap();
        assert_eq!(json["type"], "jobs_unwaited");
        assert_eq!(kind.name(), "jobs_unwaited");
        assert_eq!(serde_json::from_value::<EventKind>(json).unwrap(), kind);
    }

    #[test]
    fn kinds_are_tagged_snake_case() {
        let json = serde_json::to_value(EventKind::CallInterrupted {
            call_id: "c".into(),
            reason: "host stopped".into(),
        })
        .unwrap();
        assert_eq!(json["type"], "call_interrupted");
        assert_eq!(EventKind::Resumed.name(), "resumed");
    }
}
