//! The database file: its schema, its version stamp, and how connections to
//! it are set up. The choices are explained in the module docs of
//! [`super`].

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::sqlite_error;
use crate::{Durability, StorageError};

/// `PRAGMA application_id` of a glovebox store: "GBXS" in ASCII. Tells our
/// file from any other SQLite database a data dir might be pointed at.
pub(super) const APPLICATION_ID: i32 = 0x4742_5853;

/// `PRAGMA user_version`: the version of [`SCHEMA`]. Bump it, and teach
/// [`inspect`] and [`open_writer`] to migrate older stores, whenever the
/// schema changes.
pub(super) const SCHEMA_VERSION: i32 = 1;

/// The page size of a new database. See the module docs for why 4 KiB.
const PAGE_SIZE: u32 = 4096;

/// The writer's page cache: the interior pages of both indexes and the tail
/// pages of the streams being appended to stay in memory. In KiB (negative
/// `cache_size`).
const WRITER_CACHE_KIB: i64 = 16 * 1024;

/// Each reader's page cache, in KiB. Readers mostly scan a stream once.
const READER_CACHE_KIB: i64 = 4 * 1024;

/// Size the WAL file is cut back to when it is reset after a checkpoint.
const JOURNAL_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

/// How long a connection retries when another holds a lock it needs: a reader
/// in another process that is rebuilding the WAL index after a crash, or a
/// checkpoint. Never the normal case, so generous.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Prepared statements kept per connection: more than the store uses, so
/// none is ever prepared twice.
const STATEMENT_CACHE: usize = 32;

/// Version 1. `STRICT` tables refuse values of the wrong type, so a row read
/// back always has an integer sequence and a blob; see the module docs for
/// the rest.
const SCHEMA: &str = "
CREATE TABLE streams (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
) STRICT;
CREATE TABLE entries (
    id INTEGER PRIMARY KEY,
    stream INTEGER NOT NULL,
    seq INTEGER NOT NULL CHECK (seq >= 1),
    data BLOB NOT NULL
) STRICT;
CREATE UNIQUE INDEX entries_by_stream ON entries (stream, seq);
CREATE TABLE kv (
    id INTEGER PRIMARY KEY,
    bucket TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL
) STRICT;
CREATE UNIQUE INDEX kv_by_key ON kv (bucket, key);
";

/// What [`inspect`] found in a database file.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// An empty database (a new file): no schema yet.
    Fresh,
    /// A glovebox store of the current schema.
    Current,
}

/// Tells a new file, a glovebox store and anything else apart, by the
/// header's application id and user version.
pub(super) fn inspect(conn: &Connection, db_path: &Path) -> Result<Found, StorageError> {
    let fail = |e| sqlite_error(db_path, "read the header of", e);
    let application_id: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(fail)?;
    let version: i32 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(fail)?;
    let objects: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
        .map_err(fail)?;
    let path = db_path.display();
    match application_id {
        0 if objects == 0 => Ok(Found::Fresh),
        APPLICATION_ID if version == SCHEMA_VERSION => Ok(Found::Current),
        APPLICATION_ID if version > SCHEMA_VERSION => Err(StorageError::Io(format!(
            "`{path}` holds a glovebox store of schema version {version}, newer than the {SCHEMA_VERSION} this glovebox understands: run a newer glovebox on it"
        ))),
        APPLICATION_ID => Err(StorageError::Corrupt(format!(
            "`{path}` is marked as a glovebox store but has schema version {version}, which no glovebox wrote: run `glovebox store check` on its data dir"
        ))),
        other => Err(StorageError::Io(format!(
            "`{path}` is not a glovebox store: its SQLite application_id is {other:#010x}, not glovebox's {APPLICATION_ID:#010x}, and it holds {objects} schema objects: give glovebox a data dir of its own"
        ))),
    }
}

/// `PRAGMA synchronous` for `durability`; see the module docs of [`super`].
pub(super) fn synchronous(durability: Durability) -> &'static str {
    match durability {
        Durability::Flush => "NORMAL",
        Durability::Strict => "FULL",
    }
}

fn open_flags(read_only: bool) -> OpenFlags {
    // No SQLITE_OPEN_URI: a data dir path is a path, whatever it looks like.
    let access = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
    };
    access | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_EXRESCODE
}

fn configure(conn: &Connection, db_path: &Path, cache_kib: i64) -> Result<(), StorageError> {
    let fail = |e| sqlite_error(db_path, "configure a connection to", e);
    conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
    conn.pragma_update(None, "cache_size", -cache_kib)
        .map_err(fail)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(())
}

/// Opens a read-only connection to the database at `db_path`, which must exist.
pub(super) fn open_reader(db_path: &Path) -> Result<Connection, StorageError> {
    let conn = Connection::open_with_flags(db_path, open_flags(true))
        .map_err(|e| sqlite_error(db_path, "open", e))?;
    configure(&conn, db_path, READER_CACHE_KIB)?;
    Ok(conn)
}

/// Opens the checkpointer's connection to the store at `db_path`, which the
/// writer has set up. Its `synchronous` must be the writer's: a checkpoint
/// syncs unless it is `OFF`.
pub(super) fn open_checkpointer(
    db_path: &Path,
    durability: Durability,
) -> Result<Connection, StorageError> {
    let conn = Connection::open_with_flags(
        db_path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_EXRESCODE,
    )
    .map_err(|e| sqlite_error(db_path, "open", e))?;
    configure(&conn, db_path, READER_CACHE_KIB)?;
    conn.pragma_update(None, "synchronous", synchronous(durability))
        .map_err(|e| sqlite_error(db_path, "set up", e))?;
    Ok(conn)
}

/// Opens the writer connection, creating the database or checking it is a
/// store this glovebox can use, and sets it up for `durability`.
/// `committed` is told the WAL's size in pages after each commit (the
/// checkpointer's trigger).
pub(super) fn open_writer(
    db_path: &Path,
    durability: Durability,
    committed: impl Fn(i32) + Send + 'static,
) -> Result<Connection, StorageError> {
    let mut conn = Connection::open_with_flags(db_path, open_flags(false))
        .map_err(|e| sqlite_error(db_path, "open", e))?;
    configure(&conn, db_path, WRITER_CACHE_KIB)?;
    // Before anything is written: a foreign database must stay untouched.
    let found = inspect(&conn, db_path)?;
    let fail = |e| sqlite_error(db_path, "set up", e);
    if found == Found::Fresh {
        // Only takes effect before the first page is written.
        conn.pragma_update(None, "page_size", PAGE_SIZE)
            .map_err(fail)?;
    }
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "wal", |r| r.get(0))
        .map_err(fail)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StorageError::Io(format!(
            "cannot put `{}` in WAL mode (it stays in `{mode}` mode): the SQLite backend needs a file system with shared memory and locks (not a network share)",
            db_path.display()
        )));
    }
    conn.pragma_update(None, "synchronous", synchronous(durability))
        .map_err(fail)?;
    // Checkpoints are the checkpointer's (see `checkpoint.rs`): this
    // removes SQLite's own WAL hook, and ours replaces it.
    conn.pragma_update(None, "wal_autocheckpoint", 0)
        .map_err(fail)?;
    conn.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages| {
        committed(pages);
        Ok(())
    }))
    .map_err(fail)?;
    conn.pragma_update(None, "journal_size_limit", JOURNAL_SIZE_LIMIT)
        .map_err(fail)?;
    if found == Found::Fresh {
        create(&conn, db_path)?;
    }
    Ok(conn)
}

/// Creates the schema and stamps the file, in one transaction: a crash
/// leaves an empty database or a whole store.
fn create(conn: &Connection, db_path: &Path) -> Result<(), StorageError> {
    let script = format!(
        "BEGIN IMMEDIATE;
        {SCHEMA}
        PRAGMA application_id = {APPLICATION_ID};
        PRAGMA user_version = {SCHEMA_VERSION};
        COMMIT;"
    );
    conn.execute_batch(&script).map_err(|e| {
        // Leave no transaction open on a connection we are about to drop.
        let _ = conn.execute_batch("ROLLBACK");
        sqlite_error(db_path, "create the schema in", e)
    })?;
    tracing::info!(db = %db_path.display(), "created a new SQLite store");
    Ok(())
}
