//! Spend by model: grouped by principal, a report splits each principal's
//! figures by the card its sessions recorded when they started
//! (`session_started`'s `agent`: model and version), not by what the config
//! says today. So when an operator moves an agent to another model in the
//! middle of a month, the month's bill shows what each model cost.

use serde::Serialize;

use super::{Figures, split};
use crate::manifest::AgentCard;

/// The key of a card's share: its model (`unknown` when none was
/// recorded), with `@<version>` when a version was.
pub fn model_key(card: Option<&AgentCard>) -> String {
    let model = card
        .and_then(|c| c.model.as_deref())
        .unwrap_or("unknown")
        .to_string();
    match card.and_then(|c| c.version.as_deref()) {
        Some(version) => format!("{model}@{version}"),
        None => model,
    }
}

/// One model's (and version's) part of a principal's figures (see
/// [`super::GroupBy::Principal`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelShare {
    /// The model the sessions recorded at start; none when their principal
    /// had no model on its card.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agent's version they recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The principal's sessions with a call or usage report in the range
    /// under this card.
    pub sessions: u64,
    pub total: Figures,
    pub foreground: Figures,
    pub background: Figures,
}

impl ModelShare {
    /// A share for the card `card` recorded.
    pub(super) fn of(card: Option<&AgentCard>) -> ModelShare {
        ModelShare {
            model: card.and_then(|c| c.model.clone()),
            version: card.and_then(|c| c.version.clone()),
            ..ModelShare::default()
        }
    }

    pub(super) fn add(&mut self, figures: &Figures, background: bool) {
        split(
            [&mut self.total, &mut self.foreground, &mut self.background],
            figures,
            background,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cards_key_is_its_model_and_version() {
        let card = |model: Option<&str>, version: Option<&str>| AgentCard {
            model: model.map(str::to_string),
            version: version.map(str::to_string),
            ..AgentCard::default()
        };
        assert_eq!(model_key(None), "unknown");
        assert_eq!(model_key(Some(&card(Some("m-large"), None))), "m-large");
        assert_eq!(
            model_key(Some(&card(Some("m-large"), Some("3.1")))),
            "m-large@3.1"
        );
        assert_eq!(model_key(Some(&card(None, Some("2")))), "unknown@2");
    }
}
