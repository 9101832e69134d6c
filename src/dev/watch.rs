//! The file watcher: the directories [`super::targets::Targets::roots`]
//! names, watched with notify (inotify, kqueue or FSEvents), each burst of
//! events made one once the files have been quiet for the debounce time,
//! and the changed paths handed to the inner loop.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use notify_debouncer_full::notify::event::{AccessKind, AccessMode};
use notify_debouncer_full::notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::mpsc::UnboundedSender;

use super::say;
use super::targets::Depth;

/// A running watcher; it stops when dropped.
pub(super) struct Watcher {
    _debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
    /// What it watches, to tell whether a new reading of the config needs another.
    pub(super) roots: BTreeMap<PathBuf, Depth>,
}

impl Watcher {
    /// Watches `roots`; each quiet-after-a-burst sends the paths that
    /// changed to `changed`. A root that cannot be watched is reported and
    /// skipped: the others still are.
    pub(super) fn start(
        roots: BTreeMap<PathBuf, Depth>,
        debounce: Duration,
        changed: UnboundedSender<Vec<PathBuf>>,
    ) -> anyhow::Result<Watcher> {
        let handler = move |result: DebounceEventResult| match result {
            Ok(events) => {
                let paths: Vec<PathBuf> = events
                    .into_iter()
                    .filter(|e| is_a_change(&e.event.kind))
                    .flat_map(|e| e.event.paths.clone())
                    .collect();
                if !paths.is_empty() {
                    let _ = changed.send(paths);
                }
            }
            Err(errors) => {
                for e in errors {
                    say(format_args!("the file watcher failed: {e}"));
                }
            }
        };
        let mut debouncer = new_debouncer(debounce, None, handler)
            .map_err(|e| anyhow::anyhow!("cannot start the file watcher: {e}"))?;
        for (dir, depth) in &roots {
            let mode = match depth {
                Depth::Entries => RecursiveMode::NonRecursive,
                Depth::Tree => RecursiveMode::Recursive,
            };
            if let Err(e) = debouncer.watch(dir, mode) {
                say(format_args!(
                    "cannot watch `{}` ({e}): a change there is not seen until `glovebox dev` starts again",
                    dir.display()
                ));
            }
        }
        Ok(Watcher {
            _debouncer: debouncer,
            roots,
        })
    }
}

/// Whether an event may have changed a file's content: not a read.
fn is_a_change(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Create(_)
            | EventKind::Modify(_)
            | EventKind::Remove(_)
            | EventKind::Access(AccessKind::Close(AccessMode::Write))
    )
}
