//! The one error type of configuration loading.
//!
//! Every message starts with the file it is about, names the key (as a dotted path with
//! zero-based indexes into arrays, e.g. `fs[1].guest`) and, where known, its line, and
//! ends with what to do about it.

use std::io;

/// A configuration file (`glovebox.toml` or a plugin manifest) that cannot be used.
///
/// `Display` gives the full message, meant to be shown to the operator as is.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read at all.
    #[error("cannot read `{file}`: {}: check the path and its permissions", lowercase(&.error.to_string()))]
    Read {
        /// The file, as the operator named it.
        file: String,
        /// Why it could not be read.
        error: io::Error,
    },

    /// The file is not valid TOML.
    #[error(
        "in `{file}`: invalid toml at line {line}: {message}: fix the syntax (see https://toml.io)"
    )]
    Syntax {
        file: String,
        line: usize,
        /// What the TOML parser said.
        message: String,
    },

    /// A key that this file format does not have (often a typo).
    #[error("in `{file}`: unknown key `{key}`{}: {expected}", at_line(.line))]
    UnknownKey {
        file: String,
        /// The full key path, e.g. `limits.memroy`.
        key: String,
        line: Option<usize>,
        /// The keys allowed at that place, e.g. ``expected one of `name`, `component` ``.
        expected: String,
    },

    /// A required key is absent.
    #[error("in `{file}`: missing key `{key}`{}: {hint}", at_line(.line))]
    MissingKey {
        file: String,
        key: String,
        /// The line of the table that lacks the key, if it has a header.
        line: Option<usize>,
        hint: String,
    },

    /// A key is present but its value cannot be used.
    #[error("in `{file}`: {problem} (key `{key}`{}): {hint}", at_line(.line))]
    Invalid {
        file: String,
        key: String,
        line: Option<usize>,
        /// What is wrong, e.g. ``invalid size `64 MBs` ``.
        problem: String,
        /// What to do about it.
        hint: String,
    },
}

impl ConfigError {
    /// The file the error is about, as the operator named it.
    pub fn file(&self) -> &str {
        match self {
            ConfigError::Read { file, .. }
            | ConfigError::Syntax { file, .. }
            | ConfigError::UnknownKey { file, .. }
            | ConfigError::MissingKey { file, .. }
            | ConfigError::Invalid { file, .. } => file,
        }
    }

    /// The key path the error is about, when there is one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Read { .. } | ConfigError::Syntax { .. } => None,
            ConfigError::UnknownKey { key, .. }
            | ConfigError::MissingKey { key, .. }
            | ConfigError::Invalid { key, .. } => Some(key),
        }
    }
}

fn at_line(line: &Option<usize>) -> String {
    match line {
        Some(line) => format!(" at line {line}"),
        None => String::new(),
    }
}

// io::Error messages come from the OS capitalised ("No such file or directory").
fn lowercase(message: &str) -> String {
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
