//! The JSON boundary of a tool call: what an agent's input must pass before
//! it is a call (its size, that it is JSON, its nesting, the tool's input
//! schema), and what a tool's declared schema must be before the host serves
//! the tool.
//!
//! Every way in (the CLI, MCP, the jobs runner) reaches these checks through
//! the gateway's admission (`glovebox::pipeline::admit`); the hands compile
//! each tool's schema once, at load (`glovebox_runtime::load_plugin`). They
//! live in this crate of their own, free of the engine, the store and any
//! async runtime, so that the exact code the host runs on hostile input is
//! fuzzed without building wasmtime (`fuzz/`, `docs/security.md`).
//!
//! Errors are the reason alone (the caller names the tool): each says what is
//! wrong and, for a limit, which setting holds it. They are typed
//! ([`InputError`], [`SchemaError`]) so a caller can tell a size refusal from
//! a schema one without reading the text.
//!
//! The same hostile input is also what a person approving the call reads:
//! [`shown`] lays it out for display (what matters first, every value whole
//! or cut to a preview) and [`visible`] marks every invisible or
//! display-changing character, for every surface that shows an approval.

#![forbid(unsafe_code)]

use serde_json::Value;

pub use jsonschema::Validator;

pub mod limits;
pub mod shown;
pub mod visible;

/// How many schema violations a refusal lists: enough to fix an input in
/// one go, few enough that a hostile input cannot make the error huge.
pub const MAX_VIOLATIONS: usize = 5;

/// Why an agent's input is refused before it is a call. `Display` is the
/// reason alone: the caller names the tool.
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum InputError {
    /// The input's JSON text is larger than the host's `runtime.max_input_bytes`.
    #[error(
        "input is {len} bytes, more than the limit of {max_bytes} bytes (`runtime.max_input_bytes`)"
    )]
    TooLarge {
        /// The input's size in bytes.
        len: usize,
        /// The configured limit.
        max_bytes: u64,
    },
    /// The input is not JSON, or nests deeper than serde_json allows.
    #[error("input is not valid JSON: {0}")]
    NotJson(serde_json::Error),
    /// The input does not match the tool's input schema.
    #[error("it does not match the tool's input schema: {}", .violations.join("; "))]
    SchemaMismatch {
        /// The first [`MAX_VIOLATIONS`] violations, each with where in the
        /// input it is.
        violations: Vec<String>,
    },
}

/// Checks an input's size (`len` bytes of JSON text) against the host's
/// `runtime.max_input_bytes`.
pub fn check_size(len: usize, max_bytes: u64) -> Result<(), InputError> {
    if len as u64 > max_bytes {
        return Err(InputError::TooLarge { len, max_bytes });
    }
    Ok(())
}

/// Checks and parses a call's input (JSON text): its size, then its syntax
/// and nesting depth.
pub fn parse(input: &str, max_bytes: u64) -> Result<Value, InputError> {
    check_size(input.len(), max_bytes)?;
    // serde_json refuses nesting deeper than 128 levels with an error, so a
    // hostile document cannot overflow the host's stack.
    serde_json::from_str(input).map_err(InputError::NotJson)
}

/// Why a tool's declared input schema cannot be served.
#[derive(thiserror::Error, Debug)]
pub enum SchemaError {
    /// The schema text is not JSON.
    #[error("its input schema is not valid JSON: {0}")]
    NotJson(String),
    /// The schema is JSON but not a JSON Schema the validator accepts.
    #[error("its input schema is not a valid JSON Schema: {0}")]
    NotSchema(String),
}

/// Parses and compiles a tool's declared input schema (JSON text): the
/// schema as JSON (listed to agents) and its validator.
pub fn compile_schema(text: &str) -> Result<(Value, Validator), SchemaError> {
    let schema: Value =
        serde_json::from_str(text).map_err(|e| SchemaError::NotJson(e.to_string()))?;
    let validator =
        jsonschema::validator_for(&schema).map_err(|e| SchemaError::NotSchema(e.to_string()))?;
    Ok((schema, validator))
}

/// Checks `input` against a tool's compiled schema: the first
/// [`MAX_VIOLATIONS`] violations, each with where in the input it is.
pub fn check_schema(validator: &Validator, input: &Value) -> Result<(), InputError> {
    let violations: Vec<String> = validator
        .iter_errors(input)
        .take(MAX_VIOLATIONS)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at `{at}`: {e}")
            }
        })
        .collect();
    if violations.is_empty() {
        return Ok(());
    }
    Err(InputError::SchemaMismatch { violations })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_over_the_limit_is_refused_naming_the_setting() {
        let err = parse(r#"{"a": 1}"#, 4).unwrap_err().to_string();
        assert!(err.contains("`runtime.max_input_bytes`"), "{err}");
        assert!(parse(r#"{"a": 1}"#, 8).is_ok());
    }

    #[test]
    fn nesting_past_serde_jsons_limit_is_an_error_not_a_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = parse(&deep, u64::MAX).unwrap_err().to_string();
        assert!(err.contains("not valid JSON"), "{err}");
    }

    #[test]
    fn a_schema_violation_says_where() {
        let (_, validator) =
            compile_schema(r#"{"type":"object","properties":{"n":{"type":"integer"}}}"#).unwrap();
        let err = check_schema(&validator, &serde_json::json!({"n": "x"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("at `/n`"), "{err}");
        assert!(check_schema(&validator, &serde_json::json!({"n": 1})).is_ok());
    }

    #[test]
    fn a_schema_that_is_not_json_or_not_a_schema_is_refused() {
        assert!(matches!(compile_schema("{"), Err(SchemaError::NotJson(_))));
        assert!(matches!(
            compile_schema(r#"{"type": 12}"#),
            Err(SchemaError::NotSchema(_))
        ));
    }
}
