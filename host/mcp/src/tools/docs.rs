//! The built-in tools' table of `docs/agents.md`, made from the tools
//! `tools/list` offers (their schemas and descriptions), so that the page
//! cannot drift from what the server offers. A test holds the page to it:
//! `GLOVEBOX_WRITE_DOCS=1 cargo test -p glovebox-mcp` rewrites it.

use serde_json::Value;

use super::builtin_tools;

/// The families the page groups the built-ins in, by the first word of
/// their names; a name of no family here is in the last.
const FAMILIES: [(&str, &[&str]); 3] = [
    ("Sessions", &["session"]),
    ("Background jobs", &["job"]),
    ("Approvals, context and memory", &[]),
];

/// The tables, one per family: a row per built-in, its arguments (required
/// in bold, with the words, ranges and defaults its schema gives) and its
/// description.
pub fn builtins_tables() -> String {
    let tools = builtin_tools();
    let family_of = |name: &str| {
        let word = name.split('_').next().unwrap_or(name);
        FAMILIES
            .iter()
            .position(|(_, words)| words.contains(&word))
            .unwrap_or(FAMILIES.len() - 1)
    };
    let mut page = String::new();
    for (at, (title, _)) in FAMILIES.iter().enumerate() {
        page += &format!(
            "### {title}\n\n| tool | arguments (required in **bold**) | what it does |\n|---|---|---|\n"
        );
        for tool in tools.iter().filter(|t| family_of(&t.name) == at) {
            let schema = Value::Object((*tool.input_schema).clone());
            let arguments = arguments(&schema);
            page += &format!(
                "| `{}` | {} | {} |\n",
                tool.name,
                if arguments.is_empty() {
                    "-".to_string()
                } else {
                    arguments.join(", ")
                },
                cell(tool.description.as_deref().unwrap_or(""))
            );
        }
        page += "\n";
    }
    page.pop();
    page
}

/// Each argument of an object schema: its name (bold when required), and
/// what its schema says of it.
fn arguments(schema: &Value) -> Vec<String> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    let mut names: Vec<&String> = properties.keys().collect();
    // Required first, then by name.
    names.sort_by_key(|n| (!required.contains(&n.as_str()), n.as_str()));
    names
        .into_iter()
        .map(|name| {
            let mut shown = match required.contains(&name.as_str()) {
                true => format!("**`{name}`**"),
                false => format!("`{name}`"),
            };
            let said = about(&properties[name]);
            if !said.is_empty() {
                shown += &format!(" ({said})");
            }
            shown
        })
        .collect()
}

/// What an argument's schema says of its values: its words, its range or
/// length, its default, an object's fields.
fn about(schema: &Value) -> String {
    let mut said = Vec::new();
    if let Some(words) = schema["enum"].as_array() {
        said.push(
            words
                .iter()
                .map(|w| format!("`{}`", w.as_str().map_or(w.to_string(), str::to_string)))
                .collect::<Vec<_>>()
                .join(", "),
        );
    } else if let Some(words) = schema["oneOf"].as_array() {
        let words: Vec<String> = words
            .iter()
            .filter_map(|w| w["const"].as_str().or(w["enum"][0].as_str()))
            .map(|w| format!("`{w}`"))
            .collect();
        if !words.is_empty() {
            said.push(words.join(", "));
        }
    }
    if let Some(fields) = schema["properties"].as_object() {
        let fields: Vec<String> = fields.keys().map(|f| format!("`{f}`")).collect();
        said.push(format!("{{{}}}", fields.join(", ")));
    }
    match (schema["minimum"].as_u64(), schema["maximum"].as_u64()) {
        (Some(min), Some(max)) => said.push(format!("{min}-{max}")),
        (Some(min), None) if min > 0 => said.push(format!("at least {min}")),
        (None, Some(max)) => said.push(format!("at most {max}")),
        _ => {}
    }
    if let Some(max) = schema["maxItems"].as_u64() {
        said.push(format!("at most {max} items"));
    }
    if let Some(max) = schema["items"]["maxLength"].as_u64() {
        said.push(format!("each up to {}", size(max)));
    }
    if let Some(max) = schema["maxLength"].as_u64() {
        said.push(format!("up to {}", size(max)));
    }
    // A default worth saying: not what leaving it out obviously means.
    match schema.get("default") {
        Some(Value::String(word)) if !word.is_empty() => said.push(format!("default `{word}`")),
        Some(n @ Value::Number(_)) if n.as_f64() != Some(0.0) => said.push(format!("default {n}")),
        _ => {}
    }
    said.join("; ")
}

/// A length in bytes or characters, as people write it.
fn size(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1024 && n % 1024 == 0 => format!("{} KiB", n >> 10),
        n => n.to_string(),
    }
}

/// Text as one cell of a Markdown table.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/agents.md` lists the built-ins as `tools/list` offers them.
    #[test]
    fn the_agents_page_lists_every_builtin_as_the_server_offers_it() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/agents.md");
        let page = std::fs::read_to_string(&path).unwrap();
        let (start, end) = ("<!-- builtins -->\n", "<!-- /builtins -->");
        let (head, rest) = page
            .split_once(start)
            .expect("the page has its builtins markers");
        let (_, tail) = rest
            .split_once(end)
            .expect("the page closes its builtins markers");
        let tables = builtins_tables();
        let wanted = format!("{head}{start}{tables}{end}{tail}");
        if std::env::var_os("GLOVEBOX_WRITE_DOCS").is_some() {
            std::fs::write(&path, &wanted).unwrap();
        }
        assert!(
            page == wanted,
            "docs/agents.md's tables are stale: run `GLOVEBOX_WRITE_DOCS=1 cargo test -p glovebox-mcp` to rewrite them; they should be:\n{tables}"
        );
    }
}
