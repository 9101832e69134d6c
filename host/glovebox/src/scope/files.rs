//! A session's scratch files as the caller may read them: the files its
//! calls left in its scratch directory (`glovebox_runtime::scratch`), listed
//! and read a chunk at a time, and the results kept whole beside them
//! (`crate::stored`).
//!
//! Who may read them is who may see the session (its owner, an operator),
//! reached from the session the caller acts from as for its log
//! ([`Scope::target`]); the directory is looked up by the session's id
//! only after that. What a path may name is the runtime's to decide
//! (beneath the directory, no link followed out of it).
//!
//! A session's scratch directory is on the node whose calls wrote it: on
//! a deployment of many nodes, another node finds it empty.

use crate::operations::OperationError;
use crate::scratch::{Chunk, Listing, ReadError, ScratchDirs};
use crate::tasks::blocking;

use super::Scope;

impl<'g> Scope<'g> {
    /// A page of the directory at `path` of `session`'s (id or name)
    /// scratch directory, with the session's id.
    pub async fn list_files(
        self,
        session: &str,
        path: String,
        after: Option<String>,
        limit: usize,
    ) -> Result<(String, Listing), OperationError> {
        self.in_scratch(session, move |dirs, id| {
            dirs.list_files(id, &path, after.as_deref(), limit)
        })
        .await
    }

    /// At most `length` bytes of the file at `path` of `session`'s scratch
    /// directory from `offset`, with the session's id.
    pub async fn read_file(
        self,
        session: &str,
        path: String,
        offset: u64,
        length: u64,
    ) -> Result<(String, Chunk), OperationError> {
        self.in_scratch(session, move |dirs, id| {
            dirs.read_file(id, &path, offset, length)
        })
        .await
    }

    /// At most `length` bytes of the result of call `call_id` of `session`
    /// kept whole, from `offset`, with the session's id.
    pub async fn read_output(
        self,
        session: &str,
        call_id: String,
        offset: u64,
        length: u64,
    ) -> Result<(String, Chunk), OperationError> {
        self.in_scratch(session, move |dirs, id| {
            dirs.read_output(id, &call_id, offset, length)
        })
        .await
    }

    /// `read` on the scratch directories, off the async threads, for the
    /// id of `session` once the caller may reach it; with that id.
    async fn in_scratch<T: Send + 'static>(
        self,
        session: &str,
        read: impl FnOnce(&ScratchDirs, &str) -> Result<T, ReadError> + Send + 'static,
    ) -> Result<(String, T), OperationError> {
        let key = self
            .target(Some(session.to_string()))
            .await?
            .unwrap_or_else(|| session.to_string());
        let id = self.session(&key).await?.header.id;
        let dirs = ScratchDirs::new(self.gateway.host().config().scratch_dir());
        let at = id.clone();
        let read = blocking(
            move || read(&dirs, &at),
            |why| ReadError::Io {
                path: String::new(),
                source: std::io::Error::other(why),
            },
        )
        .await?;
        Ok((id, read))
    }
}
