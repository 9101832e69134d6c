//! A session's scratch directory read from outside: what the session's
//! owner or an operator sees of the files its calls left (a listing, and a
//! file's bytes a chunk at a time), served as MCP resources and by the
//! operators' API.
//!
//! Why cap-std: the directory is written by guests, so anything in it may
//! be a link, and the host reads with the host's rights. Every path is
//! resolved beneath the session's directory by [`cap_std::fs::Dir`], so a
//! link that leads out of it (an absolute one, or one that climbs) is
//! refused instead of followed; the sandbox already keeps the links guests
//! make pointing below themselves (`sandbox/symlink.rs`). A path is
//! relative, of plain components (no `..`, no `.`, no root), checked before
//! anything is opened.
//!
//! What is bounded: a chunk is at most [`CHUNK_MAX`] bytes, and a listing
//! reads at most [`SCAN_MAX`] names of one directory (the scratch quota
//! counts a directory with more entries than that as full anyway).

use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Component, Path};
use std::time::UNIX_EPOCH;

use cap_std::fs::Dir;

use super::ScratchDirs;

/// The most bytes one read returns.
pub const CHUNK_MAX: u64 = 1 << 20;

/// The most names of one directory a listing reads.
pub const SCAN_MAX: usize = super::MAX_ENTRIES;

/// The longest path a read names, in bytes.
const PATH_MAX: usize = 4096;

/// What an entry of a directory is (a link is not followed to tell).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Link,
    Other,
}

/// One entry of a directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub kind: EntryKind,
    /// A file's length in bytes (0 for the others).
    pub size: u64,
    /// When it was last modified, in milliseconds since the epoch, where
    /// the file system says.
    pub modified_ms: Option<u64>,
}

/// A page of a directory's entries, by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    pub entries: Vec<Entry>,
    /// The name the next page starts after; `None` at the end.
    pub next_after: Option<String>,
    /// Whether the directory holds more names than a listing reads
    /// ([`SCAN_MAX`]): the page is of the first ones read, not of all.
    pub truncated: bool,
}

/// Bytes of one file from `offset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// The file's whole length.
    pub size: u64,
    pub offset: u64,
    pub bytes: Vec<u8>,
}

/// Why a path of a session's scratch directory cannot be read; each names
/// the path as given.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(
        "`{path}` is not a path inside the scratch directory: write it relative to the directory (`notes/a.txt`), without `..`, `.` or a leading `/`"
    )]
    BadPath { path: String },
    #[error("no `{path}` in the session's scratch directory")]
    NotFound { path: String },
    #[error("`{path}` is a directory: list it instead of reading it")]
    IsDir { path: String },
    #[error("`{path}` is not a directory: read it instead of listing it")]
    NotDir { path: String },
    #[error(
        "`{path}` leads outside the session's scratch directory (a link out of it), so it is not read"
    )]
    Outside { path: String },
    #[error("cannot read `{path}` in the session's scratch directory: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

impl ReadError {
    fn of(path: &str, e: io::Error) -> ReadError {
        let path = path.to_string();
        match e.kind() {
            io::ErrorKind::NotFound => ReadError::NotFound { path },
            io::ErrorKind::NotADirectory => ReadError::NotDir { path },
            io::ErrorKind::IsADirectory => ReadError::IsDir { path },
            // cap-std's answer to a path that would leave the directory.
            io::ErrorKind::PermissionDenied => ReadError::Outside { path },
            _ => ReadError::Io { path, source: e },
        }
    }
}

impl ScratchDirs {
    /// A page of the directory at `path` (`""`: the top) of `session_id`'s
    /// scratch directory: at most `limit` entries, by name, after `after`.
    /// A session whose calls wrote nothing has an empty top directory.
    pub fn list_files(
        &self,
        session_id: &str,
        path: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Listing, ReadError> {
        let relative = checked(path)?;
        let Some(top) = self.open_session_dir(session_id, path)? else {
            return match relative {
                None => Ok(Listing {
                    entries: Vec::new(),
                    next_after: None,
                    truncated: false,
                }),
                Some(_) => Err(ReadError::NotFound { path: path.into() }),
            };
        };
        let dir = match relative {
            None => top,
            Some(relative) => top.open_dir(relative).map_err(|e| ReadError::of(path, e))?,
        };
        page(&dir, after, limit).map_err(|e| ReadError::of(path, e))
    }

    /// At most `length` bytes ([`CHUNK_MAX`] at the most) of the file at
    /// `path` of `session_id`'s scratch directory, from `offset`.
    pub fn read_file(
        &self,
        session_id: &str,
        path: &str,
        offset: u64,
        length: u64,
    ) -> Result<Chunk, ReadError> {
        let Some(relative) = checked(path)? else {
            return Err(ReadError::IsDir { path: path.into() });
        };
        let Some(top) = self.open_session_dir(session_id, path)? else {
            return Err(ReadError::NotFound { path: path.into() });
        };
        let file = top.open(relative).map_err(|e| ReadError::of(path, e))?;
        let mut file = file.into_std();
        let meta = file.metadata().map_err(|e| ReadError::of(path, e))?;
        if meta.is_dir() {
            return Err(ReadError::IsDir { path: path.into() });
        }
        let size = meta.len();
        let offset = offset.min(size);
        let mut bytes = Vec::new();
        file.seek(SeekFrom::Start(offset))
            .and_then(|_| {
                file.take(length.min(CHUNK_MAX))
                    .read_to_end(&mut bytes)
                    .map(drop)
            })
            .map_err(|e| ReadError::of(path, e))?;
        Ok(Chunk {
            size,
            offset,
            bytes,
        })
    }

    /// `session_id`'s scratch directory, opened as the root every path of
    /// it is resolved beneath; `None` when it has none (yet, or any more).
    fn open_session_dir(&self, session_id: &str, path: &str) -> Result<Option<Dir>, ReadError> {
        let at = self.path_of(session_id).map_err(|e| ReadError::Io {
            path: path.into(),
            source: e,
        })?;
        match Dir::open_ambient_dir(&at, cap_std::ambient_authority()) {
            Ok(dir) => Ok(Some(dir)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ReadError::Io {
                path: path.into(),
                source: e,
            }),
        }
    }
}

/// `path` as a relative path of plain components (`None` for the top), or
/// its refusal.
fn checked(path: &str) -> Result<Option<&Path>, ReadError> {
    let bad = || ReadError::BadPath { path: path.into() };
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.is_empty() {
            Ok(None)
        } else {
            Err(bad())
        };
    }
    if path.len() > PATH_MAX || path.contains('\0') || path.contains("//") {
        return Err(bad());
    }
    let relative = Path::new(trimmed);
    if relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
        && !trimmed.split('/').any(|s| s == "." || s.is_empty())
    {
        Ok(Some(relative))
    } else {
        Err(bad())
    }
}

/// The entries of `dir` after `after`, by name, at most `limit`.
fn page(dir: &Dir, after: Option<&str>, limit: usize) -> io::Result<Listing> {
    let mut names = Vec::new();
    let mut truncated = false;
    for entry in dir.entries()? {
        if names.len() == SCAN_MAX {
            truncated = true;
            break;
        }
        let entry = entry?;
        // A name that is not UTF-8 cannot be written in a path to read.
        if let Ok(name) = entry.file_name().into_string() {
            names.push((name, entry));
        }
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    let start = after.map_or(0, |after| {
        names.partition_point(|(n, _)| n.as_str() <= after)
    });
    let rest = names.len() - start.min(names.len());
    let mut entries = Vec::new();
    for (name, entry) in names.into_iter().skip(start).take(limit) {
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => EntryKind::Link,
            Ok(t) if t.is_dir() => EntryKind::Dir,
            Ok(t) if t.is_file() => EntryKind::File,
            Ok(_) => EntryKind::Other,
            // Removed since it was listed.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let meta = match kind {
            EntryKind::Link => None,
            _ => entry.metadata().ok(),
        };
        let size = match kind {
            EntryKind::File => meta.as_ref().map_or(0, |m| m.len()),
            _ => 0,
        };
        let modified_ms = meta
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.into_std().duration_since(UNIX_EPOCH).ok())
            .and_then(|d| u64::try_from(d.as_millis()).ok());
        entries.push(Entry {
            name,
            kind,
            size,
            modified_ms,
        });
    }
    let next_after = (rest > limit).then(|| entries.last().map(|e| e.name.clone()));
    Ok(Listing {
        next_after: next_after.flatten(),
        entries,
        truncated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn dirs() -> (tempfile::TempDir, ScratchDirs, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = ScratchDirs::new(tmp.path().join("scratch"));
        let session = tmp.path().join("scratch/s-1");
        std::fs::create_dir_all(session.join("notes/deep")).unwrap();
        std::fs::write(session.join("a.txt"), "hello").unwrap();
        std::fs::write(session.join("notes/b.bin"), [0u8, 159, 146, 150]).unwrap();
        std::fs::write(tmp.path().join("secret"), "host only").unwrap();
        (tmp, dirs, session)
    }

    #[test]
    fn a_listing_is_by_name_a_page_at_a_time() {
        let (_tmp, dirs, session) = dirs();
        for i in 0..5 {
            std::fs::write(session.join(format!("n{i}")), "x").unwrap();
        }
        let top = dirs.list_files("s-1", "", None, 3).unwrap();
        let names: Vec<&str> = top.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a.txt", "n0", "n1"]);
        assert_eq!(top.entries[0].kind, EntryKind::File);
        assert_eq!(top.entries[0].size, 5);
        assert!(top.entries[0].modified_ms.is_some());
        assert_eq!(top.next_after.as_deref(), Some("n1"));
        let next = dirs.list_files("s-1", "", Some("n1"), 3).unwrap();
        let names: Vec<&str> = next.entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["n2", "n3", "n4"]);
        assert_eq!(next.next_after.as_deref(), Some("n4"));
        let last = dirs.list_files("s-1", "", Some("n4"), 3).unwrap();
        assert_eq!(last.entries.len(), 1);
        assert_eq!(
            (last.entries[0].name.as_str(), last.entries[0].kind),
            ("notes", EntryKind::Dir)
        );
        assert_eq!(last.next_after, None);
        let past = dirs.list_files("s-1", "", Some("zzz"), 3).unwrap();
        assert!(past.entries.is_empty() && past.next_after.is_none());
        let all = dirs.list_files("s-1", "", Some("n2"), 3).unwrap();
        assert_eq!(all.next_after, None, "{all:?}");

        let notes = dirs.list_files("s-1", "notes/", None, 10).unwrap();
        let kinds: Vec<(&str, EntryKind)> = notes
            .entries
            .iter()
            .map(|e| (e.name.as_str(), e.kind))
            .collect();
        assert_eq!(
            kinds,
            [("b.bin", EntryKind::File), ("deep", EntryKind::Dir)]
        );
        // A session whose calls wrote nothing has an empty top.
        assert!(
            dirs.list_files("s-2", "", None, 10)
                .unwrap()
                .entries
                .is_empty()
        );
        assert!(matches!(
            dirs.list_files("s-2", "notes", None, 10),
            Err(ReadError::NotFound { .. })
        ));
    }

    #[test]
    fn a_file_is_read_a_chunk_at_a_time() {
        let (_tmp, dirs, _session) = dirs();
        let whole = dirs.read_file("s-1", "a.txt", 0, CHUNK_MAX).unwrap();
        assert_eq!(
            (whole.size, whole.offset, whole.bytes.as_slice()),
            (5, 0, &b"hello"[..])
        );
        let part = dirs.read_file("s-1", "a.txt", 1, 3).unwrap();
        assert_eq!(part.bytes, b"ell");
        let past = dirs.read_file("s-1", "a.txt", 99, 3).unwrap();
        assert_eq!((past.offset, past.bytes.len()), (5, 0));
        let binary = dirs.read_file("s-1", "notes/b.bin", 0, 10).unwrap();
        assert_eq!(binary.bytes, [0u8, 159, 146, 150]);
        for (path, wanted) in [
            ("notes", "is a directory"),
            ("", "is a directory"),
            ("missing", "no `missing`"),
            ("a.txt/x", "is not a directory"),
        ] {
            let e = dirs.read_file("s-1", path, 0, 10).unwrap_err().to_string();
            assert!(e.contains(wanted), "{path}: {e}");
        }
        let e = dirs.list_files("s-1", "a.txt", None, 10).unwrap_err();
        assert!(matches!(e, ReadError::NotDir { .. }), "{e:?}");
    }

    #[test]
    fn no_path_reaches_outside_the_session_directory() {
        let (tmp, dirs, session) = dirs();
        for bad in [
            "../secret",
            "/etc/passwd",
            "./a.txt",
            "notes/../a.txt",
            "a//b",
            "/",
            "a\0",
        ] {
            let e = dirs.read_file("s-1", bad, 0, 10).unwrap_err();
            assert!(matches!(e, ReadError::BadPath { .. }), "{bad:?}: {e:?}");
        }
        // Links the operator (or anyone outside the sandbox) left are not
        // followed out: absolute, or climbing.
        std::os::unix::fs::symlink(tmp.path().join("secret"), session.join("abs")).unwrap();
        std::os::unix::fs::symlink("../secret", session.join("up")).unwrap();
        std::os::unix::fs::symlink("notes", session.join("inside")).unwrap();
        for out in ["abs", "up"] {
            let e = dirs.read_file("s-1", out, 0, 10).unwrap_err();
            assert!(matches!(e, ReadError::Outside { .. }), "{out}: {e:?}");
            assert!(e.to_string().contains("leads outside"), "{e}");
        }
        // A link that stays inside is read through.
        let through = dirs.read_file("s-1", "inside/b.bin", 0, 10).unwrap();
        assert_eq!(through.size, 4);
        let top = dirs.list_files("s-1", "", None, 10).unwrap();
        let abs = top.entries.iter().find(|e| e.name == "abs").unwrap();
        assert_eq!((abs.kind, abs.size), (EntryKind::Link, 0));
        // Another session's directory is not a path of this one.
        assert!(dirs.read_file("../s-1", "a.txt", 0, 10).is_err());
    }
}
