//! A principal's card (the fleet's registry: model, version, owner,
//! description) as the pages show it: on the principals page the config's
//! card of today, on a session's page and in the sessions list the card
//! its first event recorded, so a change of model shows. Every field is
//! the operator's text, escaped.

use std::fmt::Write as _;

use glovebox::manifest::AgentCard;

use crate::html::esc;

/// The card's fields with a value, as `(name, text)`, in the card's order.
pub(crate) fn fields(card: &AgentCard) -> Vec<(&'static str, &str)> {
    [
        ("model", &card.model),
        ("version", &card.version),
        ("owner", &card.owner),
        ("description", &card.description),
    ]
    .into_iter()
    .filter_map(|(name, text)| text.as_deref().map(|t| (name, t)))
    .collect()
}

/// The card inline: `model <b>m</b> · version <b>3</b> · …`, or a muted
/// dash when nothing was said.
pub(crate) fn inline(card: Option<&AgentCard>) -> String {
    let shown: Vec<String> = card
        .map(fields)
        .unwrap_or_default()
        .into_iter()
        .map(|(name, text)| format!("{name} <b class=\"card-{name}\">{}</b>", esc(text)))
        .collect();
    if shown.is_empty() {
        "<span class=\"muted\">-</span>".into()
    } else {
        shown.join(" · ")
    }
}

/// A session page's card: what its first event recorded, and, when the
/// principal's card in the config says otherwise today, what it says now.
pub(crate) fn recorded(at_start: Option<&AgentCard>, today: Option<&AgentCard>) -> String {
    let empty = AgentCard::default();
    let (at_start_or_empty, today_or_empty) = (at_start.unwrap_or(&empty), today.unwrap_or(&empty));
    if at_start_or_empty.is_empty() && today_or_empty.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<p id=\"agent-card\">agent at start: {}</p>",
        inline(at_start)
    );
    if at_start_or_empty != today_or_empty {
        let _ = write!(
            out,
            "<p id=\"agent-card-now\" class=\"warn\">the principal's card has changed since: now {}</p>",
            inline(today)
        );
    }
    out
}

/// A sessions-list cell's line: the model recorded at start, if any.
pub(crate) fn model_line(card: Option<&AgentCard>) -> String {
    match card.and_then(|c| c.model.as_deref()) {
        Some(model) => format!("<br><span class=\"muted model\">{}</span>", esc(model)),
        None => String::new(),
    }
}
