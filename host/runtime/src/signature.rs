//! A plugin's or hook's signature: a minisign signature of a one-line
//! statement of what was signed (the component's SHA-256 and, for a tool
//! plugin, its name and its manifest's SHA-256), kept in a file beside what
//! it signs: `MANIFEST.sig` beside a plugin's manifest (`echo.toml.sig`),
//! `COMPONENT.sig` beside a hook's component. The statement is also the
//! signature's trusted comment, which minisign signs too, so a reader learns
//! what was signed from the file itself and can say exactly what changed
//! since. The file is a plain minisign signature: `minisign -V -p KEY.pub -m
//! STATEMENT -x FILE.sig` checks it, given the statement's text.
//!
//! Made here by `glovebox plugin sign` and `plugin keygen`; checked by the
//! loader against `[trust]` in `trust.rs`.

use std::fmt;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use crate::manifest::{TrustedKey, key_id};

/// What a signature says was signed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Statement {
    /// A tool plugin: its name, its component and its manifest (grants, limits).
    Plugin {
        name: String,
        component_sha256: String,
        manifest_sha256: String,
    },
    /// A permission hook's component (a hook has no manifest and no grants).
    Hook { component_sha256: String },
}

const PLUGIN_TAG: &str = "glovebox-plugin-signature v1";
const HOOK_TAG: &str = "glovebox-hook-signature v1";

impl fmt::Display for Statement {
    /// One line, as signed: `glovebox-plugin-signature v1 name=echo
    /// component-sha256=HEX manifest-sha256=HEX`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Plugin {
                name,
                component_sha256,
                manifest_sha256,
            } => write!(
                f,
                "{PLUGIN_TAG} name={name} component-sha256={component_sha256} manifest-sha256={manifest_sha256}"
            ),
            Statement::Hook { component_sha256 } => {
                write!(f, "{HOOK_TAG} component-sha256={component_sha256}")
            }
        }
    }
}

impl Statement {
    /// Reads a statement back from its line; `None` if it is not one.
    pub fn parse(line: &str) -> Option<Statement> {
        let field = |rest: &str, key: &str| -> Option<String> {
            rest.split(' ')
                .find_map(|part| part.strip_prefix(key)?.strip_prefix('='))
                .map(str::to_string)
        };
        if let Some(rest) = line.strip_prefix(PLUGIN_TAG) {
            let statement = Statement::Plugin {
                name: field(rest, "name")?,
                component_sha256: field(rest, "component-sha256")?,
                manifest_sha256: field(rest, "manifest-sha256")?,
            };
            return (statement.to_string() == line).then_some(statement);
        }
        let rest = line.strip_prefix(HOOK_TAG)?;
        let statement = Statement::Hook {
            component_sha256: field(rest, "component-sha256")?,
        };
        (statement.to_string() == line).then_some(statement)
    }
}

/// Where the signature of the plugin whose manifest is `manifest` lies: `MANIFEST.sig`.
pub fn plugin_signature_path(manifest: &Path) -> PathBuf {
    with_sig(manifest)
}

/// Where the signature of a hook's `component` lies: `COMPONENT.sig`.
pub fn hook_signature_path(component: &Path) -> PathBuf {
    with_sig(component)
}

fn with_sig(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".sig");
    PathBuf::from(name)
}

/// A signature file, read but not yet trusted: who says they signed what.
pub struct Signature {
    /// The signing key's id, as minisign prints it.
    pub key_id: String,
    /// What it says was signed; `None` if its trusted comment is no statement.
    pub statement: Option<Statement>,
    sig: minisign::SignatureBox,
}

impl Signature {
    /// Reads a signature file's text.
    pub fn parse(text: &str) -> Result<Signature, SignatureError> {
        let sig = minisign::SignatureBox::from_string(text)
            .map_err(|e| SignatureError::NotASignature(e.to_string()))?;
        let statement = sig
            .trusted_comment()
            .ok()
            .and_then(|c| Statement::parse(&c));
        Ok(Signature {
            key_id: key_id(sig.keynum()),
            statement,
            sig,
        })
    }

    /// Whether `key` made this signature of its statement: the key ids
    /// agree, and both the statement and the trusted comment verify.
    pub fn verify(&self, key: &TrustedKey) -> Result<(), SignatureError> {
        let public =
            minisign::PublicKey::from_base64(&key.public_key).map_err(|e| SignatureError::Key {
                id: key.id.clone(),
                why: e.to_string(),
            })?;
        let comment = self
            .sig
            .trusted_comment()
            .map_err(|e| SignatureError::Comment(e.to_string()))?;
        minisign::verify(
            &public,
            &self.sig,
            Cursor::new(comment.into_bytes()),
            true,
            false,
            false,
        )
        .map_err(|e| SignatureError::Minisign(e.to_string()))
    }
}

/// Why a signature, a key or a signing failed; each in minisign's words
/// where it gave some.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// A signature file's text is not a minisign signature.
    #[error("it is not a minisign signature ({0})")]
    NotASignature(String),
    /// A trusted key cannot be read.
    #[error("key {id} cannot be read: {why}")]
    Key { id: String, why: String },
    /// A signature's trusted comment cannot be read.
    #[error("its trusted comment cannot be read: {0}")]
    Comment(String),
    /// A secret key file's text is not a minisign secret key.
    #[error("it is not a minisign secret key ({0})")]
    NotASecretKey(String),
    /// What minisign said: a signature that does not verify, a key it
    /// could not make or decrypt, a signing it could not do.
    #[error("{0}")]
    Minisign(String),
}

/// The SHA-256 of `bytes`, lowercase hex, as statements write digests.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}

/// A minisign key pair, as the two files minisign writes hold them.
pub struct KeyPair {
    /// The `.pub` file: a comment line, then the key in base64.
    pub public_file: String,
    /// The secret key file (unencrypted: keep it owner-only, or encrypt it
    /// with `minisign -C`).
    pub secret_file: String,
    /// The key id, as minisign prints it.
    pub key_id: String,
    /// The public key in base64, as `[trust] keys` takes it inline.
    pub public_key: String,
}

/// Makes a new key pair (unencrypted: the caller writes the secret key
/// owner-only).
pub fn keygen() -> Result<KeyPair, SignatureError> {
    let minisign = |e: minisign::PError| SignatureError::Minisign(e.to_string());
    let pair = minisign::KeyPair::generate_unencrypted_keypair().map_err(minisign)?;
    let id = key_id(pair.pk.keynum());
    let public_file = pair.pk.to_box().map_err(minisign)?.into_string();
    let secret_file = pair
        .sk
        .to_box(Some(&format!("glovebox signing key {id}")))
        .map_err(minisign)?
        .into_string();
    Ok(KeyPair {
        public_file,
        secret_file,
        public_key: pair.pk.to_base64(),
        key_id: id,
    })
}

/// Signs `statement` with the secret key file's text (`password` for a key
/// encrypted by minisign; `None` asks on the terminal if it is), returning
/// the signature file's text and the key's id.
pub fn sign(
    statement: &Statement,
    secret_key: &str,
    password: Option<String>,
) -> Result<(String, String), SignatureError> {
    let minisign = |e: minisign::PError| SignatureError::Minisign(e.to_string());
    let key_box = minisign::SecretKeyBox::from_string(secret_key)
        .map_err(|e| SignatureError::NotASecretKey(e.to_string()))?;
    let key = match minisign::SecretKey::from_unencrypted_box(key_box.clone()) {
        Ok(key) => key,
        Err(_) => minisign::SecretKey::from_box(key_box, password).map_err(minisign)?,
    };
    let line = statement.to_string();
    let signature = minisign::sign(
        None,
        &key,
        Cursor::new(line.as_bytes()),
        Some(&line),
        Some("glovebox plugin signature: the trusted comment says what was signed"),
    )
    .map_err(minisign)?;
    let id = key_id(signature.keynum());
    Ok((signature.into_string(), id))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The key `[trust]` would list for `pair`.
    pub(crate) fn trusted(pair: &KeyPair) -> TrustedKey {
        TrustedKey {
            id: pair.key_id.clone(),
            public_key: pair.public_key.clone(),
        }
    }

    #[test]
    fn a_statement_signed_verifies_with_its_key_only() {
        let statement = Statement::Plugin {
            name: "echo".into(),
            component_sha256: "a".repeat(64),
            manifest_sha256: "b".repeat(64),
        };
        assert_eq!(
            Statement::parse(&statement.to_string()),
            Some(statement.clone())
        );
        let hook = Statement::Hook {
            component_sha256: "c".repeat(64),
        };
        assert_eq!(Statement::parse(&hook.to_string()), Some(hook));
        assert_eq!(Statement::parse("timestamp:1700000000"), None);
        let extra = format!("{statement} fs=/");
        assert_eq!(Statement::parse(&extra), None, "nothing more may be said");

        let (alice, mallory) = (keygen().unwrap(), keygen().unwrap());
        let (text, id) = sign(&statement, &alice.secret_file, None).unwrap();
        assert_eq!(id, alice.key_id);
        let read = Signature::parse(&text).unwrap();
        assert_eq!(read.key_id, alice.key_id);
        assert_eq!(read.statement, Some(statement.clone()));
        read.verify(&trusted(&alice)).unwrap();
        assert!(read.verify(&trusted(&mallory)).is_err());

        // A statement rewritten in the file no longer verifies.
        let forged = text.replace(&"a".repeat(64), &"d".repeat(64));
        assert_ne!(forged, text);
        let forged = Signature::parse(&forged).unwrap();
        assert!(forged.verify(&trusted(&alice)).is_err());
        assert!(Signature::parse("not a signature").is_err());
    }
}
