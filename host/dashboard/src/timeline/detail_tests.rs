//! The HTML of a timeline row's detail, pinned for every kind the page
//! writes out itself (and the record shown whole for the rest), so a change
//! to how it is built cannot change what a page shows unnoticed.

use serde_json::{Value, json};

use super::event_detail;

/// The detail of an event of `kind` (its JSON, `type` and fields).
fn detail(kind: Value) -> String {
    let event = serde_json::from_value(json!({
        "session": "s-1",
        "seq": 3,
        "at_ms": 0,
        "prev_hash": "0",
        "hash": "0",
        "kind": kind,
    }))
    .unwrap();
    event_detail(&event)
}

#[test]
fn a_call_request_shows_its_job_trace_digest_and_input() {
    assert_eq!(
        detail(json!({
            "type": "call_requested",
            "call_id": "c-1",
            "tool": "echo.echo",
            "input_digest": "abcdef0123456789abcdef",
            "input": "{\"m\":\"<b>\"}",
            "job_id": "job-1",
            "trace_id": "t<1>",
        })),
        "call <code>c-1</code> of <b>echo.echo</b> (job <code>job-1</code>) · trace <code>t&lt;1&gt;</code> · input <code title=\"abcdef0123456789abcdef\">abcdef012345</code><details><summary>input</summary><pre dir=\"ltr\">{&quot;m&quot;:&quot;&lt;b&gt;&quot;}</pre></details>"
    );
    assert_eq!(
        detail(json!({
            "type": "call_requested",
            "call_id": "c-2",
            "tool": "t.t",
            "input_digest": "ab",
            "input": null,
            "job_id": null,
        })),
        "call <code>c-2</code> of <b>t.t</b> · input <code title=\"ab\">ab</code><details><summary>input</summary><p class=\"muted\">too large to keep in the log: digest only</p></details>"
    );
    // A call a script made from inside a run (code mode) names that run.
    assert_eq!(
        detail(json!({
            "type": "call_requested",
            "call_id": "c-3",
            "tool": "text.upper",
            "input_digest": "ab",
            "input": null,
            "job_id": null,
            "parent_call": "c<1>",
        })),
        "call <code>c-3</code> of <b>text.upper</b> (made by call <code>c&lt;1&gt;</code>) · input <code title=\"ab\">ab</code><details><summary>input</summary><p class=\"muted\">too large to keep in the log: digest only</p></details>"
    );
}

#[test]
fn a_hook_decision_shows_its_hook_reason_and_alternatives() {
    assert_eq!(
        detail(json!({
            "type": "call_decided",
            "call_id": "c-1",
            "hook": "guard",
            "pattern": "echo.*",
            "decision": "deny",
            "reason": "no <way>",
            "alternatives": ["a", "b&c"],
            "took_ms": 7,
            "hook_digest": "0123456789abcdef",
        })),
        "<span class=\"tag bad\">deny</span> by hook <b>guard</b> (<code>echo.*</code>, 7 ms, sha256 <code title=\"0123456789abcdef\">0123456789ab</code>) on call <code>c-1</code><br>no &lt;way&gt;<ul class=\"alternatives\"><li>a</li><li>b&amp;c</li></ul>"
    );
    assert_eq!(
        detail(json!({
            "type": "call_decided",
            "call_id": "c-2",
            "hook": "h",
            "pattern": "*",
            "decision": "allow",
            "reason": null,
            "alternatives": [],
            "took_ms": 0,
        })),
        "<span class=\"tag good\">allow</span> by hook <b>h</b> (<code>*</code>, 0 ms) on call <code>c-2</code>"
    );
}

#[test]
fn a_started_call_shows_its_tool_digest() {
    assert_eq!(
        detail(json!({
            "type": "call_started",
            "call_id": "c-1",
            "tool": "echo.echo",
            "idempotency_key": "k",
            "idempotent": true,
            "tool_digest": "feedfacecafebeef00",
        })),
        "call <code>c-1</code> of <b>echo.echo</b> runs (tool <code title=\"feedfacecafebeef00\">feedfacecafe</code>, idempotent)"
    );
    assert_eq!(
        detail(json!({
            "type": "call_started",
            "call_id": "c-2",
            "tool": "x.y",
            "idempotency_key": "k",
            "idempotent": false,
            "tool_digest": "d",
            "cost_micros": 5,
        })),
        "call <code>c-2</code> of <b>x.y</b> runs (tool <code title=\"d\">d</code>)"
    );
}

#[test]
fn a_finished_call_shows_its_metering_error_and_output() {
    assert_eq!(
        detail(json!({
            "type": "call_finished",
            "call_id": "c-1",
            "outcome": "timeout",
            "error": "took <too> long",
            "output": "out & about",
            "output_digest": "x",
            "metering": {"wall_us": 1234, "fuel": 99, "peak_memory_bytes": 0, "bytes_in": 10, "bytes_out": 20, "cost_micros": 1500},
        })),
        "<span class=\"tag bad\">timeout</span> call <code>c-1</code> · 1.2 ms · 10 B in · 20 B out · fuel 99 · cost 0.0015<br><span class=\"error\">took &lt;too&gt; long</span><details><summary>output</summary><pre>out &amp; about</pre></details>"
    );
    assert_eq!(
        detail(json!({
            "type": "call_finished",
            "call_id": "c-2",
            "outcome": "ok",
            "error": null,
            "output": null,
            "output_digest": "x",
            "metering": {"wall_us": 0, "fuel": null, "peak_memory_bytes": 0, "bytes_in": 0, "bytes_out": 0},
        })),
        "<span class=\"tag good\">ok</span> call <code>c-2</code> · 0.0 ms · 0 B in · 0 B out"
    );
    let long = "x".repeat(5000);
    assert_eq!(
        detail(json!({
            "type": "call_finished",
            "call_id": "c-3",
            "outcome": "ok",
            "error": null,
            "output": long,
            "output_digest": "x",
            "metering": {"wall_us": 2500, "fuel": null, "peak_memory_bytes": 0, "bytes_in": 1, "bytes_out": 5000},
        })),
        format!(
            "<span class=\"tag good\">ok</span> call <code>c-3</code> · 2.5 ms · 1 B in · 5000 B out<details><summary>output</summary><pre>{}</pre><p class=\"muted\">(first 4096 of 5000 bytes shown)</p></details>",
            "x".repeat(4096)
        )
    );
    assert_eq!(
        detail(json!({"type": "call_interrupted", "call_id": "c-3", "reason": "host stopped"})),
        "<span class=\"tag bad\">interrupted</span> call <code>c-3</code>: host stopped"
    );
}

#[test]
fn notes_usage_and_pauses_are_shown_escaped() {
    assert_eq!(
        detail(json!({"type": "note", "text": "it's <done>"})),
        "<q>it&#39;s &lt;done&gt;</q>"
    );
    assert_eq!(
        detail(json!({
            "type": "usage_reported",
            "tokens_in": 100,
            "tokens_out": 50,
            "cost_micros": 250000,
            "model": "m<1>",
        })),
        "100 tokens in, 50 out, model cost 0.2500 (m&lt;1&gt;)"
    );
    assert_eq!(
        detail(json!({
            "type": "usage_reported",
            "tokens_in": 1,
            "tokens_out": 2,
            "cost_micros": 0,
            "model": null,
        })),
        "1 tokens in, 2 out, model cost 0.0000"
    );
    assert_eq!(
        detail(json!({"type": "paused", "reason": "too fast", "by": "op"})),
        "<span class=\"tag warn\">paused</span> too fast (by op)"
    );
    assert_eq!(
        detail(json!({"type": "paused", "reason": "budget"})),
        "<span class=\"tag warn\">paused</span> budget (by the host)"
    );
}

#[test]
fn flags_escalations_and_budgets_show_their_severity() {
    assert_eq!(
        detail(json!({
            "type": "blocker_flag",
            "rule": "retry",
            "severity": "critical",
            "reason": "r<",
            "suggested_action": "look",
            "call_id": "c-1",
        })),
        "<span class=\"tag bad\">critical</span> <b>retry</b>: r&lt; (call <code>c-1</code>)<br><span class=\"muted\">suggested: look</span>"
    );
    assert_eq!(
        detail(json!({
            "type": "blocker_flag",
            "rule": "stale",
            "severity": "warning",
            "reason": "quiet",
            "suggested_action": "nudge",
            "call_id": null,
        })),
        "<span class=\"tag warn\">warning</span> <b>stale</b>: quiet<br><span class=\"muted\">suggested: nudge</span>"
    );
    assert_eq!(
        detail(json!({"type": "escalation", "step": "rescue", "reason": "stuck", "rescue": "r-1"})),
        "step <span class=\"tag bad\">rescue</span>: stuck (rescue <code>r-1</code>)"
    );
    assert_eq!(
        detail(json!({"type": "escalation", "step": "retry", "reason": "failed", "rescue": null})),
        "step <span class=\"tag plain\">retry</span>: failed"
    );
    assert_eq!(
        detail(
            json!({"type": "budget_warning", "cap": "cost", "used": 800000, "limit": 1000000, "percent": 80})
        ),
        "<span class=\"tag warn\">warning</span> cost at 80%: 0.8 of 1"
    );
    assert_eq!(
        detail(
            json!({"type": "budget_warning", "cap": "calls", "used": 8, "limit": 10, "percent": 80})
        ),
        "<span class=\"tag warn\">warning</span> calls at 80%: 8 of 10"
    );
    assert_eq!(
        detail(
            json!({"type": "budget_exceeded", "cap": "wall", "used": 90000, "limit": 60000, "call_id": null})
        ),
        "<span class=\"tag bad\">critical</span> wall: 1m 30s past 1m"
    );
}

#[test]
fn gates_and_verdicts_show_what_passed() {
    assert_eq!(
        detail(json!({
            "type": "gates_checked",
            "passed": false,
            "gates": [
                {"tool": "t.a", "passed": true, "detail": "fine"},
                {"tool": "t.b", "passed": false, "detail": "<bad>"},
            ],
        })),
        "completion gates <span class=\"tag bad\">failed</span><br><span class=\"tag good\">passed</span> <code>t.a</code> fine<br><span class=\"tag bad\">failed</span> <code>t.b</code> &lt;bad&gt;"
    );
    assert_eq!(
        detail(json!({"type": "gates_checked", "passed": true, "gates": []})),
        "completion gates <span class=\"tag good\">passed</span><br>"
    );
    assert_eq!(
        detail(json!({
            "type": "verdict_received",
            "verdict": {"judge_session": "s-j", "judge": "judge", "handoff_seq": 4, "pass": false, "reasons": ["a", "b<"]},
        })),
        "<span class=\"tag bad\">fail</span> on handoff 4 by judge <code>judge</code> (session <code>s-j</code>): a; b&lt;"
    );
    assert_eq!(
        detail(json!({
            "type": "verdict_given",
            "session": "s-w",
            "verdict": {"judge_session": "s-j", "judge": "j", "handoff_seq": 2, "pass": true},
        })),
        "<span class=\"tag good\">pass</span> on handoff 2 by judge <code>j</code> (session <code>s-j</code>)"
    );
}

#[test]
fn other_kinds_show_their_record() {
    assert_eq!(
        detail(json!({"type": "renamed", "name": "x<"})),
        "<details><summary>&quot;name&quot;: &quot;x&lt;&quot;</summary><pre>{\n  &quot;type&quot;: &quot;renamed&quot;,\n  &quot;name&quot;: &quot;x&lt;&quot;\n}</pre></details>"
    );
    assert_eq!(
        detail(json!({"type": "resumed"})),
        "<details><summary>}</summary><pre>{\n  &quot;type&quot;: &quot;resumed&quot;\n}</pre></details>"
    );
}
