//! Session names, scoped by owner: each principal names its sessions in a
//! space of its own.
//!
//! Why (threat 53): with one global space, a name told any agent that some
//! session held it (and `NameTaken` said which, by id), and an agent could
//! take a name first (a `[[schedule]]`'s session name, another team's) so
//! that whoever addressed it by name met the squatter or could not start.
//! Now a name is unique among the live sessions of one owner; another
//! principal's sessions are not there at all ("not found", as for a name
//! nobody has), and two principals may use the same name.
//!
//! Who looks up what ([`Scope`]):
//! - an agent, its own names only (a schedule or trigger is the agent
//!   `schedule:<name>` / `trigger:<name>`, so its `session` is its own);
//! - an operator sees every session: it writes `OWNER/NAME`, or a bare name
//!   when one owner only has sessions of that name (else the error lists
//!   the `OWNER/NAME` forms). Why both: the command line's own sessions
//!   belong to `local`, and an operator who started `review` should say
//!   `review`, not `local/review`; a bare name that two principals use
//!   cannot be guessed, so it is refused rather than picked.
//!
//! Storage: `session_names` holds `<owner>/<name>` → the id of the live
//! session that holds it, claimed by compare-and-set (owners hold no `/`);
//! a name's ended sessions are found through the `sessions_by_name` index
//! (`index.rs`), newest first. A data dir of the global `names` bucket is
//! copied over once, when `index.rs` indexes it; the old bucket is no longer read.

use super::error::SessionError;
use super::index::{BY_NAME, PAGE, by_name_prefix, id_of};
use super::store::{ID_PREFIX, Sessions};
use crate::manifest::{LOCAL_PRINCIPAL, Principal};
use crate::storage::{StorageError, Swap};

pub(crate) const NAMES_BUCKET: &str = "session_names";
/// The global name space of data dirs written before names had owners.
pub(crate) const LEGACY_NAMES_BUCKET: &str = "names";

/// Attempts at a compare-and-set that another writer got to first.
const CLAIM_RETRIES: usize = 3;

/// Index entries a name lookup reads at most (stale ones of renamed
/// sessions included) before it gives up.
const LOOK_AT_MOST: usize = 1000;

/// The key of `name` in `owner`'s space.
pub(crate) fn name_key(owner: &str, name: &str) -> String {
    format!("{owner}/{name}")
}

/// Whose names a key is looked up among.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Scope<'a> {
    /// One principal's (an agent's).
    Owner(&'a str),
    /// Everyone's (an operator's): `OWNER/NAME`, or a bare name one owner has.
    Operator,
}

impl<'a> Scope<'a> {
    pub(crate) fn of(caller: &'a Principal) -> Scope<'a> {
        if caller.is_operator() {
            Scope::Operator
        } else {
            Scope::Owner(caller.name.as_str())
        }
    }
}

impl Sessions {
    /// The id of the session with id or name `key`, as an operator sees
    /// them (see [`Scope::Operator`]).
    pub(crate) fn resolve(&self, key: &str) -> Result<String, SessionError> {
        self.resolve_in(key, Scope::Operator)
    }

    /// The id of the session with id or name `key` in `scope`: an id first
    /// (whoever owns it: callers check), then the live session of that
    /// name, then its newest ended one.
    pub(crate) fn resolve_in(&self, key: &str, scope: Scope<'_>) -> Result<String, SessionError> {
        if key.starts_with(ID_PREFIX)
            && (self.slots.contains(key)
                || self
                    .storage
                    .get(super::info::SESSIONS_BUCKET, key)?
                    .is_some()
                || self.log_exists(key)?)
        {
            return Ok(key.to_string());
        }
        let not_found = || SessionError::NotFound(key.to_string());
        self.ensure_indexed()?;
        match scope {
            Scope::Owner(owner) => self.named(owner, key)?.ok_or_else(not_found),
            Scope::Operator => {
                if let Some((owner, name)) = key.split_once('/')
                    && !owner.is_empty()
                    && let Some(id) = self.named(owner, name)?
                {
                    return Ok(id);
                }
                match self.owners_of(key, 2)?.as_slice() {
                    [] => Err(not_found()),
                    [owner] => self.named(owner, key)?.ok_or_else(not_found),
                    owners => Err(SessionError::InvalidInput(format!(
                        "several principals have sessions named `{key}` ({}, ...): name the one you mean as `OWNER/NAME`",
                        owners
                            .iter()
                            .map(|o| format!("`{o}/{key}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))),
                }
            }
        }
    }

    /// The id of the session a routed handoff targets (`[handoffs]
    /// routes` reach other principals' sessions): an id, or `OWNER/NAME`,
    /// never a bare name (that is the writer's own, looked up before).
    pub(crate) fn resolve_routed(&self, key: &str) -> Result<String, SessionError> {
        let not_found = || SessionError::NotFound(key.to_string());
        if key.starts_with(ID_PREFIX) {
            return self.resolve_in(key, Scope::Operator);
        }
        let (owner, name) = key.split_once('/').ok_or_else(not_found)?;
        self.ensure_indexed()?;
        self.named(owner, name)?.ok_or_else(not_found)
    }

    /// The session `owner` calls `name`: the live one holding it, else the
    /// newest that had it.
    fn named(&self, owner: &str, name: &str) -> Result<Option<String>, SessionError> {
        if let Some(id) = self.storage.get(NAMES_BUCKET, &name_key(owner, name))? {
            return String::from_utf8(id).map(Some).map_err(|_| {
                SessionError::Storage(StorageError::Corrupt(format!(
                    "the name index entry for `{owner}/{name}`"
                )))
            });
        }
        let prefix = by_name_prefix(name, Some(owner));
        for entry in
            glovebox_store::pages(&*self.storage, BY_NAME, &prefix, PAGE).take(LOOK_AT_MOST)
        {
            let (key, _) = entry?;
            let id = id_of(&key);
            if let Some(info) = self.confirmed(id, Some(owner))
                && info.header.name.as_deref() == Some(name)
            {
                return Ok(Some(id.to_string()));
            }
        }
        Ok(None)
    }

    /// Up to `most` owners with a session that is (or was last) named
    /// `name`, in name order: one page read per owner, the entries of an
    /// owner passed over at once.
    fn owners_of(&self, name: &str, most: usize) -> Result<Vec<String>, SessionError> {
        let prefix = by_name_prefix(name, None);
        let mut owners: Vec<String> = Vec::new();
        let mut after: Option<String> = None;
        let mut looked = 0;
        while owners.len() < most && looked < LOOK_AT_MOST {
            let page = self
                .storage
                .scan_page(BY_NAME, &prefix, after.as_deref(), 16)?;
            let full = page.len() == 16;
            let mut next_owner = None;
            for (key, _) in &page {
                looked += 1;
                let Some(owner) = key[prefix.len()..].split(' ').next() else {
                    continue;
                };
                if let Some(info) = self.confirmed(id_of(key), Some(owner))
                    && info.header.name.as_deref() == Some(name)
                {
                    owners.push(owner.to_string());
                    // Past this owner's entries: digits sort before `~`.
                    next_owner = Some(format!("{prefix}{owner} ~"));
                    break;
                }
            }
            match (next_owner, page.last()) {
                (Some(skip), _) => after = Some(skip),
                (None, Some((last, _))) if full => after = Some(last.clone()),
                _ => break,
            }
        }
        Ok(owners)
    }

    /// Whether stream `id` holds a log; a damaged one counts, so that loading
    /// it reports the damage.
    fn log_exists(&self, id: &str) -> Result<bool, StorageError> {
        match self.storage.last_seq(id) {
            Ok(last) => Ok(last > 0),
            Err(StorageError::Damaged { .. }) => Ok(true),
            Err(e) => Err(e),
        }
    }

    /// Claims `name` in `owner`'s space for session `id`; the caller holds
    /// `names`. A name held by a session that is no longer live (or was
    /// never written) is taken over.
    ///
    /// The claim is a compare-and-set over the entry read, so on a store
    /// several hosts share, two hosts claiming one name at once cannot both
    /// get it: the loser reads the winner's claim and is refused. A holder
    /// whose log is not written yet counts as live while another process
    /// holds its lease (it is being started there).
    pub(crate) fn claim_name(&self, owner: &str, name: &str, id: &str) -> Result<(), SessionError> {
        let key = name_key(owner, name);
        for _ in 0..CLAIM_RETRIES {
            let current = self.storage.get(NAMES_BUCKET, &key)?;
            if let Some(holder) = &current {
                let holder = String::from_utf8_lossy(holder).into_owned();
                if holder == id {
                    return Ok(());
                }
                let taken = |label: String| SessionError::NameTaken {
                    name: name.to_string(),
                    holder: label,
                };
                match self.state_of(&holder) {
                    Ok(state) if state.header.status.is_live() => return Err(taken(state.label())),
                    Ok(_) => {}
                    Err(SessionError::NotFound(_)) => {
                        if self.leased_elsewhere(&holder)? {
                            return Err(taken(format!("`{holder}`")));
                        }
                    }
                    // A holder we cannot read keeps its name: it may be live.
                    Err(_) => return Err(taken(format!("`{holder}`"))),
                }
            }
            if self.storage.put_if(
                NAMES_BUCKET,
                &key,
                Swap::new(current.as_deref(), Some(id.as_bytes())),
            )? {
                return Ok(());
            }
            // Another host claimed or freed the name since the read: look again.
        }
        Err(SessionError::Storage(StorageError::Io(format!(
            "the name `{name}` kept changing under {CLAIM_RETRIES} attempts to claim it: other hosts are claiming it too; try again"
        ))))
    }

    /// Frees `name` in `owner`'s space if session `id` holds it.
    /// A compare-and-set: a name another host claimed meanwhile stays its.
    pub(crate) fn release_name(
        &self,
        owner: &str,
        name: &str,
        id: &str,
    ) -> Result<(), StorageError> {
        self.storage
            .put_if(
                NAMES_BUCKET,
                &name_key(owner, name),
                Swap::new(Some(id.as_bytes()), None),
            )
            .map(|_| ())
    }

    /// Copies the names the global `names` bucket of a data dir written
    /// before names had owners holds for live sessions into their owners'
    /// spaces (part of [`Sessions::ensure_indexed`]'s one indexing).
    pub(super) fn copy_legacy_names(&self) -> Result<(), SessionError> {
        for entry in glovebox_store::pages(&*self.storage, LEGACY_NAMES_BUCKET, "", PAGE) {
            let (name, id) = entry?;
            let id = String::from_utf8_lossy(&id).into_owned();
            let Some(info) = self.get_info(&id)? else {
                continue;
            };
            if info.header.status.is_live() && info.header.name.as_deref() == Some(name.as_str()) {
                let key = name_key(info.owner_name(), &name);
                self.storage
                    .put_if(NAMES_BUCKET, &key, Swap::new(None, Some(id.as_bytes())))?;
            }
        }
        Ok(())
    }
}

/// The owner a session without a recorded one belongs to.
pub(crate) fn owner_or_local(owner: Option<&str>) -> &str {
    owner.unwrap_or(LOCAL_PRINCIPAL)
}
