//! Text tools: several tools in one component.

use glovebox_plugin_sdk::{
    CallContext, Guest, Input, ToolError, ToolSpec, json, output, spec, unknown_tool,
};

struct Text;

fn text_schema(description: &str) -> glovebox_plugin_sdk::Value {
    json!({
        "type": "object",
        "properties": {
            "text": { "type": "string", "description": description }
        },
        "required": ["text"],
        "additionalProperties": false
    })
}

impl Guest for Text {
    fn list_tools() -> Vec<ToolSpec> {
        vec![
            spec(
                "upper",
                "Converts text to upper case (Unicode-aware). Returns {\"text\": ...}.",
                text_schema("The text to convert."),
                "read:text:upper",
                false,
                true,
            ),
            spec(
                "lower",
                "Converts text to lower case (Unicode-aware). Returns {\"text\": ...}.",
                text_schema("The text to convert."),
                "read:text:lower",
                false,
                true,
            ),
            spec(
                "reverse",
                "Reverses text character by character (Unicode scalar values). Returns {\"text\": ...}.",
                text_schema("The text to reverse."),
                "read:text:reverse",
                false,
                true,
            ),
            spec(
                "word-count",
                "Counts the words (whitespace-separated), lines and characters of text. \
                 Returns {\"words\": n, \"lines\": n, \"chars\": n}.",
                text_schema("The text to count."),
                "read:text:word-count",
                false,
                true,
            ),
        ]
    }

    fn call(_ctx: CallContext, tool: String, input: String) -> Result<String, ToolError> {
        let specs = Self::list_tools();
        if !specs.iter().any(|s| s.name == tool) {
            return Err(unknown_tool(&tool, &specs));
        }
        let input = Input::parse_strict(&input, &["text"])?;
        let text = input.str("text")?;
        let result = match tool.as_str() {
            "upper" => json!({ "text": text.to_uppercase() }),
            "lower" => json!({ "text": text.to_lowercase() }),
            "reverse" => json!({ "text": text.chars().rev().collect::<String>() }),
            "word-count" => json!({
                "words": text.split_whitespace().count(),
                "lines": text.lines().count(),
                "chars": text.chars().count(),
            }),
            _ => return Err(unknown_tool(&tool, &specs)),
        };
        output(&result)
    }
}

glovebox_plugin_sdk::export!(Text);
