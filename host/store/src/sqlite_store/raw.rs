//! The database behind the store's back, for tests that damage a closed data
//! dir: each helper opens `<data dir>/sqlite/store.db` with a connection of
//! its own and changes one row, bypassing every check the store makes. Call
//! them only while no store has the dir open.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};

/// The database file of the store in `data_dir`.
pub fn db_path(data_dir: &Path) -> PathBuf {
    data_dir.join(super::DB_FILE)
}

fn open(data_dir: &Path) -> Connection {
    let path = db_path(data_dir);
    assert!(path.is_file(), "no SQLite store at `{}`", path.display());
    Connection::open(&path).unwrap_or_else(|e| panic!("cannot open `{}`: {e}", path.display()))
}

fn change_one(data_dir: &Path, sql: &str, params: impl rusqlite::Params, what: &str) {
    let changed = open(data_dir)
        .execute(sql, params)
        .unwrap_or_else(|e| panic!("cannot {what}: {e}"));
    assert_eq!(changed, 1, "cannot {what}: no such entry");
}

/// Deletes entry `seq` of `stream`, leaving a gap (or cutting the stream
/// short, for its last entry).
pub fn delete_entry(data_dir: &Path, stream: &str, seq: u64) {
    change_one(
        data_dir,
        "DELETE FROM entries
         WHERE stream = (SELECT id FROM streams WHERE name = ?1) AND seq = ?2",
        params![stream, seq as i64],
        &format!("delete entry {seq} of stream `{stream}`"),
    );
}

/// Replaces the bytes of entry `seq` of `stream` with `data`.
pub fn overwrite_entry(data_dir: &Path, stream: &str, seq: u64, data: &[u8]) {
    change_one(
        data_dir,
        "UPDATE entries SET data = ?3
         WHERE stream = (SELECT id FROM streams WHERE name = ?1) AND seq = ?2",
        params![stream, seq as i64, data],
        &format!("overwrite entry {seq} of stream `{stream}`"),
    );
}

/// Sets the `application_id` in the database header, as another
/// application's database would have.
pub fn set_application_id(data_dir: &Path, id: i32) {
    open(data_dir)
        .pragma_update(None, "application_id", id)
        .expect("set the application id");
}

/// Sets the schema version in the database header (`user_version`).
pub fn set_schema_version(data_dir: &Path, version: i32) {
    open(data_dir)
        .pragma_update(None, "user_version", version)
        .expect("set the schema version");
}
