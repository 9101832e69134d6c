//! An approval as a person sees it before settling it (threat 55).
//!
//! One place renders an approval for display ([`Host::show_approval`]); the
//! dashboard, the CLI and MCP elicitation only format what it gives. It
//! shows what will run: the whole input (or, past
//! [`WHOLE_BYTES`](glovebox_input::shown::WHOLE_BYTES), a preview of every
//! key with its value cut, the input's size and its SHA-256 (the hash the
//! approval records and checks before running), and where the whole input
//! is), keys in the order that puts what matters first (the ones the hook
//! named, then the tool's schema order), and every invisible or
//! display-changing character marked, in the input and in every other text
//! an agent chose (the session's name) or a hook wrote, with a legend.
//! A secret's value in the input is masked (`[secret:NAME]`, threat 60);
//! the SHA-256 stays the whole input's as the tool gets it.
//!
//! The layout and the marking are pure functions of the text, in
//! `glovebox-input` beside the admission checks, so they are fuzzed with the
//! same hostile inputs (`fuzz/fuzz_targets/tool_input.rs`).

use crate::approvals::{Approval, ApprovalStatus};
use crate::host::Host;

pub use glovebox_input::shown::{
    FieldOrder, PREVIEW_VALUE_BYTES, ShownField, ShownInput, WHOLE_BYTES, cut_at, field_order,
    named_in, show_input,
};
pub use glovebox_input::visible::{LEGEND_TITLE, Legend, mark, visible, visible_with_legend};

/// An approval as shown; every text in it is made visible.
#[derive(Clone, Debug)]
pub struct ShownApproval {
    pub id: String,
    pub session: String,
    pub session_name: Option<String>,
    pub call_id: String,
    pub tool: String,
    pub tool_digest: String,
    pub action: String,
    pub hook: String,
    pub pattern: String,
    /// The hook's question.
    pub reason: String,
    /// The SHA-256 of the whole input, as the approval records it.
    pub sha256: String,
    pub input: ShownInput,
    /// Every mark made in any text above.
    pub legend: Legend,
    pub requested_at_ms: u64,
    pub status: ApprovalStatus,
}

impl Host {
    /// `approval` as a person must see it; see the module docs. The tool's
    /// schema order is used when the same build of the tool is loaded;
    /// otherwise the keys follow the input (and the approval cannot run).
    pub fn show_approval(&self, approval: &Approval) -> ShownApproval {
        let order = self
            .locate(&approval.tool)
            .ok()
            .filter(|(plugin, _)| plugin.digest == approval.tool_digest)
            .map(|(plugin, index)| plugin.tools[index].field_order.clone());
        // A secret's value in the input is shown masked (threat 60); the
        // SHA-256 stays the whole input's, as the tool gets it.
        let input = show_input(
            &self.config().secrets.mask(&approval.input),
            order.as_deref(),
            &named_in(&approval.reason),
        );
        let mut legend = input.legend.clone();
        let mut text = |s: &str| {
            let (shown, marks) = visible_with_legend(s);
            legend.merge(&marks);
            shown
        };
        ShownApproval {
            id: text(&approval.id),
            session: text(&approval.session),
            session_name: approval.session_name.as_deref().map(&mut text),
            call_id: text(&approval.call_id),
            tool: text(&approval.tool),
            tool_digest: text(&approval.tool_digest),
            action: text(&approval.action),
            hook: text(&approval.hook),
            pattern: text(&approval.pattern),
            reason: text(&approval.reason),
            sha256: text(&approval.input_hash),
            input,
            legend,
            requested_at_ms: approval.requested_at_ms,
            status: approval.status.clone(),
        }
    }
}

impl ShownApproval {
    /// The input as lines of text for a terminal or a chat client: a
    /// heading with its size, SHA-256 and order, one line per field, where
    /// the whole input is when this is a preview (`whole_at`, the surface's
    /// way to get it), and the legend of the marks. The CLI and MCP
    /// elicitation print these.
    pub fn input_lines(&self, whole_at: &str) -> Vec<String> {
        let i = &self.input;
        let mut lines = vec![format!(
            "input ({} bytes, sha256 {}; {}){}:",
            i.bytes,
            self.sha256,
            i.order_words(),
            if i.whole {
                String::new()
            } else {
                format!(
                    ", a preview: each value cut to {} bytes",
                    glovebox_input::shown::PREVIEW_VALUE_BYTES
                )
            }
        )];
        lines.extend(i.lines().into_iter().map(|l| format!("  {l}")));
        if !i.whole {
            lines.push(format!(
                "the input is longer than {} KiB: values are cut above; the whole input: {whole_at}",
                WHOLE_BYTES / 1024
            ));
        }
        lines.extend(self.legend.lines());
        lines
    }

    /// The session as shown: its name and id, or its id.
    pub fn session_words(&self) -> String {
        match &self.session_name {
            Some(name) => format!("{name} ({})", self.session),
            None => self.session.clone(),
        }
    }
}
