//! The names of schedules, triggers and the sessions they work in: plain
//! names (they become principals' and sessions' names), each schedule's and
//! trigger's unique among its kind.

use crate::ConfigError;
use crate::source::Source;

const NAME_HINT: &str = "name it with 1 to 64 letters, digits, `-`, `_` and `.`";

/// Why a schedule's, a trigger's or a session's name is refused (the caller
/// adds the key and [`NAME_HINT`]).
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
pub(super) enum NameError {
    #[error("the entry has no `name`")]
    Missing,
    #[error("`{name}` is not a name")]
    Invalid { name: String },
}

pub(super) fn check_name(name: Option<&str>) -> Result<String, NameError> {
    let Some(name) = name else {
        return Err(NameError::Missing);
    };
    if !crate::source::is_plain_name(name) {
        return Err(NameError::Invalid {
            name: name.to_string(),
        });
    }
    Ok(name.to_string())
}

/// The checked name of entry `i` of the `[[table]]` entries (`table` is
/// `schedule` or `trigger`), which no entry before it (`taken`) may bear.
pub(super) fn unique_name<'a>(
    src: &Source,
    table: &str,
    i: usize,
    name: Option<&str>,
    taken: impl Iterator<Item = &'a str>,
) -> Result<String, ConfigError> {
    let key = format!("{table}[{i}].name");
    let name = check_name(name).map_err(|p| src.invalid(&key, p, NAME_HINT))?;
    if let Some(other) = taken.into_iter().position(|t| t == name) {
        return Err(src.invalid(
            &key,
            format!("two {table}s are named `{name}` (also `{table}[{other}]`)"),
            format!("give each `[[{table}]]` its own name"),
        ));
    }
    Ok(name)
}
