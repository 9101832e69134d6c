//! Choosing and opening a backend: the one place that knows which engines
//! exist, how to tell which one a data dir holds, and how to say what to do
//! when a store cannot be opened.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::{Durability, Storage, StorageError};

/// An embedded storage engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// SQLite in WAL mode (`<dir>/sqlite/store.db`).
    Sqlite,
    /// sled 0.34 (`<dir>/sled/`).
    Sled,
}

impl Backend {
    pub const ALL: [Backend; 2] = [Backend::Sqlite, Backend::Sled];

    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Sled => "sled",
        }
    }

    /// The file or directory under a store dir that holds this engine's data.
    fn marker(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Sled => "sled",
        }
    }

    /// The backend whose data is in store dir `dir`, if any. Two of them is
    /// an error: something other than Glovebox put the second one there.
    pub fn detect(dir: &Path) -> Result<Option<Backend>, StorageError> {
        let found: Vec<Backend> = Backend::ALL
            .into_iter()
            .filter(|b| dir.join(b.marker()).exists())
            .collect();
        match found[..] {
            [] => Ok(None),
            [one] => Ok(Some(one)),
            _ => Err(StorageError::Corrupt(format!(
                "store dir `{}` holds both a sqlite and a sled store: move the one that is not in use out of it",
                dir.display()
            ))),
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A store just opened, and what the open had to repair to get there (empty
/// almost always). A caller that gets repairs must verify what it keeps in
/// the store before serving: see `docs/durability.md`.
pub struct Opened {
    pub storage: Arc<dyn Storage>,
    pub backend: Backend,
    pub repairs: Vec<String>,
}

impl fmt::Debug for Opened {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Opened")
            .field("backend", &self.backend)
            .field("repairs", &self.repairs)
            .finish_non_exhaustive()
    }
}

/// Opens the store in `dir` with `backend` (creating it if the dir holds
/// none). A dir that holds the other backend's store is refused: switching
/// engines is a `glovebox store backup` and `restore`, never a silent fresh
/// start beside the old data.
pub fn open(dir: &Path, backend: Backend, durability: Durability) -> Result<Opened, StorageError> {
    if let Some(existing) = Backend::detect(dir)?
        && existing != backend
    {
        return Err(StorageError::Io(format!(
            "store dir `{}` holds a {existing} store, but the config says `backend = \"{backend}\"`: set `backend = \"{existing}\"` in `[storage]`, or move it to {backend} with `glovebox store backup FILE` (with the old backend configured) and `glovebox store restore FILE` (with the new one)",
            dir.display()
        )));
    }
    match backend {
        #[cfg(feature = "sqlite")]
        Backend::Sqlite => Ok(Opened {
            storage: Arc::new(crate::SqliteStore::open(dir, durability)?),
            backend,
            repairs: Vec::new(),
        }),
        #[cfg(feature = "sled")]
        Backend::Sled => {
            let store = crate::SledStore::open(dir, durability)?;
            let repairs = store.repairs().to_vec();
            Ok(Opened {
                storage: Arc::new(store),
                backend,
                repairs,
            })
        }
        #[allow(unreachable_patterns)]
        other => Err(StorageError::Io(format!(
            "this glovebox was built without the {other} backend: rebuild it with the `{other}` feature of glovebox-store"
        ))),
    }
}
