//! The operator's settings for a hook: a JSON object, read strictly.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use serde_json::{Map, Value};

/// A hook's settings: the JSON object the operator wrote for it in the host config.
///
/// Empty text and `null` mean "no settings" (an empty object). Anything else must be an
/// object whose keys are all known to the hook: a misspelt key is an error rather than a
/// setting silently ignored. Errors are sentences that name the bad key, for
/// [`invalid_settings`](crate::invalid_settings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    fields: Map<String, Value>,
}

impl Settings {
    /// Parses `text`, refusing keys other than `known`.
    pub fn parse(text: &str, known: &[&str]) -> Result<Self, String> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("settings are not valid JSON: {e}"))?;
        let fields = match value {
            Value::Null => Map::new(),
            Value::Object(fields) => fields,
            other => {
                return Err(format!(
                    "settings must be a JSON object, got {}",
                    kind_of(&other)
                ));
            }
        };
        if let Some(unknown) = fields.keys().find(|k| !known.contains(&k.as_str())) {
            let expected = if known.is_empty() {
                String::from("this hook takes no settings")
            } else {
                let names: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
                format!("this hook knows {}", names.join(", "))
            };
            return Err(format!("unknown settings key `{unknown}`; {expected}"));
        }
        Ok(Self { fields })
    }

    /// All keys and values.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// The value of `key`, if present and not null.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key).filter(|v| !v.is_null())
    }

    /// An optional string.
    pub fn opt_str(&self, key: &str) -> Result<Option<&str>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(wrong_type(key, "a string", other)),
        }
    }

    /// An optional object.
    pub fn opt_object(&self, key: &str) -> Result<Option<&Map<String, Value>>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(other) => Err(wrong_type(key, "an object", other)),
        }
    }
}

/// "settings key `KEY` must be EXPECTED, got a string".
pub(crate) fn wrong_type(key: &str, expected: &str, got: &Value) -> String {
    format!(
        "settings key `{key}` must be {expected}, got {}",
        kind_of(got)
    )
}

/// "a string", "an array", ... for messages.
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The array of strings `value` at settings key `key`; the error names the key (or
/// the item) and what was found instead.
pub fn strings(value: &Value, key: &str) -> Result<Vec<String>, String> {
    let Value::Array(items) = value else {
        return Err(format!(
            "settings key `{key}` must be an array of strings, got {}",
            kind_of(value)
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(s.clone()),
            other => Err(format!(
                "settings key `{key}[{i}]` must be a string, got {}",
                kind_of(other)
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_null_are_no_settings() {
        for text in ["", "  \n", "null", "{}"] {
            assert_eq!(
                Settings::parse(text, &["a"]),
                Ok(Settings::default()),
                "{text:?}"
            );
        }
    }

    #[test]
    fn errors_name_the_problem() {
        let err = Settings::parse("[1]", &["a"]).unwrap_err();
        assert_eq!(err, "settings must be a JSON object, got an array");
        let err = Settings::parse(r#"{"b": 1}"#, &["a", "c"]).unwrap_err();
        assert_eq!(err, "unknown settings key `b`; this hook knows `a`, `c`");
        let err = Settings::parse("{", &["a"]).unwrap_err();
        assert!(err.starts_with("settings are not valid JSON"), "{err}");
        let s = Settings::parse(r#"{"a": 1}"#, &["a"]).unwrap();
        assert_eq!(
            s.opt_str("a").unwrap_err(),
            "settings key `a` must be a string, got a number"
        );
        assert_eq!(
            s.opt_object("a").unwrap_err(),
            "settings key `a` must be an object, got a number"
        );
    }

    #[test]
    fn null_values_are_absent() {
        let s = Settings::parse(r#"{"a": null}"#, &["a"]).unwrap();
        assert_eq!(s.opt_str("a"), Ok(None));
    }
}
