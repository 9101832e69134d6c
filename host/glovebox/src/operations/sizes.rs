//! The limits the operations' argument schemas declare, shared with the MCP
//! built-ins' (`glovebox-mcp`'s `tools/sizes.rs`) so that an id, a reason or
//! a cursor has one limit on every surface. The JSON surfaces enforce them
//! before parsing (`glovebox_input::limits`).

/// The longest note or pause reason.
pub const TEXT_MAX: usize = 16 * 1024;
/// The longest model name a usage report may give (the ledger refuses more).
pub const MODEL_MAX: usize = 256;
/// The longest reason or need of a blocker flag an agent raises.
pub const FLAG_TEXT_MAX: usize = 2048;
/// The longest session id or name an argument may give (names have at most
/// 128 characters; ids are 34).
pub const SESSION_REF_MAX: usize = 128;
/// The longest project name.
pub const PROJECT_MAX: usize = 128;
/// The longest tag, and the most tags one argument may give (the ledger's
/// `quotas.tags_per_session` holds a session to fewer).
pub const TAG_MAX: usize = 64;
pub const TAGS_MAX: usize = 1024;
/// The longest id of a job, an approval or a call, or a tool's name.
pub const ID_MAX: usize = 256;
/// The longest page cursor.
pub const CURSOR_MAX: usize = 1024;
/// The longest search query (the memory bank refuses more too).
pub const QUERY_MAX: usize = crate::memory::MAX_QUERY_BYTES;
/// The longest memory scope (`project:NAME`).
pub const SCOPE_MAX: usize = 256;
/// The longest memory entry any config allows (`[memory] max_entry_bytes`
/// is at most 1 MiB; it holds entries to its own, smaller, size).
pub const MEMORY_TEXT_MAX: usize = 1 << 20;
/// The entries `memory.search` returns when `limit` is left out.
pub const SEARCH_LIMIT_DEFAULT: usize = 10;
/// The most events one `sessions.log` page holds, and how many when
/// `limit` is left out.
pub const LOG_PAGE_MAX: usize = 500;
pub const LOG_PAGE_DEFAULT: usize = 100;
/// The reasons a verdict may give, and the longest one (the ledger refuses more).
pub const REASONS_MAX: usize = 32;
pub const REASON_MAX_BYTES: usize = 2048;
/// The longest `jobs.wait` timeout, in milliseconds (an hour).
pub const JOB_WAIT_MAX_MS: u64 = 3_600_000;
/// The longest `sessions.wait` timeout, in milliseconds.
pub const WAIT_MAX_MS: u64 = crate::session::WAIT_MAX.as_millis() as u64;
