//! `[memory]`: the governed memory bank's settings (see `glovebox_ledger::memory`).
//!
//! What an agent learns outlives its session only through the memory bank,
//! and only once an operator approved it. The operator decides here how much
//! of it a new session is handed (a count and a size, so a bank that grows
//! never floods a session's context), how long one entry may be, and which
//! session roles may propose entries to which scope. Nobody may propose until
//! the operator says so (deny by default); approving, rejecting and retiring
//! are the operators' (the command line, the control socket), never an
//! agent's.

use crate::UnknownWord;
use std::collections::BTreeMap;

use serde::Deserialize;

use super::ConfigError;
use super::role::Role;
use super::source::Source;
use super::units::{Size, format_size};

/// The three kinds of scope a memory entry belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemoryScopeKind {
    /// Every session of a project.
    Project,
    /// Every session a principal (the "user") owns.
    User,
    /// Every session of a role.
    Role,
}

impl MemoryScopeKind {
    pub const ALL: [MemoryScopeKind; 3] = [
        MemoryScopeKind::Project,
        MemoryScopeKind::User,
        MemoryScopeKind::Role,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryScopeKind::Project => "project",
            MemoryScopeKind::User => "user",
            MemoryScopeKind::Role => "role",
        }
    }
}

crate::named_enum!(MemoryScopeKind, "memory scope");

/// `[memory]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryConfig {
    /// `max_entries_at_start`: approved entries a new session is handed at
    /// most (the newest first). Default 20; 0 hands none.
    pub max_entries_at_start: u64,
    /// `max_bytes_at_start`: their text together, at most. Default 16 KiB.
    pub max_bytes_at_start: u64,
    /// `max_entry_bytes`: the longest text one entry may have. Default 4 KiB.
    pub max_entry_bytes: u64,
    /// `[memory.propose]`: for each scope, the session roles that may
    /// propose entries to it. Empty by default: no agent proposes until the
    /// operator lists its role.
    pub propose: BTreeMap<MemoryScopeKind, Vec<Role>>,
    /// `[memory.approve]`: for each scope listed, the operators (a declared
    /// operator principal's name, or `cli:<uid>` at the command line) who
    /// may approve, reject and retire its entries. A scope not listed: every
    /// operator. Agents never review.
    pub approve: BTreeMap<MemoryScopeKind, Vec<String>>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            max_entries_at_start: 20,
            max_bytes_at_start: 16 * 1024,
            max_entry_bytes: 4 * 1024,
            propose: BTreeMap::new(),
            approve: BTreeMap::new(),
        }
    }
}

impl MemoryConfig {
    /// Whether a session of `role` may propose to a scope of `kind`.
    pub fn may_propose(&self, role: Role, kind: MemoryScopeKind) -> bool {
        self.propose.get(&kind).is_some_and(|r| r.contains(&role))
    }

    /// Whether operator `name` may review (approve, reject, retire) entries
    /// of a scope of `kind`.
    pub fn may_review(&self, name: &str, kind: MemoryScopeKind) -> bool {
        self.approve
            .get(&kind)
            .is_none_or(|names| names.iter().any(|n| n == name))
    }
}

/// `[memory]` ([`operators/memory.md`](operators/memory.md)).
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawMemory {
    /// Approved entries a new session is handed at most (0 to 1000); `0` hands none.
    #[cfg_attr(feature = "schemars", schemars(extend("default" = 20)))]
    max_entries_at_start: Option<i64>,
    /// Their text together (16 B to 1 MiB).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "16 KiB")))]
    max_bytes_at_start: Option<Size>,
    /// The longest entry (16 B to 1 MiB).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "4 KiB")))]
    max_entry_bytes: Option<Size>,
    /// The session roles that may propose to each scope.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "nobody", "x-one-row" = true)))]
    propose: RawPropose,
    /// The operators (a name, or `cli:<uid>`) who review each scope.
    #[serde(default)]
    #[cfg_attr(feature = "schemars", schemars(extend("x-default" = "every operator", "x-one-row" = true)))]
    approve: RawPropose,
}

/// The memory scopes, each with the roles that may propose to it (`propose`)
/// or the operators who review it (`approve`).
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawPropose {
    /// The project's memory.
    project: Option<Vec<String>>,
    /// A user's memory.
    user: Option<Vec<String>>,
    /// A role's memory.
    role: Option<Vec<String>>,
}

/// The most entries a session may be handed: past this it is no bound.
const MAX_AT_START: i64 = 1000;
/// The largest entry and start size accepted.
const MAX_BYTES: u64 = 1024 * 1024;

pub(super) fn validate_memory(src: &Source, raw: &RawMemory) -> Result<MemoryConfig, ConfigError> {
    let mut c = MemoryConfig::default();
    if let Some(n) = raw.max_entries_at_start {
        if !(0..=MAX_AT_START).contains(&n) {
            return Err(src.invalid(
                "memory.max_entries_at_start",
                format!("{n} is not a count from 0 to {MAX_AT_START}"),
                "set it to a whole number from 0 (hand new sessions nothing) to 1000, or leave it out for the default (20)",
            ));
        }
        c.max_entries_at_start = n as u64;
    }
    for (key, value, slot, default) in [
        (
            "max_bytes_at_start",
            raw.max_bytes_at_start,
            &mut c.max_bytes_at_start,
            "16 KiB",
        ),
        (
            "max_entry_bytes",
            raw.max_entry_bytes,
            &mut c.max_entry_bytes,
            "4 KiB",
        ),
    ] {
        let Some(Size(bytes)) = value else { continue };
        if !(16..=MAX_BYTES).contains(&bytes) {
            return Err(src.invalid(
                &format!("memory.{key}"),
                format!("{} is not between 16 B and 1 MiB", format_size(bytes)),
                format!(
                    "set `{key}` to a size such as \"4KiB\", or leave it out for the default ({default})"
                ),
            ));
        }
        *slot = bytes;
    }
    for (kind, roles) in [
        (MemoryScopeKind::Project, &raw.propose.project),
        (MemoryScopeKind::User, &raw.propose.user),
        (MemoryScopeKind::Role, &raw.propose.role),
    ] {
        let Some(roles) = roles else { continue };
        let mut parsed = Vec::new();
        for r in roles {
            let role: Role = r.parse().map_err(|e: UnknownWord| {
                src.invalid(
                    &format!("memory.propose.{}", kind.as_str()),
                    e,
                    "list the session roles that may propose entries to this scope, e.g. [\"supervisor\"]",
                )
            })?;
            if !parsed.contains(&role) {
                parsed.push(role);
            }
        }
        c.propose.insert(kind, parsed);
    }
    for (kind, names) in [
        (MemoryScopeKind::Project, &raw.approve.project),
        (MemoryScopeKind::User, &raw.approve.user),
        (MemoryScopeKind::Role, &raw.approve.role),
    ] {
        let Some(names) = names else { continue };
        if names.is_empty() || names.iter().any(|n| n.trim().is_empty()) {
            return Err(src.invalid(
                &format!("memory.approve.{}", kind.as_str()),
                "an empty list or name would let nobody review this scope",
                "list the operators who may approve its entries (a declared operator's name, or `cli:<uid>`), or leave the scope out so every operator may",
            ));
        }
        c.approve.insert(kind, names.clone());
    }
    Ok(c)
}
