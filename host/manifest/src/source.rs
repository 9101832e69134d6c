//! A TOML file being read: its text, an index from key paths to lines, and the mapping
//! of TOML and serde errors to [`ConfigError`]s that name the key and say what to do.

use std::ops::Range;

use serde::de::DeserializeOwned;
use toml::de::{DeTable, DeValue};

use super::ConfigError;

/// One TOML file, parsed once for its spans so that every error can name a line.
pub(super) struct Source {
    /// The file as the operator named it; used in messages only.
    pub(super) file: String,
    text: String,
    /// Every key and value in the document with its key path and byte span.
    index: Vec<Entry>,
}

struct Entry {
    path: String,
    span: Range<usize>,
    is_key: bool,
}

impl Source {
    /// Parses `text` as TOML; syntax errors become [`ConfigError::Syntax`].
    pub(super) fn parse(file: String, text: String) -> Result<Source, ConfigError> {
        let mut index = Vec::new();
        match DeTable::parse(&text) {
            Ok(root) => index_table("", root.get_ref(), &mut index),
            Err(error) => {
                let line = error.span().map_or(1, |span| line_at(&text, span.start));
                return Err(ConfigError::Syntax {
                    file,
                    line,
                    message: one_line(error.message()),
                });
            }
        }
        Ok(Source { file, text, index })
    }

    /// The SHA-256 of the file's bytes as read, lowercase hex.
    pub(super) fn sha256(&self) -> String {
        use sha2::{Digest, Sha256};
        hex::encode(Sha256::digest(self.text.as_bytes()))
    }

    /// Deserializes the document, turning serde's errors into messages with key paths.
    pub(super) fn deserialize<T: DeserializeOwned>(&self) -> Result<T, ConfigError> {
        toml::from_str(&self.text).map_err(|error| self.serde_error(&error))
    }

    /// The line where `path` is written (its key, else its value), if it is in the file.
    pub(super) fn line_of(&self, path: &str) -> Option<usize> {
        let entry = self
            .index
            .iter()
            .find(|e| e.is_key && e.path == path)
            .or_else(|| self.index.iter().find(|e| e.path == path))?;
        Some(line_at(&self.text, entry.span.start))
    }

    /// A [`ConfigError::Invalid`] for `key` in this file, with its line.
    pub(super) fn invalid(
        &self,
        key: &str,
        problem: impl std::fmt::Display,
        hint: impl Into<String>,
    ) -> ConfigError {
        ConfigError::Invalid {
            file: self.file.clone(),
            key: key.to_owned(),
            line: self.line_of(key),
            problem: problem.to_string(),
            hint: hint.into(),
        }
    }

    /// The innermost key path whose span encloses `span`: `""` for the root table.
    fn path_at(&self, span: &Range<usize>) -> &str {
        self.index
            .iter()
            .filter(|e| e.span.start <= span.start && span.end <= e.span.end)
            // The smallest enclosing span is the innermost node; on a tie (an array of
            // tables and its element share the header's span) the longer path is deeper.
            .min_by_key(|e| (e.span.len(), std::cmp::Reverse(e.path.len())))
            .map_or("", |e| e.path.as_str())
    }

    fn serde_error(&self, error: &toml::de::Error) -> ConfigError {
        let message = one_line(error.message());
        let span = error.span().unwrap_or(0..0);
        let line = (!span.is_empty()).then(|| line_at(&self.text, span.start));
        let file = self.file.clone();

        if let Some(rest) = message.strip_prefix("unknown field `") {
            let (name, expected) = rest.split_once('`').unwrap_or((rest, ""));
            let expected = expected.trim_start_matches(',').trim();
            let expected = if expected == "there are no fields" {
                "this table takes no keys: remove it".to_owned()
            } else {
                expected.to_owned()
            };
            let path = self.path_at(&span);
            let key = if path.is_empty() {
                name.to_owned()
            } else {
                path.to_owned()
            };
            return ConfigError::UnknownKey {
                file,
                key,
                line,
                expected,
            };
        }

        if let Some(rest) = message.strip_prefix("missing field `") {
            let name = rest.split_once('`').map_or(rest, |(name, _)| name);
            let table = if span.is_empty() {
                ""
            } else {
                self.path_at(&span)
            };
            return ConfigError::MissingKey {
                file,
                key: join_key(table, name),
                line,
                hint: hint_in(table, name).to_owned(),
            };
        }

        let key = if span.is_empty() {
            String::new()
        } else {
            self.path_at(&span).to_owned()
        };
        ConfigError::Invalid {
            file,
            hint: hint_for(leaf(&key)).to_owned(),
            key,
            line,
            problem: message,
        }
    }
}

fn index_table(prefix: &str, table: &DeTable<'_>, out: &mut Vec<Entry>) {
    for (key, value) in table.iter() {
        let path = join_key(prefix, key.get_ref());
        out.push(Entry {
            path: path.clone(),
            span: key.span(),
            is_key: true,
        });
        index_value(path, value.span(), value.get_ref(), out);
    }
}

fn index_value(path: String, span: Range<usize>, value: &DeValue<'_>, out: &mut Vec<Entry>) {
    match value {
        DeValue::Table(table) => index_table(&path, table, out),
        DeValue::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                index_value(format!("{path}[{i}]"), item.span(), item.get_ref(), out);
            }
        }
        _ => {}
    }
    out.push(Entry {
        path,
        span,
        is_key: false,
    });
}

/// `prefix.key`, quoting `key` the way TOML would need it.
pub(super) fn join_key(prefix: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if bare {
        key.to_owned()
    } else {
        format!("{key:?}")
    };
    if prefix.is_empty() {
        key
    } else {
        format!("{prefix}.{key}")
    }
}

/// The last key of a path: `fs[0].guest` → `guest`, `plugin[2]` → `plugin`.
fn leaf(path: &str) -> &str {
    let last = path.rsplit('.').next().unwrap_or(path);
    last.split('[').next().unwrap_or(last)
}

fn line_at(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// A name of 1 to 64 letters, digits, `-`, `_` and `.`: a schedule's, a
/// trigger's, a notify target's, a storage node's.
pub(super) fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

pub(super) const SIZE_HINT: &str =
    "write a size like `\"64 MiB\"`, `\"512KiB\"` or `\"1 GB\"`, or an integer number of bytes";
pub(super) const DURATION_HINT: &str =
    "write a duration like `\"5s\"`, `\"250ms\"` or `\"2m\"`, or an integer number of milliseconds";
pub(super) const NAME_HINT: &str = "use lowercase letters, digits, `-` and `_`, starting with a letter or digit, e.g. `name = \"files\"`";
pub(super) const ACTION_HINT: &str = "write a colon path of lowercase segments made of `a-z`, `0-9`, `_`, `-` and `*`, e.g. `action = \"write:file\"`";

/// What to write for a missing key `name` of `table`: where a name means
/// something else in one table, that table's hint, else [`hint_for`].
fn hint_in(table: &str, name: &str) -> &'static str {
    match name {
        "url" if table.starts_with("tools.") && table.ends_with(".http") => {
            "name the tool's top-level input field that holds the request's URL, e.g. `http = { url = \"url\", method = \"method\" }`"
        }
        _ => hint_for(name),
    }
}

/// What to write for a key, by its last segment; used for missing keys and bad values.
pub(super) fn hint_for(key: &str) -> &'static str {
    match key {
        "name" => NAME_HINT,
        "component" => {
            "set `component = \"path/to/plugin.wasm\"`; relative paths are resolved from the directory of the file that contains the key"
        }
        "sha256" => {
            "write the 64 hex digits printed by `sha256sum` for the component file, or remove the key"
        }
        "manifest" => {
            "set `manifest = \"plugins/name.toml\"`; relative paths are resolved from the directory of the config file"
        }
        "plugin" => "write one `[[plugin]]` table per plugin, each with `manifest = \"path\"`",
        "host" => {
            "set `host = \"path/to/dir\"`, an existing directory; relative paths are resolved from the manifest's directory"
        }
        "guest" => "set `guest = \"/data\"`, an absolute path inside the sandbox",
        "scratch" => "set `scratch = \"/scratch\"`, an absolute path inside the sandbox",
        "access" => "write `access = \"read-only\"` (the default) or `access = \"read-write\"`",
        "fs" => "write one `[[fs]]` table per directory, with `host`, `guest` and `access`",
        "url" => {
            "set `url = \"https://api.example.com\"`: a scheme (`http` or `https`), a host and an optional port"
        }
        "http" => "write one `[[http]]` table per allowed origin, with `url = \"https://host\"`",
        "env" => "write a list of variable names, e.g. `env = [\"LANG\", \"API_TOKEN\"]`",
        "tools" => "write one `[tools.<tool-name>]` table per tool you override",
        "action" => ACTION_HINT,
        "destructive" | "idempotent" => "write `true` or `false`",
        "cost" => "write a non-negative number, e.g. `cost = 0.01`",
        "memory"
        | "output"
        | "stdio"
        | "max_wasm_stack"
        | "memory_budget"
        | "max_input_bytes"
        | "max_component_bytes"
        | "max_memory_per_instance" => SIZE_HINT,
        "deadline" | "admission_wait" | "slow_call" => DURATION_HINT,
        "admission_queue" => "write an integer from 0 (no queue: busy at once) to 1000000",
        "principal_share" => "write a fraction above 0 and at most 1, e.g. `principal_share = 0.5`",
        "slow_share" => "write a fraction above 0 and at most 1, e.g. `slow_share = 0.5`",
        "fuel" => "write a positive integer amount of fuel, or `\"off\"` to turn fuel metering off",
        "limits" | "defaults" => {
            "write a table with any of `memory`, `deadline`, `output`, `stdio`, `fuel`, `max_wasm_stack`"
        }
        "runtime" => {
            "write a table with any of `max_concurrent_calls`, `memory_budget`, `admission_wait`, `admission_queue`, `principal_share`, `slow_call`, `slow_share`, `max_input_bytes`, `max_component_bytes`, `max_memory_per_instance`, `cache_dir`, `digests_dir`"
        }
        "max_concurrent_calls" => "write an integer from 1 to 1000",
        "data_dir" | "cache_dir" | "digests_dir" => {
            "write a directory path; relative paths are resolved from the directory of the config file"
        }
        "hooks" => {
            "write `hooks = \"none\"` to run calls without permission hooks, or remove the key and list hooks in `[[hook]]` tables"
        }
        "hook" => {
            "write one `[[hook]]` table per permission hook, in the order they judge calls, each with `name` and `component`"
        }
        "settings" => {
            "write a table of the hook's settings, e.g. `[hook.settings]` followed by `threshold = 5.0`"
        }
        _ => "fix the value",
    }
}
