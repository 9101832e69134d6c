//! What a hook answered, checked: a malformed answer is a deny, like any other
//! failure of a hook.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::bindings::hook::exports::glovebox::plugin::permission_hook::{Decision, Denial};

/// The longest reason (of a deny) or question (of an ask) a hook may give, in bytes.
pub const MAX_REASON_BYTES: usize = 4096;
/// The most alternatives a deny may offer.
pub const MAX_ALTERNATIVES: usize = 32;
/// The longest alternative, in bytes.
pub const MAX_ALTERNATIVE_BYTES: usize = 1024;

/// What a hook decided about a call.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DecisionKind {
    Allow,
    Deny,
    Ask,
}

/// One hook's decision on one call, as the session log records it.
///
/// Serialized with `took` as `took_ms`, a float number of milliseconds (like the
/// `wall` of a call's metering).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct HookDecision {
    /// The hook's name from the config.
    pub hook: String,
    /// The trigger that matched the call's action (`*` for a hook that could not
    /// be loaded, which denies everything).
    pub pattern: String,
    pub decision: DecisionKind,
    /// Why (deny), or what the human is asked (ask); `None` for allow.
    pub reason: Option<String>,
    /// What the agent could do instead (deny only).
    pub alternatives: Vec<String>,
    /// How long the evaluation took, instantiation included.
    #[serde(rename = "took_ms", with = "millis")]
    pub took: Duration,
    /// The sha256 of the hook's component that decided (`None` for a hook
    /// that could not be loaded): which build of the policy judged the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl HookDecision {
    /// A deny the host makes on the hook's behalf (a fault, a broken hook).
    pub(crate) fn fail_closed(hook: &str, pattern: &str, reason: String, took: Duration) -> Self {
        HookDecision {
            hook: hook.to_string(),
            pattern: pattern.to_string(),
            decision: DecisionKind::Deny,
            reason: Some(reason),
            alternatives: Vec::new(),
            took,
            digest: None,
        }
    }
}

/// The hook's answer as a decision, or a deny saying why the answer is malformed.
pub(crate) fn check_decision(
    hook: &str,
    pattern: &str,
    answer: Decision,
    took: Duration,
) -> HookDecision {
    let checked = match answer {
        Decision::Allow => Ok((DecisionKind::Allow, None, Vec::new())),
        Decision::Deny(Denial {
            reason,
            alternatives,
        }) => check_denial(&reason, &alternatives)
            .map(|()| (DecisionKind::Deny, Some(reason), alternatives)),
        Decision::Ask(question) => check_text("an ask", "text", &question)
            .map(|()| (DecisionKind::Ask, Some(question), Vec::new())),
    };
    match checked {
        Ok((decision, reason, alternatives)) => HookDecision {
            hook: hook.to_string(),
            pattern: pattern.to_string(),
            decision,
            reason,
            alternatives,
            took,
            digest: None,
        },
        Err(problem) => HookDecision::fail_closed(
            hook,
            pattern,
            format!(
                "hook `{hook}` returned a malformed decision ({problem}): the call is denied (hooks fail closed)"
            ),
            took,
        ),
    }
}

/// What is malformed in a hook's answer: the part of it and the bound it
/// broke. Shown inside the deny the host makes for the hook (see
/// [`check_decision`]), which names the hook and says calls fail closed.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
enum Malformed {
    /// A deny's reason or an ask's text is empty or blank.
    #[error("{what} with an empty {field}")]
    EmptyText {
        what: &'static str,
        field: &'static str,
    },
    /// A deny's reason or an ask's text is longer than [`MAX_REASON_BYTES`].
    #[error("{what} whose {field} is {len} bytes, more than {MAX_REASON_BYTES}")]
    LongText {
        what: &'static str,
        field: &'static str,
        len: usize,
    },
    /// A deny offers more than [`MAX_ALTERNATIVES`] alternatives.
    #[error("a deny with {count} alternatives, more than {MAX_ALTERNATIVES}")]
    TooManyAlternatives { count: usize },
    /// One alternative is longer than [`MAX_ALTERNATIVE_BYTES`].
    #[error("alternative {index} is {len} bytes, more than {MAX_ALTERNATIVE_BYTES}")]
    LongAlternative { index: usize, len: usize },
}

fn check_denial(reason: &str, alternatives: &[String]) -> Result<(), Malformed> {
    check_text("a deny", "reason", reason)?;
    if alternatives.len() > MAX_ALTERNATIVES {
        return Err(Malformed::TooManyAlternatives {
            count: alternatives.len(),
        });
    }
    if let Some((index, long)) = alternatives
        .iter()
        .enumerate()
        .find(|(_, a)| a.len() > MAX_ALTERNATIVE_BYTES)
    {
        return Err(Malformed::LongAlternative {
            index,
            len: long.len(),
        });
    }
    Ok(())
}

fn check_text(what: &'static str, field: &'static str, text: &str) -> Result<(), Malformed> {
    if text.trim().is_empty() {
        return Err(Malformed::EmptyText { what, field });
    }
    if text.len() > MAX_REASON_BYTES {
        return Err(Malformed::LongText {
            what,
            field,
            len: text.len(),
        });
    }
    Ok(())
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        Duration::try_from_secs_f64(ms / 1000.0).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_micros(1500);

    fn deny(reason: &str, alternatives: Vec<String>) -> Decision {
        Decision::Deny(Denial {
            reason: reason.to_string(),
            alternatives,
        })
    }

    #[track_caller]
    fn assert_malformed(answer: Decision, problem: &str) {
        let d = check_decision("h", "execute:*", answer, T);
        assert_eq!(d.decision, DecisionKind::Deny);
        assert_eq!(d.hook, "h");
        assert_eq!(d.pattern, "execute:*");
        assert!(d.alternatives.is_empty());
        let reason = d.reason.unwrap();
        assert!(
            reason.starts_with("hook `h` returned a malformed decision ("),
            "{reason}"
        );
        assert!(reason.contains(problem), "no {problem:?} in: {reason}");
        assert!(reason.ends_with("(hooks fail closed)"), "{reason}");
    }

    #[test]
    fn well_formed_answers_are_kept_as_they_are() {
        let d = check_decision("h", "*", Decision::Allow, T);
        assert_eq!(
            (d.decision, d.reason, d.took),
            (DecisionKind::Allow, None, T)
        );
        let alternatives = vec!["split the work".to_string(); MAX_ALTERNATIVES];
        let d = check_decision("h", "*", deny("too dear", alternatives.clone()), T);
        assert_eq!(d.decision, DecisionKind::Deny);
        assert_eq!(d.reason.as_deref(), Some("too dear"));
        assert_eq!(d.alternatives, alternatives);
        let d = check_decision("h", "*", Decision::Ask("drop the table?".into()), T);
        assert_eq!(d.decision, DecisionKind::Ask);
        assert_eq!(d.reason.as_deref(), Some("drop the table?"));
        let edge = "x".repeat(MAX_REASON_BYTES);
        let d = check_decision("h", "*", deny(&edge, vec!["y".repeat(1024)]), T);
        assert_eq!(d.reason, Some(edge));
    }

    #[test]
    fn malformed_answers_are_denies_that_say_what_is_wrong() {
        assert_malformed(deny("", vec![]), "a deny with an empty reason");
        assert_malformed(deny(" \n", vec![]), "a deny with an empty reason");
        assert_malformed(Decision::Ask(String::new()), "an ask with an empty text");
        assert_malformed(
            deny(&"x".repeat(MAX_REASON_BYTES + 1), vec![]),
            "a deny whose reason is 4097 bytes, more than 4096",
        );
        assert_malformed(
            Decision::Ask("?".repeat(5000)),
            "an ask whose text is 5000 bytes, more than 4096",
        );
        assert_malformed(
            deny("no", vec!["a".to_string(); 33]),
            "a deny with 33 alternatives, more than 32",
        );
        assert_malformed(
            deny("no", vec!["ok".to_string(), "b".repeat(1025)]),
            "alternative 1 is 1025 bytes, more than 1024",
        );
    }

    #[test]
    fn decisions_serialize_with_took_in_milliseconds() {
        let d = check_decision("cost", "*", deny("too dear", vec!["split".into()]), T);
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "hook": "cost",
                "pattern": "*",
                "decision": "deny",
                "reason": "too dear",
                "alternatives": ["split"],
                "took_ms": 1.5,
            })
        );
        let back: HookDecision = serde_json::from_value(json).unwrap();
        assert_eq!(back, d);
    }
}
