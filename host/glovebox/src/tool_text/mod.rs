//! Tool text pinned: the names, descriptions and schemas a model reads,
//! recorded when an operator (or the first load) accepted them, and a tool
//! whose text changed held until an operator accepts the change.
//!
//! Why: the digest pin covers a plugin's bytes, but the model reads its
//! tools' text, and a plugin update (or a plugin that builds its text at
//! load) can change that text into instructions for the model ("tool
//! poisoning"). So the host records each tool's text with its digest in the
//! store (bucket [`BUCKET`], one record per `plugin.tool`); at every load
//! (start, reload) a tool whose text differs from its record is held: not
//! listed to agents, its calls refused, until `glovebox plugin accept
//! PLUGIN` (or the HTTP API's `plugins.accept`) records the new text. A
//! tool seen for the first time is recorded as accepted, unless its text has
//! findings ([`scan`]), in which case it is held from the start. Holds are
//! shown with the findings and a diff (`glovebox doctor`).
//!
//! Only sessions and the server see holds (they have a store); a standalone
//! `glovebox call` or `plugin check` does not.

mod scan;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::plugin::ToolInfo;
use crate::storage::Storage;

pub use scan::{Finding, scan};

/// The store's bucket of accepted tool text, by `plugin.tool`.
pub const BUCKET: &str = "tool_text";

/// What a model reads of a tool, and its digest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolText {
    pub description: String,
    pub input_schema: Value,
    /// SHA-256 (hex) of the name, the description and the schema.
    pub digest: String,
}

impl ToolText {
    pub fn of(tool: &ToolInfo) -> ToolText {
        let mut hash = Sha256::new();
        for part in [
            tool.name.as_bytes(),
            tool.description.as_bytes(),
            tool.input_schema.to_string().as_bytes(),
        ] {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part);
        }
        ToolText {
            description: tool.description.clone(),
            input_schema: tool.input_schema.clone(),
            digest: hex::encode(hash.finalize()),
        }
    }
}

/// A tool's accepted text, as the store keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Accepted {
    pub text: ToolText,
    /// Who accepted it: an operator's name, or `host (first load)`.
    pub by: String,
    /// When (RFC 3339, UTC).
    pub at: String,
}

/// Why a tool is held.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Hold {
    /// Its text differs from the one accepted.
    Changed {
        accepted: Box<Accepted>,
        now: ToolText,
        /// What an operator reads before accepting: the lines that differ.
        diff: String,
        findings: Vec<Finding>,
    },
    /// First seen, with findings an operator must read.
    Flagged {
        now: ToolText,
        findings: Vec<Finding>,
    },
    /// Its accepted text could not be read: held rather than trusted.
    Unreadable { error: String },
}

impl Hold {
    /// One line for a refusal: why the tool is held and what an operator does.
    pub fn reason(&self, tool: &str) -> String {
        let plugin = tool.split_once('.').map_or(tool, |(p, _)| p);
        let why = match self {
            Hold::Changed { findings, .. } if !findings.is_empty() => format!(
                "its text changed since an operator accepted it, and the new text has {} finding(s)",
                findings.len()
            ),
            Hold::Changed { .. } => "its text changed since an operator accepted it".to_string(),
            Hold::Flagged { findings, .. } => format!(
                "its text has {} finding(s) an operator has not accepted (text aimed at the model)",
                findings.len()
            ),
            Hold::Unreadable { error } => format!("its accepted text cannot be read ({error})"),
        };
        format!(
            "tool `{tool}` is held: {why}; an operator reads the change (`glovebox doctor`) and runs `glovebox plugin accept {plugin}`"
        )
    }
}

/// The holds of `tools` against what `storage` records; records the text of
/// tools seen for the first time without findings (accepted by the host).
pub fn holds<'t>(
    storage: &dyn Storage,
    tools: impl IntoIterator<Item = &'t ToolInfo>,
) -> BTreeMap<String, Hold> {
    let mut held = BTreeMap::new();
    for tool in tools {
        let now = ToolText::of(tool);
        let recorded = storage
            .get(BUCKET, &tool.name)
            .map_err(|e| e.to_string())
            .and_then(|found| match found {
                None => Ok(None),
                Some(bytes) => serde_json::from_slice::<Accepted>(&bytes)
                    .map(Some)
                    .map_err(|e| e.to_string()),
            });
        let hold = match recorded {
            Err(error) => Some(Hold::Unreadable { error }),
            Ok(Some(accepted)) if accepted.text.digest == now.digest => None,
            Ok(Some(accepted)) => Some(Hold::Changed {
                diff: diff(&accepted.text, &now),
                findings: scan(&now.description, &now.input_schema),
                accepted: Box::new(accepted),
                now,
            }),
            Ok(None) => {
                let findings = scan(&now.description, &now.input_schema);
                if findings.is_empty() {
                    if let Err(e) = record(storage, &tool.name, &now, "host (first load)") {
                        tracing::warn!(tool = %tool.name, error = %e, "cannot record a tool's text");
                    }
                    None
                } else {
                    Some(Hold::Flagged { now, findings })
                }
            }
        };
        if let Some(hold) = hold {
            tracing::warn!(tool = %tool.name, reason = %hold.reason(&tool.name), "tool held");
            held.insert(tool.name.clone(), hold);
        }
    }
    held
}

/// Records `text` as the accepted text of `tool`, by `by`.
pub fn record(
    storage: &dyn Storage,
    tool: &str,
    text: &ToolText,
    by: &str,
) -> Result<(), crate::storage::StorageError> {
    let accepted = Accepted {
        text: text.clone(),
        by: by.to_string(),
        at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    };
    let bytes = serde_json::to_vec(&accepted).expect("a record serializes");
    storage.put(BUCKET, tool, &bytes)
}

/// The lines of the accepted text that the new one lacks (`-`) and the new
/// lines (`+`), description first, then the schema pretty-printed; each side
/// cut at 4 KiB.
fn diff(accepted: &ToolText, now: &ToolText) -> String {
    let lines = |t: &ToolText| -> Vec<String> {
        let mut lines: Vec<String> = t
            .description
            .lines()
            .map(|l| format!("description: {l}"))
            .collect();
        let schema = serde_json::to_string_pretty(&t.input_schema).unwrap_or_default();
        lines.extend(schema.lines().map(|l| format!("input_schema: {l}")));
        lines
    };
    let (old, new) = (lines(accepted), lines(now));
    let mut out = String::new();
    for line in old.iter().filter(|l| !new.contains(l)) {
        out.push_str(&format!("- {line}\n"));
    }
    for line in new.iter().filter(|l| !old.contains(l)) {
        out.push_str(&format!("+ {line}\n"));
    }
    if out.len() > 8192 {
        out.truncate(out.floor_char_boundary(8192));
        out.push_str("… (cut)\n");
    }
    out
}
