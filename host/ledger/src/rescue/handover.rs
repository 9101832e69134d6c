//! What a rescue hands a stuck session: a description of what the operator
//! found, files with their content, and changes to the task's specification.
//!
//! An agent's grants may not cover the files the operator wants it to read
//! (the operator's side often holds the spec, the runbook or the fixed config),
//! so a file travels with its content, read by the operator's side and
//! bounded here, and its SHA-256, so the agent and a later reviewer can tell
//! which version was handed over. A path the operator's side could not read
//! is handed over as a path alone, as injections always were.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::context::{ContextEntry, ContextKind, MAX_ENTRY_BYTES};
use super::error::RescueError;

/// The most content one injected file may carry (UTF-8 text).
pub const MAX_FILE_BYTES: usize = 32 * 1024;
/// The most file content one injection may carry in all: the entries stay in
/// the session's log and its state, so they are bounded like everything else
/// that grows there.
pub const MAX_HANDOVER_BYTES: usize = 128 * 1024;
/// The most files one injection may carry.
pub const MAX_FILES: usize = 16;

/// One file an operator hands over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandedFile {
    /// The path as the operator named it (what the agent sees as its text).
    pub path: String,
    /// Its content, when the operator's side could read it.
    pub content: Option<String>,
}

/// Everything one injection hands over; at least one part is needed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Handover {
    /// What the operator found and wants the agent to know, in a sentence or
    /// a paragraph.
    pub description: Option<String>,
    pub files: Vec<HandedFile>,
    pub spec_changes: Vec<String>,
}

/// A file an injection carried, as the rescue's record keeps it (the content
/// itself is in the session's log).
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachedFile {
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
}

impl Handover {
    /// Checks every bound before anything is written: an error names the
    /// part over its bound and what to do.
    pub(super) fn check(&self) -> Result<(), RescueError> {
        let description = self.description.as_deref().map(str::trim);
        if description.is_none_or(str::is_empty)
            && self.files.is_empty()
            && self.spec_changes.is_empty()
        {
            return Err(RescueError::InvalidInput(
                "nothing to inject: give `--description TEXT`, `--file PATH` or `--spec-change TEXT` (repeatable)".into(),
            ));
        }
        if let Some(d) = &self.description
            && (d.trim().is_empty() || d.len() > MAX_ENTRY_BYTES)
        {
            return Err(RescueError::InvalidInput(format!(
                "a description has 1 to {MAX_ENTRY_BYTES} bytes, not {}",
                d.len()
            )));
        }
        let too_long = self
            .files
            .iter()
            .map(|f| &f.path)
            .chain(&self.spec_changes)
            .find(|t| t.trim().is_empty() || t.len() > MAX_ENTRY_BYTES);
        if let Some(t) = too_long {
            return Err(RescueError::InvalidInput(format!(
                "each file and spec change has 1 to {MAX_ENTRY_BYTES} bytes, not {}",
                t.len()
            )));
        }
        if self.files.len() > MAX_FILES {
            return Err(RescueError::InvalidInput(format!(
                "{} files in one injection: at most {MAX_FILES}; inject the rest in a second one",
                self.files.len()
            )));
        }
        if let Some(big) = self
            .files
            .iter()
            .find(|f| f.content.as_ref().is_some_and(|c| c.len() > MAX_FILE_BYTES))
        {
            return Err(RescueError::InvalidInput(format!(
                "`{}` has {} bytes: an injected file carries at most {MAX_FILE_BYTES}; hand over the part that matters (a smaller file, or a spec change)",
                big.path,
                big.content.as_ref().map_or(0, String::len)
            )));
        }
        let total: usize = self
            .files
            .iter()
            .filter_map(|f| f.content.as_ref())
            .map(String::len)
            .sum();
        if total > MAX_HANDOVER_BYTES {
            return Err(RescueError::InvalidInput(format!(
                "the files carry {total} bytes in all: one injection carries at most {MAX_HANDOVER_BYTES}; split them over several injections"
            )));
        }
        Ok(())
    }

    /// The context entries of the `context_injected` event, in the order the
    /// agent should read them: the description, the files, the spec changes.
    pub(super) fn entries(&self, rescue: &str, source: &str, at_ms: u64) -> Vec<ContextEntry> {
        let entry = |kind, text: &str, content: Option<&String>| ContextEntry {
            id: rescue.to_string(),
            kind,
            text: text.to_string(),
            source: source.to_string(),
            at_ms,
            sha256: content.map(|c| sha256(c)),
            content: content.cloned(),
        };
        let description = self
            .description
            .iter()
            .map(|d| entry(ContextKind::Note, d.trim(), None));
        let files = self
            .files
            .iter()
            .map(|f| entry(ContextKind::File, &f.path, f.content.as_ref()));
        let specs = self
            .spec_changes
            .iter()
            .map(|s| entry(ContextKind::SpecChange, s, None));
        description.chain(files).chain(specs).collect()
    }

    /// The files that carried content, for the rescue's record.
    pub(super) fn attached(&self) -> Vec<AttachedFile> {
        self.files
            .iter()
            .filter_map(|f| {
                let content = f.content.as_ref()?;
                Some(AttachedFile {
                    path: f.path.clone(),
                    sha256: sha256(content),
                    bytes: content.len() as u64,
                })
            })
            .collect()
    }
}

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, bytes: usize) -> HandedFile {
        HandedFile {
            path: path.into(),
            content: Some("x".repeat(bytes)),
        }
    }

    fn refusal(handover: Handover) -> String {
        match handover.check() {
            Err(RescueError::InvalidInput(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn every_bound_is_checked_and_named() {
        assert!(refusal(Handover::default()).contains("nothing to inject"));
        let blank = Handover {
            description: Some("  ".into()),
            ..Handover::default()
        };
        assert!(refusal(blank).contains("nothing to inject"));
        let big = Handover {
            files: vec![file("big.md", MAX_FILE_BYTES + 1)],
            ..Handover::default()
        };
        let m = refusal(big);
        assert!(m.contains("`big.md`") && m.contains("at most"), "{m}");
        let many = Handover {
            files: (0..=MAX_FILES).map(|i| file(&format!("f{i}"), 1)).collect(),
            ..Handover::default()
        };
        assert!(refusal(many).contains("second one"));
        let heavy = Handover {
            files: (0..MAX_HANDOVER_BYTES / MAX_FILE_BYTES + 1)
                .map(|i| file(&format!("f{i}"), MAX_FILE_BYTES))
                .collect(),
            ..Handover::default()
        };
        assert!(refusal(heavy).contains("split them"));
        let fits = Handover {
            files: (0..MAX_HANDOVER_BYTES / MAX_FILE_BYTES)
                .map(|i| file(&format!("f{i}"), MAX_FILE_BYTES))
                .collect(),
            ..Handover::default()
        };
        assert!(fits.check().is_ok());
    }

    #[test]
    fn entries_carry_content_and_its_digest_in_reading_order() {
        let handover = Handover {
            description: Some(" found it ".into()),
            files: vec![
                HandedFile {
                    path: "a.md".into(),
                    content: Some("abc".into()),
                },
                HandedFile {
                    path: "theirs.rs".into(),
                    content: None,
                },
            ],
            spec_changes: vec!["ship it".into()],
        };
        let entries = handover.entries("r-1", "rescue:r-1", 7);
        let kinds: Vec<_> = entries.iter().map(|e| (e.kind, e.text.as_str())).collect();
        assert_eq!(
            kinds,
            [
                (ContextKind::Note, "found it"),
                (ContextKind::File, "a.md"),
                (ContextKind::File, "theirs.rs"),
                (ContextKind::SpecChange, "ship it"),
            ]
        );
        // sha256("abc")
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(entries[1].sha256.as_deref(), Some(abc));
        assert_eq!(entries[1].content.as_deref(), Some("abc"));
        assert_eq!(entries[2].content, None);
        assert_eq!(entries[2].sha256, None);
        assert_eq!(
            handover.attached(),
            [AttachedFile {
                path: "a.md".into(),
                sha256: abc.into(),
                bytes: 3
            }]
        );
    }
}
