//! `files.list`: what a session's calls left in its scratch directory, a
//! directory at a time.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::files_read::PATH_MAX;
use super::paging::{page_request, paged_args};
use super::sizes::SESSION_REF_MAX;
use super::{Audience, Operation, OperationError, Route};
use crate::scope::Scope;
use crate::scratch::{Entry, EntryKind};

pub struct ListFiles;

paged_args!(
    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ListFilesArgs paging "Entries" {
        /// The session's id or name.
        #[schemars(length(max = SESSION_REF_MAX))]
        pub session: String,
        /// The directory, relative to the scratch directory (`notes/`); its top
        /// when absent.
        #[serde(default)]
        #[schemars(length(max = PATH_MAX))]
        pub path: String,
    }
);

/// A page of a directory's entries, by name.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FilesPage {
    /// The session's id.
    pub session: String,
    /// The directory listed, as asked.
    pub path: String,
    pub entries: Vec<FileEntry>,
    /// Where the next page starts (its `cursor`); null at the end.
    pub next_cursor: Option<String>,
    /// Whether the directory holds more entries than one listing reads
    /// (100,000): then the pages are of the first ones read.
    pub truncated: bool,
}

/// One entry of a directory.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FileEntry {
    pub name: String,
    pub kind: FileKind,
    /// A file's length in bytes (0 for the others).
    pub size: u64,
    /// When it was last modified (ms since the epoch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_ms: Option<u64>,
}

/// What an entry is; a link is not followed to tell.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    File,
    Dir,
    Link,
    Other,
}

impl From<Entry> for FileEntry {
    fn from(e: Entry) -> FileEntry {
        FileEntry {
            name: e.name,
            kind: match e.kind {
                EntryKind::File => FileKind::File,
                EntryKind::Dir => FileKind::Dir,
                EntryKind::Link => FileKind::Link,
                EntryKind::Other => FileKind::Other,
            },
            size: e.size,
            modified_ms: e.modified_ms,
        }
    }
}

impl Operation for ListFiles {
    const NAME: &'static str = "files.list";
    const SUMMARY: &'static str = "A directory of a session's scratch directory (the files its calls left), by name, a page at a time.";
    const DESCRIPTION: &'static str = "Another principal's session is not found (an operator sees every session). A path is relative to the scratch directory, without `..`; a link is listed, not followed. The directory is the node's that ran the calls.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::get("/sessions/{session}/files"));
    type Args = ListFilesArgs;
    type Output = FilesPage;

    async fn run(scope: Scope<'_>, args: ListFilesArgs) -> Result<FilesPage, OperationError> {
        // The limit every listing takes (1 to 500, refused otherwise), even
        // where a surface did not check the schema's range first.
        let page = page_request(args.limit, args.cursor)?;
        let limit = page.limit.unwrap_or(100);
        let (session, listing) = scope
            .list_files(&args.session, args.path.clone(), page.cursor, limit)
            .await?;
        Ok(FilesPage {
            session,
            path: args.path,
            entries: listing.entries.into_iter().map(FileEntry::from).collect(),
            next_cursor: listing.next_after,
            truncated: listing.truncated,
        })
    }
}
