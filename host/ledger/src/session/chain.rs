//! The chain function of a session's log: plain SHA-256, or HMAC-SHA256
//! under a key kept outside the data dir (`[storage] chain_key_file`).
//!
//! The plain chain finds accidents and edits by someone who does not know
//! how the chain is computed; anyone who can write the store can alter an
//! event and re-seal every event after it. With a key, each event's chain
//! value is HMAC-SHA256(key, previous value ‖ event), so an attacker who can
//! write the data dir but not read the key cannot re-seal an altered log,
//! and the other records that vouch for the log in keyed mode (the head the
//! session index records, checkpoints) carry a MAC under the same key.
//!
//! The mode is per session and recorded in its first event
//! ([`KeyedChain`]: the key's id, never the key): sessions started before a
//! key was configured stay plain and still verify, a keyed session verifies
//! only with its key, and one whose key is no longer configured is refused
//! with an error that names the key file, never read as plain. A keyed
//! session's id also carries a MAC tag ([`ChainKey::session_id`]), so a
//! keyed log re-sealed whole as plain (its first event rewritten to say
//! plain) is caught while the key is configured.
//!
//! Each use of the key is domain-separated: chain values hash a 64-hex-digit
//! previous value first, the other MACs a `glovebox-…` label (`g` is not a
//! hex digit), so no MAC can stand in for another.

use std::fmt;
use std::sync::Arc;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// The shortest key accepted: 256 bits, HMAC-SHA256's own strength.
pub const MIN_KEY_BYTES: usize = 32;

/// What a keyed session's first event records about its chain.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedChain {
    /// [`ChainKey::id`] of the key the log is sealed with.
    pub key_id: String,
    /// Where the key was (`chain_key_file`) when the session started: named
    /// in errors when the key is missing. Not trusted for anything else.
    pub key_file: String,
}

/// Why a chain key was not taken. Each names the key file.
#[derive(Debug, thiserror::Error)]
pub enum ChainKeyError {
    /// Fewer than [`MIN_KEY_BYTES`] bytes: the message says how to make one.
    #[error(
        "the chain key file `{file}` holds {len} bytes, and a chain key needs at least {MIN_KEY_BYTES}: make one with `head -c 32 /dev/urandom > {file} && chmod 600 {file}`"
    )]
    TooShort { file: String, len: usize },
    /// HMAC refused the key (it takes any length, so this does not happen).
    #[error("the chain key file `{file}`: {why}")]
    Refused {
        file: String,
        why: hmac::digest::InvalidLength,
    },
}

/// The key of a keyed chain, with its id and where it was read from.
#[derive(Clone)]
pub struct ChainKey {
    /// HMAC-SHA256 with the key already absorbed: each MAC clones it
    /// instead of hashing the key again.
    keyed: HmacSha256,
    id: String,
    file: String,
}

impl fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChainKey")
            .field("id", &self.id)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl ChainKey {
    /// The key in `key`, read from `file` (named in messages). At least
    /// [`MIN_KEY_BYTES`] bytes.
    pub fn new(key: Vec<u8>, file: impl Into<String>) -> Result<ChainKey, ChainKeyError> {
        let file = file.into();
        if key.len() < MIN_KEY_BYTES {
            return Err(ChainKeyError::TooShort {
                file,
                len: key.len(),
            });
        }
        let id = hex::encode(&Sha256::digest(&key)[..8]);
        // HMAC takes a key of any length.
        let keyed = match HmacSha256::new_from_slice(&key) {
            Ok(keyed) => keyed,
            Err(e) => return Err(ChainKeyError::Refused { file, why: e }),
        };
        Ok(ChainKey { keyed, id, file })
    }

    /// The key's id: the first 8 bytes of its SHA-256, in hex. Says which
    /// key a log was sealed with without revealing it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The key file it was read from.
    pub fn file(&self) -> &str {
        &self.file
    }

    fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut mac = self.keyed.clone();
        for part in parts {
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }

    /// A new session id for a keyed session: `s-`, 16 random hex digits,
    /// and 16 hex digits of a MAC of them (see [`ChainKey::made_id`]).
    pub(crate) fn session_id(&self) -> String {
        let random = uuid::Uuid::new_v4().simple().to_string();
        let random = &random[..16];
        format!("s-{random}{}", self.id_tag(random))
    }

    fn id_tag(&self, random: &str) -> String {
        hex::encode(&self.mac(&[b"glovebox-session-id\0", random.as_bytes()])[..8])
    }

    /// Whether session id `id` was made by [`ChainKey::session_id`] with
    /// this key: then the session was started keyed, whatever its log says.
    /// A random id passes by chance once in 2^64.
    pub(crate) fn made_id(&self, id: &str) -> bool {
        let Some(hexes) = id.strip_prefix("s-") else {
            return false;
        };
        if hexes.len() != 32 || !hexes.is_char_boundary(16) {
            return false;
        }
        let (random, tag) = hexes.split_at(16);
        self.id_tag(random) == tag
    }
}

/// The chain a session's log is sealed with.
#[derive(Clone, Debug, Default)]
pub enum Chain {
    /// SHA-256: what every log written without a key has.
    #[default]
    Plain,
    Keyed(Arc<ChainKey>),
}

impl Chain {
    /// An event's chain value: over the previous one and the event's
    /// canonical bytes.
    pub fn link(&self, prev_hash: &str, body: &[u8]) -> String {
        match self {
            Chain::Plain => {
                let mut hasher = Sha256::new();
                hasher.update(prev_hash.as_bytes());
                hasher.update(body);
                hex::encode(hasher.finalize())
            }
            Chain::Keyed(key) => hex::encode(key.mac(&[prev_hash.as_bytes(), body])),
        }
    }

    /// The MAC a checkpoint of a keyed session carries over its state JSON;
    /// none for a plain one.
    pub(crate) fn checkpoint_mac(&self, json: &[u8]) -> Option<String> {
        match self {
            Chain::Plain => None,
            Chain::Keyed(key) => Some(hex::encode(key.mac(&[b"glovebox-checkpoint\0", json]))),
        }
    }

    /// The MAC the session index records beside a keyed session's head
    /// (`seq`, `hash`); none for a plain one.
    pub(crate) fn head_mac(&self, session: &str, seq: u64, hash: &str) -> Option<String> {
        match self {
            Chain::Plain => None,
            Chain::Keyed(key) => Some(hex::encode(key.mac(&[
                b"glovebox-head\0",
                session.as_bytes(),
                b"\0",
                seq.to_string().as_bytes(),
                b"\0",
                hash.as_bytes(),
            ]))),
        }
    }

    /// The id of the key, for a keyed chain.
    pub fn key_id(&self) -> Option<&str> {
        match self {
            Chain::Plain => None,
            Chain::Keyed(key) => Some(key.id()),
        }
    }
}

/// A mode as `log verify` prints it: `keyed (key id …)` or `plain`.
pub(crate) fn describe(key_id: Option<&str>) -> String {
    match key_id {
        Some(id) => format!("keyed (key id {id})"),
        None => "plain".to_string(),
    }
}

/// The chain of session `session` (named `label` in messages), whose first
/// event records `keyed` (none: plain), with `key` the configured key. `Err`
/// says why the log cannot be read: its key is not the configured one (the
/// fix names the key file), or its id says it was started keyed under the
/// configured key while its first event says plain (re-sealed without it;
/// `Err(Downgraded)`).
pub(crate) fn chain_of(
    session: &str,
    label: &str,
    keyed: Option<&KeyedChain>,
    key: Option<&Arc<ChainKey>>,
) -> Result<Chain, Refusal> {
    match (keyed, key) {
        (Some(keyed), Some(key)) if keyed.key_id == key.id() => Ok(Chain::Keyed(key.clone())),
        (Some(keyed), Some(key)) => Err(Refusal::KeyRequired(format!(
            "session {label} is keyed with key id {} (key file `{}` when it started), and the configured `chain_key_file` `{}` has key id {}: its log verifies only with its own key; set `[storage] chain_key_file` back to that key file",
            keyed.key_id,
            keyed.key_file,
            key.file(),
            key.id()
        ))),
        (Some(keyed), None) => Err(Refusal::KeyRequired(format!(
            "session {label} is keyed (key id {}): its log verifies only with its key, and no `[storage] chain_key_file` is configured; set `chain_key_file = \"{}\"` in `[storage]` again (the key file it started with)",
            keyed.key_id, keyed.key_file
        ))),
        (None, Some(key)) if key.made_id(session) => Err(Refusal::Downgraded(format!(
            "its id was made under the chain key (key id {}), so it was started keyed, but its first event says plain: the log was re-sealed without the key",
            key.id()
        ))),
        (None, _) => Ok(Chain::Plain),
    }
}

/// Why a session's chain cannot be set up.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The session is keyed and its key is not configured: the message says
    /// which key and where to set it.
    KeyRequired(String),
    /// Its log was re-sealed as plain: damage at event 1.
    Downgraded(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> Arc<ChainKey> {
        Arc::new(ChainKey::new(vec![byte; 32], "/keys/chain.key").unwrap())
    }

    #[test]
    fn a_short_key_is_refused_naming_the_file_and_the_fix() {
        let err = ChainKey::new(vec![1; 31], "/keys/k")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`/keys/k` holds 31 bytes"), "{err}");
        assert!(err.contains("head -c 32 /dev/urandom > /keys/k"), "{err}");
    }

    #[test]
    fn the_key_id_names_the_key_without_revealing_it() {
        let a = key(1);
        assert_eq!(a.id().len(), 16);
        assert_ne!(a.id(), key(2).id());
        assert!(!format!("{a:?}").contains("[1, 1"), "{a:?}");
    }

    #[test]
    fn keyed_links_differ_from_plain_and_between_keys() {
        let plain = Chain::Plain.link("00", b"{}");
        let a = Chain::Keyed(key(1)).link("00", b"{}");
        let b = Chain::Keyed(key(2)).link("00", b"{}");
        assert_eq!(plain, hex::encode(Sha256::digest(b"00{}")));
        assert_ne!(a, plain);
        assert_ne!(a, b);
    }

    #[test]
    fn a_keyed_id_is_recognised_only_by_its_key() {
        let a = key(1);
        let id = a.session_id();
        assert_eq!(id.len(), 34, "{id}");
        assert!(a.made_id(&id));
        assert!(!key(2).made_id(&id));
        let plain = format!("s-{}", uuid::Uuid::new_v4().simple());
        assert!(!a.made_id(&plain));
    }
}
