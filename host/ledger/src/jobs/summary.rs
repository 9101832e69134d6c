//! A job's record without its bodies: what the `jobs` bucket holds and what a
//! listing answers.
//!
//! Why: a job's input (up to 1 MiB), output (up to its plugin's cap) and
//! captured stdout and stderr are most of its bytes, and a listing, a
//! recovery or a sweep needs none of them. Kept inline, every listing decoded
//! every body of every job (threat 49). So the record says how large each
//! body is and its SHA-256, and the bodies live apart (`data.rs`), read only
//! by what answers them: `job_status` and `job_wait` ([`super::JobInfo`]).

use serde::{Deserialize, Serialize};

use super::fields::job_struct;
use super::records::{JobErrorInfo, JobInfo, JobResult, JobStatus};
use crate::session::{CallMetering, bounded, digest};

/// The longest error message a record keeps; a longer one is cut here, and
/// the whole result is kept apart.
pub const SUMMARY_ERROR_BYTES: usize = 1024;

job_struct! {
    /// A job, as stored and listed: everything but its bodies.
    #[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    pub struct JobSummary {
        after tool {}
        after attempts {
            /// The input's length in bytes (JSON text) and its SHA-256 (hex).
            pub input_bytes: u64,
            pub input_sha256: String,
            /// Set once final; a job re-queued after an interruption carries the
            /// interruption here until it runs again.
            pub result: Option<ResultSummary>,
        }
    }
}

/// What a job's call produced, without its bodies.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultSummary {
    /// Why it did not produce an output; a message is cut at
    /// [`SUMMARY_ERROR_BYTES`] (the whole of it is in the result kept apart).
    pub error: Option<JobErrorInfo>,
    pub metering: CallMetering,
    /// The output's length (its JSON text) and SHA-256; absent when there
    /// is no output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_sha256: Option<String>,
    /// Bytes the guest wrote to stdout and stderr, kept or not.
    #[serde(default)]
    pub stdout_bytes: u64,
    #[serde(default)]
    pub stderr_bytes: u64,
    /// The whole result (output, captured stdout and stderr, the error
    /// uncut), where it is kept apart; absent when this summary is all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<Kept>,
}

/// Where a job's whole result is kept: under the attempt that produced it,
/// so a run that lost a race never overwrites the result another run stored.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    pub attempt: u32,
    pub bytes: u64,
}

impl ResultSummary {
    /// The summary of `result`, produced by attempt `attempt`, and the
    /// bytes of the whole result to keep apart when the summary is not all
    /// of it (it has an output, captured output or a long error).
    pub fn of(result: &JobResult, attempt: u32) -> (ResultSummary, Option<Vec<u8>>) {
        let output = result
            .output
            .as_ref()
            .map(|o| serde_json::to_vec(o).unwrap_or_default());
        let long_error = result
            .error
            .as_ref()
            .is_some_and(|e| e.message.len() > SUMMARY_ERROR_BYTES);
        let whole = (output.is_some()
            || !result.stdout.text.is_empty()
            || !result.stderr.text.is_empty()
            || long_error)
            .then(|| serde_json::to_vec(result).unwrap_or_default());
        let summary = ResultSummary {
            error: result.error.as_ref().map(|e| JobErrorInfo {
                kind: e.kind.clone(),
                message: bounded(&e.message, SUMMARY_ERROR_BYTES),
            }),
            metering: result.metering.clone(),
            output_bytes: output.as_ref().map(|o| o.len() as u64),
            output_sha256: output.as_ref().map(|o| digest(o)),
            stdout_bytes: result.stdout.total_bytes,
            stderr_bytes: result.stderr.total_bytes,
            kept: whole.as_ref().map(|w| Kept {
                attempt,
                bytes: w.len() as u64,
            }),
        };
        (summary, whole)
    }

    /// The result when this summary is all of it (nothing kept apart).
    pub(super) fn whole(&self) -> JobResult {
        JobResult {
            output: None,
            error: self.error.clone(),
            stdout: captured(self.stdout_bytes),
            stderr: captured(self.stderr_bytes),
            metering: self.metering.clone(),
        }
    }
}

/// What a result with nothing kept says of a stream the guest wrote
/// `total` bytes to (none of them kept).
fn captured(total: u64) -> crate::manifest::Captured {
    crate::manifest::Captured {
        text: String::new(),
        total_bytes: total,
        truncated: total > 0,
    }
}

impl JobSummary {
    /// The summary of `job`, whose result came from attempt
    /// `job.attempts`, and the bytes of its result to keep apart, if any.
    pub fn of(job: &JobInfo) -> (JobSummary, Option<Vec<u8>>) {
        let (result, whole) = match &job.result {
            Some(r) => {
                let (summary, whole) = ResultSummary::of(r, job.attempts);
                (Some(summary), whole)
            }
            None => (None, None),
        };
        let summary = JobSummary {
            id: job.id.clone(),
            session: job.session.clone(),
            session_name: job.session_name.clone(),
            tool: job.tool.clone(),
            status: job.status,
            created_at_ms: job.created_at_ms,
            started_at_ms: job.started_at_ms,
            finished_at_ms: job.finished_at_ms,
            idempotent: job.idempotent,
            attempts: job.attempts,
            input_bytes: job.input.len() as u64,
            input_sha256: digest(job.input.as_bytes()),
            result,
            by: job.by.clone(),
            result_read: job.result_read,
            runner: job.runner.clone(),
            owner: job.owner.clone(),
            charged_to: job.charged_to.clone(),
            approval: job.approval.clone(),
        };
        (summary, whole)
    }

    /// The job with its bodies: `input`, and `result` (the whole result
    /// kept apart, when the summary's result is not all of it).
    pub fn with_bodies(self, input: String, result: Option<JobResult>) -> JobInfo {
        let result = result.or_else(|| self.result.as_ref().map(ResultSummary::whole));
        JobInfo {
            id: self.id,
            session: self.session,
            session_name: self.session_name,
            tool: self.tool,
            input,
            status: self.status,
            created_at_ms: self.created_at_ms,
            started_at_ms: self.started_at_ms,
            finished_at_ms: self.finished_at_ms,
            idempotent: self.idempotent,
            attempts: self.attempts,
            result,
            by: self.by,
            result_read: self.result_read,
            runner: self.runner,
            owner: self.owner,
            charged_to: self.charged_to,
            approval: self.approval,
        }
    }

    /// The bytes of its bodies in the store: the input and the result kept
    /// apart. What `quotas.job_bytes_per_principal` counts.
    pub fn stored_bytes(&self) -> u64 {
        self.input_bytes
            + self
                .result
                .as_ref()
                .and_then(|r| r.kept)
                .map_or(0, |k| k.bytes)
    }

    /// The result kept apart, if any.
    pub fn kept(&self) -> Option<Kept> {
        self.result.as_ref().and_then(|r| r.kept)
    }

    /// Nobody waited for it: it is still queued or running, or its result
    /// was never read.
    pub fn unwaited(&self) -> bool {
        !self.status.is_final() || self.result_read == Some(false)
    }

    /// When it ended (its creation, for a final job that never recorded an
    /// end): what `quotas.retain_finished` counts from.
    pub fn ended_at_ms(&self) -> u64 {
        self.finished_at_ms.unwrap_or(self.created_at_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Captured;

    #[test]
    fn a_summary_carries_sizes_and_digests_and_keeps_the_bodies_apart() {
        let mut job = JobInfo::for_test("j", JobStatus::Completed);
        job.input = r#"{"message":"hi"}"#.into();
        job.attempts = 2;
        job.result = Some(JobResult {
            output: Some(serde_json::json!({"message": "hi"})),
            error: None,
            stdout: Captured {
                text: "out".into(),
                total_bytes: 3,
                truncated: false,
            },
            stderr: Captured::default(),
            metering: CallMetering::default(),
        });
        let (summary, whole) = JobSummary::of(&job);
        let text = serde_json::to_string(&summary).unwrap();
        assert!(!text.contains("hi"), "no body in the summary: {text}");
        assert_eq!(summary.input_bytes, 16);
        assert_eq!(summary.input_sha256, digest(job.input.as_bytes()));
        let result = summary.result.as_ref().unwrap();
        assert_eq!(result.output_bytes, Some(16));
        assert_eq!(result.stdout_bytes, 3);
        let whole = whole.unwrap();
        assert_eq!(
            result.kept,
            Some(Kept {
                attempt: 2,
                bytes: whole.len() as u64
            })
        );
        assert_eq!(summary.stored_bytes(), 16 + whole.len() as u64);
        let back: JobResult = serde_json::from_slice(&whole).unwrap();
        let again = summary.with_bodies(job.input.clone(), Some(back));
        assert_eq!(again.result.unwrap().output, job.result.unwrap().output);
    }

    #[test]
    fn a_short_error_is_all_of_a_result_and_a_long_one_is_kept_apart() {
        let error = |message: String| JobResult {
            output: None,
            error: Some(JobErrorInfo {
                kind: "tool_failed".into(),
                message,
            }),
            stdout: Captured::default(),
            stderr: Captured::default(),
            metering: CallMetering::default(),
        };
        let (short, whole) = ResultSummary::of(&error("no".into()), 1);
        assert!(whole.is_none() && short.kept.is_none());
        assert_eq!(short.whole().error.unwrap().message, "no");
        let (long, whole) = ResultSummary::of(&error("x".repeat(10_000)), 1);
        assert!(whole.is_some());
        let cut = long.error.unwrap().message;
        assert!(cut.len() < 1100, "{}", cut.len());
    }
}
