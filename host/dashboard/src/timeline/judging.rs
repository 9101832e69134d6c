//! A timeline row's detail for how a session's work was judged: its
//! completion gates, and a judge's verdict on its handoff (received, or
//! given by this judge session).

use glovebox::session::EventKind;

use crate::html::{self, badge, esc};

/// The detail of such a record, or `None` for a kind of another family.
pub(super) fn detail(kind: &EventKind) -> Option<String> {
    Some(match kind {
        EventKind::GatesChecked { passed, gates } => {
            let rows: Vec<String> = gates
                .iter()
                .map(|g| {
                    format!(
                        "{} <code>{}</code> {}",
                        badge(if g.passed { "passed" } else { "failed" }),
                        esc(&g.tool),
                        esc(html::cut(&g.detail, 300).0)
                    )
                })
                .collect();
            format!(
                "completion gates {}<br>{}",
                badge(if *passed { "passed" } else { "failed" }),
                rows.join("<br>")
            )
        }
        EventKind::VerdictReceived { verdict } | EventKind::VerdictGiven { verdict, .. } => {
            format!(
                "{} on handoff {} by judge <code>{}</code> (session <code>{}</code>){}",
                badge(if verdict.pass { "pass" } else { "fail" }),
                verdict.handoff_seq,
                esc(&verdict.judge),
                esc(&verdict.judge_session),
                if verdict.reasons.is_empty() {
                    String::new()
                } else {
                    format!(": {}", esc(&verdict.reasons.join("; ")))
                }
            )
        }
        _ => return None,
    })
}
