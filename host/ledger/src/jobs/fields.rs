//! The fields a job's record ([`super::JobSummary`], what the store keeps
//! and a listing answers) and the job with its bodies ([`super::JobInfo`],
//! what `job_status` and `job_wait` answer) have in common, declared once.
//!
//! Why a macro: the two are separate types on purpose (the record holds no
//! body, so a listing never decodes one), but every field they share must
//! mean the same and serialize the same in both: a field added to one and
//! forgotten in the other is a record that loses it. Each struct says only
//! what is its own, at the two places it goes (after `tool`, after
//! `attempts`), so the JSON keeps its order.

/// Declares a job struct with the shared fields and `$own_input` after
/// `tool`, `$own_result` after `attempts`.
macro_rules! job_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            after tool { $($own_input:tt)* }
            after attempts { $($own_result:tt)* }
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            /// `job-` and 12 hex digits.
            pub id: String,
            /// The session's id.
            pub session: String,
            pub session_name: Option<String>,
            /// `plugin.tool`.
            pub tool: String,
            $($own_input)*
            pub status: JobStatus,
            pub created_at_ms: u64,
            /// When it last started running.
            pub started_at_ms: Option<u64>,
            pub finished_at_ms: Option<u64>,
            /// Whether its tool is idempotent (re-run after a host restart).
            pub idempotent: bool,
            /// How many times it started running.
            pub attempts: u32,
            $($own_result)*
            /// The principal that spawned it: its call's events are that
            /// principal's (see [`crate::session::actor`]). Absent in records
            /// written before it was kept.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub by: Option<String>,
            /// Whether anyone has read its final result (`job status`, `job wait`
            /// and their MCP tools): `Some(false)` from its creation until then,
            /// `None` in records written before reads were tracked. A session that
            /// ends with a result unread left it unwaited (`glovebox doctor`).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub result_read: Option<bool>,
            /// The process that last started it (`node/holder` on a shared store,
            /// a random id of the process otherwise): a start is claimed with a
            /// compare-and-set of the record, so of two hosts starting one queued
            /// job exactly one runs it. Absent in records written before.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub runner: Option<String>,
            /// The principal that owns its session: who may see it besides the
            /// operators (the listings of an agent show the jobs of its
            /// sessions, the `p/` index). Absent when it was not known.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub owner: Option<String>,
            /// The agent principal whose `quotas.job_bytes_per_principal` counts
            /// its input and result ([`crate::jobs::JobSummary::stored_bytes`]); absent for an
            /// operator's job, and for one stored before the quota was counted.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub charged_to: Option<String>,
            /// The approval its call waits for, while it is
            /// `awaiting_approval`, and after: the approval that settled it.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub approval: Option<String>,
        }
    };
}

pub(super) use job_struct;
