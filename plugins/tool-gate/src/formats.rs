//! The data formats a gate reads: JSON, TOML and YAML, each parsed into one
//! JSON value (so a schema checks a TOML or YAML file as it checks JSON), a
//! parse error placed at its line and column.

use glovebox_plugin_sdk::{ToolError, Value, invalid};

/// A file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    Toml,
    Yaml,
}

impl Format {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Toml => "toml",
            Format::Yaml => "yaml",
        }
    }

    /// The format `given` (field `format`), else the one `path`'s extension
    /// says; `default` when it says none of them (`None`: that is an error).
    pub(crate) fn of(
        path: &str,
        given: Option<&str>,
        default: Option<Format>,
    ) -> Result<Format, ToolError> {
        if let Some(given) = given {
            return match given {
                "json" => Ok(Format::Json),
                "toml" => Ok(Format::Toml),
                "yaml" => Ok(Format::Yaml),
                other => Err(invalid(format!(
                    "field `format` is `{other}`: write `json`, `toml` or `yaml`, or leave it \
                     out to take the format from the file's extension"
                ))),
            };
        }
        let extension = path
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        match extension.as_str() {
            "json" => Ok(Format::Json),
            "toml" => Ok(Format::Toml),
            "yaml" | "yml" => Ok(Format::Yaml),
            _ => default.ok_or_else(|| {
                invalid(format!(
                    "`{path}` has no .json, .toml, .yaml or .yml extension, so its format is \
                     unknown: set field `format` to `json`, `toml` or `yaml`"
                ))
            }),
        }
    }

    /// `bytes` parsed as this format, into a JSON value; the error is
    /// `"<line>:<column>: <message>"` where the parser says where.
    pub(crate) fn parse(self, bytes: &[u8]) -> Result<Value, String> {
        match self {
            Format::Json => serde_json::from_slice(bytes)
                .map_err(|e| format!("{}:{}: {}", e.line(), e.column(), strip_at(&e.to_string()))),
            Format::Toml => {
                let text = utf8(bytes)?;
                toml::from_str::<Value>(text).map_err(|e| {
                    let at = e
                        .span()
                        .map(|span| position(text, span.start))
                        .map(|(line, column)| format!("{line}:{column}: "))
                        .unwrap_or_default();
                    format!("{at}{}", e.message())
                })
            }
            Format::Yaml => {
                let text = utf8(bytes)?;
                serde_saphyr::from_str::<Value>(text).map_err(|e| yaml_error(&e))
            }
        }
    }
}

/// A YAML error as `"<line>:<column>: <message>"`: its first line, without
/// the parser's own "error: line L column C: " and the source excerpt under it.
fn yaml_error(e: &serde_saphyr::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let message = match first.split_once(": ") {
        Some((at, rest)) if at.starts_with("line ") => rest,
        _ => first,
    };
    match e.location() {
        Some(at) => format!("{}:{}: {message}", at.line(), at.column()),
        None => message.to_owned(),
    }
}

fn utf8(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|e| {
        let (line, column) = position(
            &String::from_utf8_lossy(&bytes[..e.valid_up_to()]),
            e.valid_up_to(),
        );
        format!("{line}:{column}: the file is not UTF-8 text")
    })
}

/// The 1-based line and column (in characters) of byte `at` of `text`.
fn position(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit_once('\n')
        .map_or(before, |(_, last)| last)
        .chars()
        .count()
        + 1;
    (line, column)
}

/// serde_json's message without its own " at line L column C" (the caller
/// says where first).
fn strip_at(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_parses_into_json_and_says_where_it_breaks() {
        assert_eq!(
            Format::Toml.parse(b"a = 1\n[b]\nc = \"x\"\n").unwrap(),
            serde_json::json!({"a": 1, "b": {"c": "x"}})
        );
        assert_eq!(
            Format::Yaml.parse(b"a: 1\nb:\n  - x\n").unwrap(),
            serde_json::json!({"a": 1, "b": ["x"]})
        );
        let toml = Format::Toml.parse(b"a = 1\nb = \n").unwrap_err();
        assert!(toml.starts_with("2:"), "{toml}");
        let json = Format::Json.parse(b"{\n  \"a\": }").unwrap_err();
        assert!(json.starts_with("2:"), "{json}");
        assert!(!json.contains(" at line "), "{json}");
        let yaml = Format::Yaml.parse(b"a: 1\nb: [1, 2\n").unwrap_err();
        assert!(yaml.starts_with("2:"), "{yaml}");
        assert!(!yaml.contains('\n'), "{yaml}");
    }

    #[test]
    fn the_format_comes_from_the_field_then_the_extension() {
        assert_eq!(Format::of("/d/x.YML", None, None).unwrap(), Format::Yaml);
        assert_eq!(
            Format::of("/d/x.txt", Some("toml"), None).unwrap(),
            Format::Toml
        );
        assert_eq!(
            Format::of("/d/x.txt", None, Some(Format::Json)).unwrap(),
            Format::Json
        );
        assert!(Format::of("/d/x.txt", None, None).is_err());
        assert!(Format::of("/d/x.json", Some("xml"), None).is_err());
    }
}
