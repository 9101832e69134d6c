//! The closed sets of words an argument takes (a role, a status): their
//! schemas list the words, and their parse takes them through the type's
//! `FromStr`.

use std::str::FromStr;

use schemars::{Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};

use glovebox::session::{EndOutcome, HandoffKind, Role, SessionStatus};

/// A string schema whose value is one of `words`. The words of a field
/// that [`word`] reads come from its type's `ALL`, so the schema lists what
/// the parse takes (less what the tool refuses whatever the parse says).
pub(super) fn words<'a>(words: impl IntoIterator<Item = &'a str>) -> Schema {
    let words: Vec<&str> = words.into_iter().collect();
    json_schema!({"type": "string", "enum": words})
}

pub(super) fn roles(_: &mut SchemaGenerator) -> Schema {
    words(Role::ALL.map(Role::as_str))
}

/// A child is never a judge (a judge is started, by another principal).
pub(super) fn child_roles(_: &mut SchemaGenerator) -> Schema {
    words(
        Role::ALL
            .into_iter()
            .filter(|r| *r != Role::Judge)
            .map(Role::as_str),
    )
}

/// A `task` handoff is `session_spawn`'s to write.
pub(super) fn handoff_kinds(_: &mut SchemaGenerator) -> Schema {
    words(
        HandoffKind::ALL
            .into_iter()
            .filter(|k| *k != HandoffKind::Task)
            .map(HandoffKind::as_str),
    )
}

pub(super) fn end_outcomes(_: &mut SchemaGenerator) -> Schema {
    words(EndOutcome::ALL.map(EndOutcome::as_str))
}

pub(super) fn session_statuses(_: &mut SchemaGenerator) -> Schema {
    words(SessionStatus::ALL.map(SessionStatus::as_str))
}

/// One of a closed set of words (a role, a status), through the type's
/// `FromStr`: it takes `-` for `_`, and its error lists the words.
pub(super) fn word<'de, D: Deserializer<'de>, T: FromStr<Err: std::fmt::Display>>(
    d: D,
) -> Result<T, D::Error> {
    String::deserialize(d)?.parse().map_err(D::Error::custom)
}

/// [`word`], for a field that may be left out (or null).
pub(super) fn some_word<'de, D: Deserializer<'de>, T: FromStr<Err: std::fmt::Display>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::<String>::deserialize(d)?
        .map(|w| w.parse().map_err(D::Error::custom))
        .transpose()
}
