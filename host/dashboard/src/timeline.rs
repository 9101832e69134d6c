//! What a session's page shows of its log and its files: one timeline
//! row's detail per event kind, and the listing of its scratch directory.
//! The details of calls, of the watch's records and of judgements are
//! written in `timeline/`, a module per family of kinds.

use std::fmt::Write as _;
use std::path::Path;

use glovebox::scratch::{EntryKind, ScratchDirs};
use glovebox::session::{Event, EventKind};

use crate::html::{self, esc};

mod calls;
mod judging;
mod watch;

/// A digest, cut short, whole in its title.
fn short(digest: &str) -> String {
    let (s, _) = html::cut(digest, 12);
    format!("<code title=\"{}\">{}</code>", esc(digest), esc(s))
}

/// How much of an input or output a timeline row shows.
const SHOWN: usize = 4096;

/// A timeline row's detail: what the event says, inputs and outputs cut
/// at [`SHOWN`] bytes. Each family of kinds is written by its own module;
/// the rest show their record.
pub(crate) fn event_detail(e: &Event) -> String {
    let kind = &e.kind;
    calls::detail(kind)
        .or_else(|| watch::detail(kind))
        .or_else(|| judging::detail(kind))
        .unwrap_or_else(|| record(kind))
}

/// The detail of a kind no family writes (handoffs, context, lifecycle):
/// the record itself, under its first field.
fn record(kind: &EventKind) -> String {
    let text = serde_json::to_string_pretty(kind).unwrap_or_default();
    let first = text
        .lines()
        .skip(1)
        .find(|l| !l.trim_start().starts_with("\"type\""))
        .unwrap_or("");
    let (first, _) = html::cut(first, 120);
    format!(
        "<details><summary>{}</summary>{}</details>",
        esc(first.trim()),
        html::pre(&text, SHOWN)
    )
}

/// Entries of a scratch directory listed at most.
const MAX_SCRATCH: usize = 200;

/// The session's scratch directory, as a table of paths and sizes (at most
/// [`MAX_SCRATCH`] entries, four levels deep), read as every surface reads
/// it (`ScratchDirs::list_files`: beneath the directory, links listed and
/// never followed).
pub(crate) fn scratch_listing(root: &Path, session: &str) -> String {
    let dirs = ScratchDirs::new(root.to_path_buf());
    if dirs.path_of(session).is_err() {
        return "<p class=\"muted\">no scratch directory</p>".into();
    }
    let mut entries = Vec::new();
    walk(&dirs, session, "", 0, &mut entries);
    if entries.is_empty() {
        return "<p class=\"muted\" id=\"scratch\">empty (or not created yet)</p>".into();
    }
    let mut out = String::from(
        "<table id=\"scratch\"><thead><tr><th>path</th><th>size</th></tr></thead><tbody>",
    );
    for (path, size) in &entries {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td></tr>",
            esc(path),
            esc(size)
        );
    }
    out += "</tbody></table>";
    if entries.len() >= MAX_SCRATCH {
        let _ = write!(out, "<p class=\"muted\">first {MAX_SCRATCH} entries</p>");
    }
    out
}

/// The entries under `at` (a directory's path ending in `/`, or the top),
/// depth first, as (path, what its size column says).
fn walk(
    dirs: &ScratchDirs,
    session: &str,
    at: &str,
    depth: usize,
    out: &mut Vec<(String, String)>,
) {
    let Ok(listing) = dirs.list_files(session, at, None, MAX_SCRATCH) else {
        return;
    };
    for entry in listing.entries {
        if out.len() >= MAX_SCRATCH {
            return;
        }
        let path = format!("{at}{}", entry.name);
        match entry.kind {
            EntryKind::Dir => {
                let dir = format!("{path}/");
                out.push((dir.clone(), "dir".into()));
                if depth < 4 {
                    walk(dirs, session, &dir, depth + 1, out);
                }
            }
            EntryKind::Link => out.push((path, "link".into())),
            EntryKind::File | EntryKind::Other => out.push((path, format!("{} B", entry.size))),
        }
    }
}

#[cfg(test)]
mod detail_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scratch_table_lists_files_and_directories_and_follows_no_link() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("scratch");
        assert!(scratch_listing(&root, "s-1").contains("empty"));
        let dir = root.join("s-1");
        std::fs::create_dir_all(dir.join("out/deep")).unwrap();
        std::fs::write(dir.join("a.txt"), "hello").unwrap();
        std::fs::write(dir.join("out/deep/b <x>.txt"), "hi").unwrap();
        std::fs::write(tmp.path().join("secret"), "host only").unwrap();
        std::os::unix::fs::symlink(tmp.path(), dir.join("up")).unwrap();
        let table = scratch_listing(&root, "s-1");
        for row in [
            "<tr><td><code>a.txt</code></td><td>5 B</td></tr>",
            "<tr><td><code>out/</code></td><td>dir</td></tr>",
            "<tr><td><code>out/deep/</code></td><td>dir</td></tr>",
            "<tr><td><code>out/deep/b &lt;x&gt;.txt</code></td><td>2 B</td></tr>",
            "<tr><td><code>up</code></td><td>link</td></tr>",
        ] {
            assert!(table.contains(row), "{row} in {table}");
        }
        assert!(!table.contains("secret"), "{table}");
        assert!(scratch_listing(&root, "../x").contains("no scratch directory"));
    }
}
