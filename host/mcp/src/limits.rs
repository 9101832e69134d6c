//! The built-ins' declared limits, enforced (threat 43): every `maxLength`,
//! `maxItems`, `maximum` (and their lower bounds) a built-in's schema tells
//! clients is checked here, for every built-in, before its arguments are
//! parsed and before it runs. Serde alone takes a string of any length, so
//! without this a 4 MiB `context_search` query reached the index.
//!
//! Only the limit keywords are checked here: types, words and unknown
//! fields are left to the parse (`builtins::parse`), whose errors say more
//! and which takes words the schema spells one way (`-` for `_`). A refusal
//! names the argument, its size and the limit, never the value.

use serde_json::Value;

use super::tools::fields::SCHEMAS;

/// The first argument of built-in `tool` outside a limit its schema
/// declares, in words (`glovebox_input::limits`); `None` when every one
/// holds (or `tool` is not a built-in).
pub(crate) fn first_exceeded(tool: &str, args: &Value) -> Option<String> {
    let (validator, _) = SCHEMAS.get(tool)?;
    glovebox_input::limits::first_exceeded(validator, args)
}
