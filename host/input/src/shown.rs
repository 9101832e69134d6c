//! A call's input laid out for a person who approves it: one field per
//! top-level key, in an order that puts what matters first, every value
//! whole (or, past [`WHOLE_BYTES`], each value cut to a preview), and every
//! character made [`visible`](crate::visible).
//!
//! The order: the keys the hook named in its question (in backticks, as
//! hooks word them: ``with `force` set``), then the keys the tool's schema
//! requires in the order it lists them, then the rest of the schema's
//! properties in the order the schema text gives them, then keys the schema
//! does not declare, as the input gives them. A schema serialized with
//! sorted keys puts `content` before `path`; its `required` list is in the
//! author's order, so `path` still comes first. A 200 KB `content` sent
//! before the `path` therefore never pushes the path out of sight.
//!
//! Values are shown from the input text as the tool gets it: a string
//! decoded (so `\u0070` shows as `p`, and then any invisible character is
//! marked), numbers as written (not rounded through a float), objects and
//! arrays as sent. A key sent twice is shown every time it occurs, flagged:
//! parsers disagree on which one wins.

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::visible::{Legend, visible_into};

/// Inputs of at most this many bytes are shown whole; larger ones as a
/// preview (each value cut to [`PREVIEW_VALUE_BYTES`]), with their size and
/// SHA-256 and a way to get the whole input.
pub const WHOLE_BYTES: usize = 64 * 1024;
/// In a preview, the most of one value shown.
pub const PREVIEW_VALUE_BYTES: usize = 1024;
/// In a preview, the most of one key shown.
pub const PREVIEW_KEY_BYTES: usize = 256;
/// In a preview, the most fields shown (the rest are counted).
pub const PREVIEW_FIELDS: usize = 100;

/// One top-level field of an input, as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct ShownField {
    /// The key, JSON-quoted and made visible; `None` when the input is not
    /// a JSON object (then the one field is the whole input).
    pub key: Option<String>,
    /// The value as JSON text, made visible, perhaps cut.
    pub value: String,
    /// The value's size in the input, in bytes.
    pub bytes: usize,
    /// Whether `value` is a preview (the value is longer).
    pub cut: bool,
    /// Whether the hook's question named this key.
    pub named: bool,
    /// Whether this key occurs more than once in the input.
    pub duplicate: bool,
}

impl ShownField {
    /// What is true of the field, one phrase each: named by the hook, cut,
    /// duplicated. [`ShownInput::lines`] writes them after the field.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.named {
            notes.push("named by the hook".to_string());
        }
        if self.cut {
            notes.push(format!("cut: {} bytes in all", self.bytes));
        }
        if self.duplicate {
            notes.push("this key is sent more than once".to_string());
        }
        notes
    }
}

/// Where the order of the fields came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldOrder {
    /// The tool's input schema (its `required` list, then its `properties`).
    Schema,
    /// The input itself: the tool's schema was not at hand.
    Input,
}

/// An input laid out for display; see the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct ShownInput {
    /// The input's size in bytes.
    pub bytes: usize,
    /// Whether every key and value is shown in full.
    pub whole: bool,
    pub order: FieldOrder,
    pub fields: Vec<ShownField>,
    /// Fields of a preview left out past [`PREVIEW_FIELDS`].
    pub more_fields: usize,
    /// The marks the shown text made.
    pub legend: Legend,
}

/// The top-level entries of a JSON object, in the order its text gives
/// them, duplicates kept: the values as `V` (their text, or ignored when
/// only the keys matter).
struct Entries<V>(Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EntriesVisitor<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for EntriesVisitor<V> {
            type Value = Entries<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<V>, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, V>()? {
                    out.push(entry);
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(EntriesVisitor(std::marker::PhantomData))
    }
}

/// The order in which a tool's input fields are shown, from its input
/// schema's text: the `required` keys as listed, then the other
/// `properties` as the text gives them. Empty if the schema says neither.
pub fn field_order(schema: &str) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Top {
        #[serde(default)]
        required: Option<serde_json::Value>,
        #[serde(default)]
        properties: Option<Entries<IgnoredAny>>,
    }
    let Ok(top) = serde_json::from_str::<Top>(schema) else {
        return Vec::new();
    };
    let mut order: Vec<String> = match top.required {
        Some(serde_json::Value::Array(keys)) => keys
            .into_iter()
            .filter_map(|k| k.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    let properties = top.properties.map(|p| p.0).unwrap_or_default();
    for (key, IgnoredAny) in properties {
        if !order.contains(&key) {
            order.push(key);
        }
    }
    order
}

/// The keys a hook's question names in backticks (``with `force` set``),
/// in the order it names them.
pub fn named_in(question: &str) -> Vec<String> {
    question
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect()
}

/// Lays `input` out for display. `order` is the tool's [`field_order`]
/// (`None` when the tool's schema is not at hand); `named` the keys the
/// hook's question names ([`named_in`]).
pub fn show_input(input: &str, order: Option<&[String]>, named: &[String]) -> ShownInput {
    let whole = input.len() <= WHOLE_BYTES;
    let mut legend = Legend::default();
    let field_order = if order.is_some() {
        FieldOrder::Schema
    } else {
        FieldOrder::Input
    };
    let Ok(Entries(entries)) = serde_json::from_str::<Entries<Box<RawValue>>>(input) else {
        // Not an object: the one field is the whole text.
        let (value, cut) = shown_text(input, whole, &mut legend);
        return ShownInput {
            bytes: input.len(),
            whole,
            order: field_order,
            fields: vec![ShownField {
                key: None,
                value,
                bytes: input.len(),
                cut,
                named: false,
                duplicate: false,
            }],
            more_fields: 0,
            legend,
        };
    };
    let rank = |key: &str| -> (usize, usize) {
        if let Some(i) = named.iter().position(|n| n == key) {
            return (0, i);
        }
        match order.and_then(|o| o.iter().position(|k| k == key)) {
            Some(i) => (1, i),
            None => (2, 0),
        }
    };
    let mut indexed: Vec<(usize, &(String, Box<RawValue>))> = entries.iter().enumerate().collect();
    // Stable: keys of one rank (and a key's duplicates) keep the input's order.
    indexed.sort_by_key(|(i, (key, _))| {
        let (group, at) = rank(key);
        (group, at, *i)
    });
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (key, _) in &entries {
        *seen.entry(key).or_default() += 1;
    }
    let limit = if whole { usize::MAX } else { PREVIEW_FIELDS };
    let mut fields = Vec::new();
    for (_, (key, raw)) in indexed.iter().take(limit) {
        let duplicate = seen.get(key.as_str()).is_some_and(|&n| n > 1);
        let key_text = quoted(key, if whole { usize::MAX } else { PREVIEW_KEY_BYTES });
        let mut shown_key = String::new();
        visible_into(&key_text.0, &mut shown_key, &mut legend);
        if key_text.1 {
            shown_key.push_str(" …(key cut)");
        }
        let (value, cut) = shown_value(raw.get(), whole, &mut legend);
        fields.push(ShownField {
            key: Some(shown_key),
            value,
            bytes: raw.get().len(),
            cut,
            named: named.iter().any(|n| n == key),
            duplicate,
        });
    }
    ShownInput {
        bytes: input.len(),
        whole,
        order: field_order,
        more_fields: entries.len().saturating_sub(fields.len()),
        fields,
        legend,
    }
}

/// A value's raw JSON text as shown: a string decoded and quoted again
/// (standard escapes for quotes, backslashes and control characters), other
/// values as written; cut to a preview unless `whole`.
fn shown_value(raw: &str, whole: bool, legend: &mut Legend) -> (String, bool) {
    let max = if whole {
        usize::MAX
    } else {
        PREVIEW_VALUE_BYTES
    };
    let (text, cut) = match serde_json::from_str::<String>(raw) {
        Ok(decoded) => quoted(&decoded, max),
        Err(_) => {
            let (head, cut) = cut_at(raw.trim(), max);
            (head.to_string(), cut)
        }
    };
    let mut out = String::with_capacity(text.len());
    visible_into(&text, &mut out, legend);
    if cut {
        out.push('…');
    }
    (out, cut)
}

/// Text that is not a JSON object, as shown.
fn shown_text(text: &str, whole: bool, legend: &mut Legend) -> (String, bool) {
    let max = if whole {
        usize::MAX
    } else {
        PREVIEW_VALUE_BYTES
    };
    let (head, cut) = cut_at(text, max);
    let mut out = String::with_capacity(head.len());
    visible_into(head, &mut out, legend);
    if cut {
        out.push('…');
    }
    (out, cut)
}

/// `text` JSON-quoted, its content cut to `max` bytes (the closing quote is
/// left off a cut string).
fn quoted(text: &str, max: usize) -> (String, bool) {
    let (head, cut) = cut_at(text, max);
    let mut out = serde_json::Value::String(head.to_string()).to_string();
    if cut {
        out.pop();
    }
    (out, cut)
}

/// At most `max` bytes of `text`, cut at a character boundary, and whether
/// it was cut: the one such cut of the crates above (the ledger's bounded
/// texts, the dashboard's previews).
pub fn cut_at(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

impl ShownInput {
    /// The fields as lines of text, one per field (`"path": "/data/a"`),
    /// each followed by what is true of it (named by the hook, cut,
    /// duplicated); then the left-out fields, counted. The CLI and MCP
    /// elicitation print these; the dashboard lays the fields out itself.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::with_capacity(self.fields.len() + 1);
        for f in &self.fields {
            let notes = f.notes();
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!("    ({})", notes.join("; "))
            };
            match &f.key {
                Some(key) => lines.push(format!("{key}: {}{notes}", f.value)),
                None => lines.push(format!("{}{notes}", f.value)),
            }
        }
        if self.more_fields > 0 {
            lines.push(format!("… and {} more keys not shown", self.more_fields));
        }
        lines
    }

    /// What the order of the fields is, in words.
    pub fn order_words(&self) -> &'static str {
        match self.order {
            FieldOrder::Schema => {
                "keys the hook named first, then in the tool's schema order (required first)"
            }
            FieldOrder::Input => {
                "keys the hook named first, then as sent (the tool's schema is not at hand)"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_write_order() -> Vec<String> {
        // `files.write` as a Rust plugin serializes it: keys sorted.
        field_order(
            r#"{"additionalProperties":false,"properties":{"content":{"type":"string"},"path":{"type":"string"}},"required":["path","content"],"type":"object"}"#,
        )
    }

    #[test]
    fn the_schemas_required_keys_come_first_then_its_properties_in_text_order() {
        assert_eq!(files_write_order(), ["path", "content"]);
        assert_eq!(
            field_order(r#"{"properties":{"z":{},"a":{},"m":{}},"required":["m"]}"#),
            ["m", "z", "a"]
        );
        assert!(field_order("not json").is_empty());
    }

    #[test]
    fn a_long_content_before_the_path_is_cut_and_the_path_comes_first_and_whole() {
        let content = "x".repeat(200_000);
        let input = format!(r#"{{"content":"{content}","path":"/data/invoice\u202etxt.exe"}}"#);
        let shown = show_input(&input, Some(&files_write_order()), &[]);
        assert!(!shown.whole);
        assert_eq!(shown.fields[0].key.as_deref(), Some("\"path\""));
        assert_eq!(shown.fields[0].value, "\"/data/invoice<U+202E>txt.exe\"");
        assert!(shown.fields[1].cut);
        assert!(shown.fields[1].value.len() < 1100);
        assert!(shown.lines()[1].contains("cut: 200002 bytes in all"));
        assert!(!shown.legend.is_empty());
    }

    #[test]
    fn a_small_input_is_shown_whole_with_named_keys_first_and_duplicates_flagged() {
        let input =
            r#"{"a":1.00000000000000000001,"force":true,"path":"/data/a\u200bb","path":"x"}"#;
        let shown = show_input(input, None, &named_in("destructive call with `force` set"));
        assert!(shown.whole);
        let lines = shown.lines();
        assert_eq!(lines[0], "\"force\": true    (named by the hook)");
        assert_eq!(lines[1], "\"a\": 1.00000000000000000001");
        assert_eq!(
            lines[2],
            "\"path\": \"/data/a<U+200B>b\"    (this key is sent more than once)"
        );
        assert!(lines[3].starts_with("\"path\": \"x\""));
    }

    #[test]
    fn an_input_that_is_not_an_object_is_one_field() {
        let shown = show_input("[1,\"\u{202e}\"]", None, &[]);
        assert_eq!(shown.fields.len(), 1);
        assert_eq!(shown.fields[0].value, "[1,\"<U+202E>\"]");
    }

    #[test]
    fn a_preview_counts_the_fields_it_leaves_out() {
        let fields: Vec<String> = (0..150)
            .map(|i| format!(r#""k{i}":"{}""#, "v".repeat(600)))
            .collect();
        let input = format!("{{{}}}", fields.join(","));
        let shown = show_input(&input, None, &[]);
        assert_eq!(shown.fields.len(), PREVIEW_FIELDS);
        assert_eq!(shown.more_fields, 50);
    }
}
