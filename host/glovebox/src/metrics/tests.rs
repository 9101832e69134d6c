//! The exposition text, pinned: every family's name, help text, type and
//! label set, in the order they were registered, for a fixed set of
//! figures. A family's members come out in no fixed order, so the samples
//! under each family are compared sorted.

use std::time::Duration;

use super::*;
use crate::{CallError, CallReport};

/// `text` with the sample lines under each `#` line sorted.
fn samples_sorted(text: &str) -> String {
    let mut out = Vec::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if line.starts_with('#') {
            samples.sort_unstable();
            out.append(&mut samples);
            out.push(line);
        } else {
            samples.push(line);
        }
    }
    samples.sort_unstable();
    out.append(&mut samples);
    out.join("\n")
}

#[test]
fn the_exposition_names_every_family_with_its_help_type_and_labels() {
    let metrics = Metrics::new();
    let mut ok = CallReport::refused(
        "echo.echo",
        CallError::Timeout {
            tool: "echo.echo".into(),
            deadline: Duration::from_secs(1),
        },
    );
    let refused = CallReport::refused(
        "echo.slow",
        CallError::Timeout {
            tool: "echo.slow".into(),
            deadline: Duration::from_secs(1),
        },
    );
    ok.outcome = Ok(serde_json::json!({}));
    ok.metering.wall = Duration::from_millis(2);
    metrics.call(&ok);
    metrics.call(&refused);
    metrics.decisions(&[
        EventKind::CallDecided {
            call_id: "c-1".into(),
            hook: "guard".into(),
            pattern: "*".into(),
            decision: "deny".into(),
            reason: None,
            alternatives: Vec::new(),
            took_ms: 3,
            hook_digest: None,
        },
        EventKind::Note {
            text: "not a decision".into(),
        },
    ]);
    metrics.ledger_write(Duration::from_micros(120));
    (metrics.flush_observer())(3);
    (metrics.admission_wait_observer())("calls", Duration::from_millis(1));
    let now = Snapshot {
        sessions_by_status: vec![("active".into(), 2), ("ended".into(), 1)],
        jobs_by_status: vec![("queued".into(), 1)],
        approvals_pending: 4,
        flags: vec![(("retry".into(), "critical".into()), 1)],
        outbox_depth: 5,
        outbox_dropped: vec![("ops".into(), 7)],
        admission: Admission {
            calls_in_flight: 1,
            call_slots: 8,
            memory_reserved_bytes: 1024,
            memory_budget_bytes: 4096,
            calls_waiting: 0,
            hooks_waiting: 2,
        },
    };
    let text = samples_sorted(&metrics.encode(&now));
    assert_eq!(text, EXPOSITION, "{text}");
}

/// What [`Metrics::encode`] wrote for the figures above, samples sorted.
const EXPOSITION: &str = "# HELP glovebox_calls Tool calls that reached the pipeline's judge, by tool and outcome (`ok` or the error kind).\n# TYPE glovebox_calls counter\nglovebox_calls_total{tool=\"echo.echo\",outcome=\"ok\"} 1\nglovebox_calls_total{tool=\"echo.slow\",outcome=\"timeout\"} 1\n# HELP glovebox_call_duration_seconds Wall time of the calls that ran, instantiation included, by tool.\n# TYPE glovebox_call_duration_seconds histogram\nglovebox_call_duration_seconds_bucket{le=\"+Inf\",tool=\"echo.echo\"} 1\nglovebox_call_duration_seconds_bucket{le=\"0.00005\",tool=\"echo.echo\"} 0\nglovebox_call_duration_seconds_bucket{le=\"0.00015000000000000001\",tool=\"echo.echo\"} 0\nglovebox_call_duration_seconds_bucket{le=\"0.00045000000000000004\",tool=\"echo.echo\"} 0\nglovebox_call_duration_seconds_bucket{le=\"0.00135\",tool=\"echo.echo\"} 0\nglovebox_call_duration_seconds_bucket{le=\"0.00405\",tool=\"echo.echo\"} 1\nglovebox_call_duration_seconds_bucket{le=\"0.012150000000000001\",tool=\"echo.echo\"} 1\nglovebox_call_duration_seconds_bucket{le=\"0.03645\",tool=\"echo.echo\"} 1\nglovebox_call_duration_seconds_bucket{le=\"0.10935\",tool=\"echo.echo\"} 1\nglovebox_call_duration_seconds_bucket{le=\"0.32805\",tool=\"echo.echo\"} 1\nglovebox_call_duration_seconds_bucket{le=\"0.9841500000000001\",tool=\"echo.echo\"} 1\nglovebox_call_duration_seconds_bucket{le=\"2.9524500000000004\",tool=\"echo.echo\"} 1\nglovebox_call_duration_seconds_bucket{le=\"26.57205\",tool=\"echo.echo\"} 1\nglovebox_call_duration_seconds_bucket{le=\"8.85735\",tool=\"echo.echo\"} 1\nglovebox_call_duration_seconds_count{tool=\"echo.echo\"} 1\nglovebox_call_duration_seconds_sum{tool=\"echo.echo\"} 0.002\n# HELP glovebox_hook_decisions Permission hooks' decisions, by hook and decision (allow, deny, ask).\n# TYPE glovebox_hook_decisions counter\nglovebox_hook_decisions_total{hook=\"guard\",decision=\"deny\"} 1\n# HELP glovebox_hook_duration_seconds Time a hook took to decide, instantiation included, by hook.\n# TYPE glovebox_hook_duration_seconds histogram\nglovebox_hook_duration_seconds_bucket{le=\"+Inf\",hook=\"guard\"} 1\nglovebox_hook_duration_seconds_bucket{le=\"0.00005\",hook=\"guard\"} 0\nglovebox_hook_duration_seconds_bucket{le=\"0.00015000000000000001\",hook=\"guard\"} 0\nglovebox_hook_duration_seconds_bucket{le=\"0.00045000000000000004\",hook=\"guard\"} 0\nglovebox_hook_duration_seconds_bucket{le=\"0.00135\",hook=\"guard\"} 0\nglovebox_hook_duration_seconds_bucket{le=\"0.00405\",hook=\"guard\"} 1\nglovebox_hook_duration_seconds_bucket{le=\"0.012150000000000001\",hook=\"guard\"} 1\nglovebox_hook_duration_seconds_bucket{le=\"0.03645\",hook=\"guard\"} 1\nglovebox_hook_duration_seconds_bucket{le=\"0.10935\",hook=\"guard\"} 1\nglovebox_hook_duration_seconds_bucket{le=\"0.32805\",hook=\"guard\"} 1\nglovebox_hook_duration_seconds_bucket{le=\"0.9841500000000001\",hook=\"guard\"} 1\nglovebox_hook_duration_seconds_bucket{le=\"2.9524500000000004\",hook=\"guard\"} 1\nglovebox_hook_duration_seconds_bucket{le=\"26.57205\",hook=\"guard\"} 1\nglovebox_hook_duration_seconds_bucket{le=\"8.85735\",hook=\"guard\"} 1\nglovebox_hook_duration_seconds_count{hook=\"guard\"} 1\nglovebox_hook_duration_seconds_sum{hook=\"guard\"} 0.003\n# HELP glovebox_log_append_duration_seconds Time the ledger took to write one call's records before it ran (the durable write-ahead batch).\n# TYPE glovebox_log_append_duration_seconds histogram\nglovebox_log_append_duration_seconds_bucket{le=\"+Inf\"} 1\nglovebox_log_append_duration_seconds_bucket{le=\"0.00005\"} 0\nglovebox_log_append_duration_seconds_bucket{le=\"0.00015000000000000001\"} 1\nglovebox_log_append_duration_seconds_bucket{le=\"0.00045000000000000004\"} 1\nglovebox_log_append_duration_seconds_bucket{le=\"0.00135\"} 1\nglovebox_log_append_duration_seconds_bucket{le=\"0.00405\"} 1\nglovebox_log_append_duration_seconds_bucket{le=\"0.012150000000000001\"} 1\nglovebox_log_append_duration_seconds_bucket{le=\"0.03645\"} 1\nglovebox_log_append_duration_seconds_bucket{le=\"0.10935\"} 1\nglovebox_log_append_duration_seconds_bucket{le=\"0.32805\"} 1\nglovebox_log_append_duration_seconds_bucket{le=\"0.9841500000000001\"} 1\nglovebox_log_append_duration_seconds_bucket{le=\"2.9524500000000004\"} 1\nglovebox_log_append_duration_seconds_bucket{le=\"26.57205\"} 1\nglovebox_log_append_duration_seconds_bucket{le=\"8.85735\"} 1\nglovebox_log_append_duration_seconds_count 1\nglovebox_log_append_duration_seconds_sum 0.00012\n# HELP glovebox_sessions Sessions by status.\n# TYPE glovebox_sessions gauge\nglovebox_sessions{status=\"active\"} 2\nglovebox_sessions{status=\"ended\"} 1\n# HELP glovebox_jobs Background jobs by status.\n# TYPE glovebox_jobs gauge\nglovebox_jobs{status=\"queued\"} 1\n# HELP glovebox_approvals_pending Calls waiting for a human's approval.\n# TYPE glovebox_approvals_pending gauge\nglovebox_approvals_pending 4\n# HELP glovebox_flags Active blocker flags on live sessions, by rule and severity.\n# TYPE glovebox_flags gauge\nglovebox_flags{rule=\"retry\",severity=\"critical\"} 1\n# HELP glovebox_calls_in_flight Calls running now, foreground and background (admission control's slots in use).\n# TYPE glovebox_calls_in_flight gauge\nglovebox_calls_in_flight 1\n# HELP glovebox_admission_call_slots Calls admission control lets run at once (`runtime.max_concurrent_calls`); a call past them waits its turn, up to `runtime.admission_wait`.\n# TYPE glovebox_admission_call_slots gauge\nglovebox_admission_call_slots 8\n# HELP glovebox_admission_memory_reserved_bytes Memory the running calls reserve (each its plugin's whole cap).\n# TYPE glovebox_admission_memory_reserved_bytes gauge\nglovebox_admission_memory_reserved_bytes 1024\n# HELP glovebox_admission_memory_budget_bytes The memory budget calls reserve from (`runtime.memory_budget`); a call that does not fit waits its turn, up to `runtime.admission_wait`.\n# TYPE glovebox_admission_memory_budget_bytes gauge\nglovebox_admission_memory_budget_bytes 4096\n# HELP glovebox_admission_queue_depth Calls (pool `calls`) and hook runs (pool `hooks`) waiting for a slot now; past `runtime.admission_queue` waiters a call is refused as busy.\n# TYPE glovebox_admission_queue_depth gauge\nglovebox_admission_queue_depth{pool=\"calls\"} 0\nglovebox_admission_queue_depth{pool=\"hooks\"} 2\n# HELP glovebox_admission_wait_seconds Time each call (pool `calls`) or hook run (pool `hooks`) waited for admission, admitted or refused.\n# TYPE glovebox_admission_wait_seconds histogram\nglovebox_admission_wait_seconds_bucket{le=\"+Inf\",pool=\"calls\"} 1\nglovebox_admission_wait_seconds_bucket{le=\"0.00005\",pool=\"calls\"} 0\nglovebox_admission_wait_seconds_bucket{le=\"0.00015000000000000001\",pool=\"calls\"} 0\nglovebox_admission_wait_seconds_bucket{le=\"0.00045000000000000004\",pool=\"calls\"} 0\nglovebox_admission_wait_seconds_bucket{le=\"0.00135\",pool=\"calls\"} 1\nglovebox_admission_wait_seconds_bucket{le=\"0.00405\",pool=\"calls\"} 1\nglovebox_admission_wait_seconds_bucket{le=\"0.012150000000000001\",pool=\"calls\"} 1\nglovebox_admission_wait_seconds_bucket{le=\"0.03645\",pool=\"calls\"} 1\nglovebox_admission_wait_seconds_bucket{le=\"0.10935\",pool=\"calls\"} 1\nglovebox_admission_wait_seconds_bucket{le=\"0.32805\",pool=\"calls\"} 1\nglovebox_admission_wait_seconds_bucket{le=\"0.9841500000000001\",pool=\"calls\"} 1\nglovebox_admission_wait_seconds_bucket{le=\"2.9524500000000004\",pool=\"calls\"} 1\nglovebox_admission_wait_seconds_bucket{le=\"26.57205\",pool=\"calls\"} 1\nglovebox_admission_wait_seconds_bucket{le=\"8.85735\",pool=\"calls\"} 1\nglovebox_admission_wait_seconds_count{pool=\"calls\"} 1\nglovebox_admission_wait_seconds_sum{pool=\"calls\"} 0.001\n# HELP glovebox_group_commit_batch_writers Writes each flush of the store made durable at once (group commit; the embedded stores only).\n# TYPE glovebox_group_commit_batch_writers histogram\nglovebox_group_commit_batch_writers_bucket{le=\"+Inf\"} 1\nglovebox_group_commit_batch_writers_bucket{le=\"1.0\"} 0\nglovebox_group_commit_batch_writers_bucket{le=\"128.0\"} 1\nglovebox_group_commit_batch_writers_bucket{le=\"16.0\"} 1\nglovebox_group_commit_batch_writers_bucket{le=\"2.0\"} 0\nglovebox_group_commit_batch_writers_bucket{le=\"256.0\"} 1\nglovebox_group_commit_batch_writers_bucket{le=\"32.0\"} 1\nglovebox_group_commit_batch_writers_bucket{le=\"4.0\"} 1\nglovebox_group_commit_batch_writers_bucket{le=\"64.0\"} 1\nglovebox_group_commit_batch_writers_bucket{le=\"8.0\"} 1\nglovebox_group_commit_batch_writers_count 1\nglovebox_group_commit_batch_writers_sum 3.0\n# HELP glovebox_notify_outbox_depth Notifications waiting in the outbox to be delivered.\n# TYPE glovebox_notify_outbox_depth gauge\nglovebox_notify_outbox_depth 5\n# HELP glovebox_notify_dropped Notifications dropped, oldest first, because their target's outbox held `quotas.outbox_per_target` (counted in the store).\n# TYPE glovebox_notify_dropped counter\nglovebox_notify_dropped_total{target=\"ops\"} 7\n# EOF";
