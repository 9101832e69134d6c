//! The JSON boundary of a tool call (`glovebox-input`): a tool's declared
//! input schema compiled as the hands compile it at load, and an agent's
//! input checked as admission checks it (size, syntax, nesting, schema).
//!
//! The same input is laid out as a person approving the call sees it
//! (`glovebox_input::shown`): every field is shown, and no invisible or
//! bidi character reaches the shown text unmarked.
//!
//! Input: a schema, a line `%%`, then the call's input. Without the
//! separator the whole input is tried both as a schema and as an input
//! against the schemas the example plugins declare.
#![no_main]

use std::sync::LazyLock;

use glovebox_input::shown::{field_order, named_in, show_input};
use glovebox_input::visible::mark_name;
use glovebox_input::{Validator, check_schema, check_size, compile_schema, parse};
use libfuzzer_sys::fuzz_target;

/// The host's default `runtime.max_input_bytes` (1 MiB).
const MAX_INPUT: u64 = 1 << 20;

/// Schemas real tools declare (`echo.echo`, `files.write`, `text.upper`).
static REAL: LazyLock<Vec<Validator>> = LazyLock::new(|| {
    [
        r#"{"additionalProperties":true,"properties":{"message":{"description":"Any text to echo back.","type":"string"}},"type":"object"}"#,
        r#"{"additionalProperties":false,"properties":{"content":{"type":"string"},"path":{"type":"string"}},"required":["path","content"],"type":"object"}"#,
        r#"{"additionalProperties":false,"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}"#,
    ]
    .iter()
    .map(|s| compile_schema(s).expect("a real tool's schema compiles").1)
    .collect()
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        // The guest's schema and the agent's input both reach the host as text.
        return;
    };
    match text.split_once("\n%%\n") {
        Some((schema, input)) => {
            let Ok((_, validator)) = compile_schema(schema) else {
                return;
            };
            admit(&validator, input);
            shown(input, Some(&field_order(schema)), schema);
        }
        None => {
            let _ = compile_schema(text);
            for validator in REAL.iter() {
                admit(validator, text);
            }
            shown(text, None, text);
        }
    }
});

/// What `Host::admit` and `Host::admit_value` do with an input: the text
/// parsed under the size limit, checked against the schema; and the parsed
/// value, serialized again as MCP's path does, checked the same way.
fn admit(validator: &Validator, input: &str) {
    let Ok(value) = parse(input, MAX_INPUT) else {
        return;
    };
    let verdict = check_schema(validator, &value).is_ok();
    let again = value.to_string();
    if check_size(again.len(), MAX_INPUT).is_ok() {
        let reparsed = parse(&again, u64::MAX).expect("serialized JSON parses again");
        // A value and its serialization get the same verdict.
        assert_eq!(check_schema(validator, &reparsed).is_ok(), verdict);
    }
}

/// What an approval shows of `input`: bounded, with every character
/// `visible` marks written as a mark (the hook's `question` names keys).
fn shown(input: &str, order: Option<&[String]>, question: &str) {
    let shown = show_input(input, order, &named_in(question));
    for field in &shown.fields {
        let texts = [field.key.as_deref().unwrap_or(""), field.value.as_str()];
        for text in texts {
            assert!(
                !text.chars().any(|c| c != '\n' && mark_name(c).is_some()),
                "an unmarked invisible character is shown: {text:?}"
            );
        }
    }
    if !shown.whole {
        let total: usize = shown.fields.iter().map(|f| f.value.len()).sum();
        // A preview: at most 100 fields of at most 1 KiB (each marked
        // character written in at most 10 bytes), whatever the input.
        assert!(total <= 100 * 10 * 1024 + 100 * 16, "{total}");
    }
}
