//! Holding a plugin or a hook to `[trust]` when it loads: the signature
//! beside it (`signature.rs`) must be by one of the keys that cover it and
//! say it signed exactly this component (and, for a tool plugin, this name
//! and this manifest, whose grants are the security-relevant part). Checked
//! after the component file is read and before anything compiles it; every
//! refusal says which key was expected and how to sign.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::manifest::TrustedKey;
use crate::signature::{Signature, Statement};

/// What is being loaded, as a signature must state it.
pub(crate) struct Subject<'a> {
    /// The statement a good signature makes of it.
    pub expected: Statement,
    /// Where its signature lies.
    pub signature: PathBuf,
    /// Its component file.
    pub component: &'a Path,
    /// A tool plugin's manifest file.
    pub manifest: Option<&'a Path>,
}

impl Subject<'_> {
    /// The command that signs it.
    fn sign_command(&self) -> String {
        let path = self.manifest.unwrap_or(self.component);
        format!(
            "glovebox plugin sign {} --key SECRET_KEY_FILE",
            path.display()
        )
    }
}

/// Why a plugin or hook `[trust]` covers may not load. Its text is a
/// sentence about "it" (the caller names the plugin or hook first).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrustProblem {
    /// There is no signature file.
    Unsigned {
        signature: PathBuf,
        expected: Vec<String>,
        sign: String,
    },
    /// The signature file cannot be read, or is not a minisign signature.
    Unreadable {
        signature: PathBuf,
        message: String,
        sign: String,
    },
    /// It is signed by a key `[trust]` does not trust for it.
    UntrustedKey {
        signature: PathBuf,
        signed_by: String,
        expected: Vec<String>,
        sign: String,
    },
    /// The signature does not verify with the key it names: altered or forged.
    BadSignature {
        signature: PathBuf,
        key: String,
        message: String,
        sign: String,
    },
    /// It signs something else: no statement, another kind, another plugin.
    OtherSubject {
        signature: PathBuf,
        signed: String,
        sign: String,
    },
    /// The component is not the one signed.
    ComponentChanged {
        component: PathBuf,
        signature: PathBuf,
        signed: String,
        actual: String,
        sign: String,
    },
    /// The manifest (its grants, its limits) is not the one signed.
    ManifestChanged {
        manifest: PathBuf,
        signature: PathBuf,
        signed: String,
        actual: String,
        sign: String,
    },
}

impl fmt::Display for TrustProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrustProblem::Unsigned {
                signature,
                expected,
                sign,
            } => write!(
                f,
                "it is not signed (no `{}`), and `[trust]` requires a signature by {}; sign it with that key: `{sign}`",
                signature.display(),
                keys_text(expected)
            ),
            TrustProblem::Unreadable {
                signature,
                message,
                sign,
            } => write!(
                f,
                "its signature `{}` cannot be read: {message}; sign it again: `{sign}`",
                signature.display()
            ),
            TrustProblem::UntrustedKey {
                signature,
                signed_by,
                expected,
                sign,
            } => write!(
                f,
                "its signature `{}` is by key {signed_by}, which `[trust]` does not trust for it: it expects a signature by {}; have it signed with that key (`{sign}`), or add key {signed_by} to `[trust]` once you know whose it is",
                signature.display(),
                keys_text(expected)
            ),
            TrustProblem::BadSignature {
                signature,
                key,
                message,
                sign,
            } => write!(
                f,
                "its signature `{}` does not verify with key {key} ({message}): the file was altered or damaged; sign it again: `{sign}`",
                signature.display()
            ),
            TrustProblem::OtherSubject {
                signature,
                signed,
                sign,
            } => write!(
                f,
                "its signature `{}` signs {signed}, not it; sign it: `{sign}`",
                signature.display()
            ),
            TrustProblem::ComponentChanged {
                component,
                signature,
                signed,
                actual,
                sign,
            } => write!(
                f,
                "its component `{}` is not the one signed: `{}` signs sha256 {signed} but the file has {actual}; restore the signed build, or review the new one and sign it again: `{sign}`",
                component.display(),
                signature.display()
            ),
            TrustProblem::ManifestChanged {
                manifest,
                signature,
                signed,
                actual,
                sign,
            } => write!(
                f,
                "its manifest `{}` is not the one signed (its grants or limits may differ): `{}` signs sha256 {signed} but the file has {actual}; restore the signed manifest, or review the change and sign it again: `{sign}`",
                manifest.display(),
                signature.display()
            ),
        }
    }
}

fn keys_text(ids: &[String]) -> String {
    match ids {
        [one] => format!("key {one}"),
        _ => format!("one of the keys {}", ids.join(", ")),
    }
}

/// The signature file `signature`, read and parsed (`expected`: the keys
/// that may sign; `sign`: the command that signs, for the error).
fn read_signature(
    signature: &Path,
    expected: &[String],
    sign: &str,
) -> Result<Signature, TrustProblem> {
    let text = match std::fs::read_to_string(signature) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(TrustProblem::Unsigned {
                signature: signature.to_path_buf(),
                expected: expected.to_vec(),
                sign: sign.to_string(),
            });
        }
        Err(e) => {
            return Err(TrustProblem::Unreadable {
                signature: signature.to_path_buf(),
                message: e.to_string(),
                sign: sign.to_string(),
            });
        }
    };
    Signature::parse(&text).map_err(|e| TrustProblem::Unreadable {
        signature: signature.to_path_buf(),
        message: e.to_string(),
        sign: sign.to_string(),
    })
}

/// Checks `subject`'s signature against `signers`; the signing key's id when
/// it holds.
pub(crate) fn check(signers: &[TrustedKey], subject: &Subject<'_>) -> Result<String, TrustProblem> {
    let signature = subject.signature.clone();
    let sign = subject.sign_command();
    let expected: Vec<String> = signers.iter().map(|k| k.id.clone()).collect();
    let read = read_signature(&signature, &expected, &sign)?;
    let Some(key) = signers.iter().find(|k| k.id == read.key_id) else {
        return Err(TrustProblem::UntrustedKey {
            signature,
            signed_by: read.key_id,
            expected,
            sign,
        });
    };
    read.verify(key).map_err(|e| TrustProblem::BadSignature {
        signature: signature.clone(),
        key: key.id.clone(),
        message: e.to_string(),
        sign: sign.clone(),
    })?;
    let other = |signed: String| TrustProblem::OtherSubject {
        signature: signature.clone(),
        signed,
        sign: sign.clone(),
    };
    let component_changed = |signed: &str, actual: &str| TrustProblem::ComponentChanged {
        component: subject.component.to_path_buf(),
        signature: signature.clone(),
        signed: signed.to_string(),
        actual: actual.to_string(),
        sign: sign.clone(),
    };
    match (&read.statement, &subject.expected) {
        (None, _) => Err(other(
            "no plugin or hook (its trusted comment is no statement of Glovebox's)".into(),
        )),
        (
            Some(Statement::Plugin {
                name: signed_name,
                component_sha256: signed_component,
                manifest_sha256: signed_manifest,
            }),
            Statement::Plugin {
                name,
                component_sha256,
                manifest_sha256,
            },
        ) => {
            if signed_name != name {
                return Err(other(format!("plugin `{signed_name}`")));
            }
            if signed_component != component_sha256 {
                return Err(component_changed(signed_component, component_sha256));
            }
            if signed_manifest != manifest_sha256 {
                return Err(TrustProblem::ManifestChanged {
                    manifest: subject.manifest.unwrap_or(subject.component).to_path_buf(),
                    signature,
                    signed: signed_manifest.clone(),
                    actual: manifest_sha256.clone(),
                    sign,
                });
            }
            Ok(key.id.clone())
        }
        (
            Some(Statement::Hook {
                component_sha256: signed_component,
            }),
            Statement::Hook { component_sha256 },
        ) => {
            if signed_component != component_sha256 {
                return Err(component_changed(signed_component, component_sha256));
            }
            Ok(key.id.clone())
        }
        (Some(Statement::Plugin { name, .. }), Statement::Hook { .. }) => {
            Err(other(format!("tool plugin `{name}`, not a hook")))
        }
        (Some(Statement::Hook { .. }), Statement::Plugin { .. }) => {
            Err(other("a hook's component, not a tool plugin".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::tests::trusted;
    use crate::signature::{KeyPair, keygen, sign};

    fn plugin(component: &str, manifest: &str) -> Statement {
        Statement::Plugin {
            name: "echo".into(),
            component_sha256: component.into(),
            manifest_sha256: manifest.into(),
        }
    }

    #[test]
    fn each_problem_is_told_apart_and_names_the_key_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let (alice, mallory) = (keygen().unwrap(), keygen().unwrap());
        let (component, manifest) = (dir.path().join("echo.wasm"), dir.path().join("echo.toml"));
        let subject = |expected: Statement| Subject {
            expected,
            signature: dir.path().join("echo.toml.sig"),
            component: &component,
            manifest: Some(&manifest),
        };
        let write = |statement: &Statement, pair: &KeyPair| {
            let (text, _) = sign(statement, &pair.secret_file, None).unwrap();
            std::fs::write(dir.path().join("echo.toml.sig"), text).unwrap();
        };
        let good = plugin("c1", "m1");
        let keys = [trusted(&alice)];

        let unsigned = check(&keys, &subject(good.clone())).unwrap_err();
        assert!(
            matches!(unsigned, TrustProblem::Unsigned { .. }),
            "{unsigned}"
        );
        let text = unsigned.to_string();
        assert!(text.contains(&format!("key {}", alice.key_id)), "{text}");
        assert!(
            text.contains(&format!(
                "`glovebox plugin sign {} --key SECRET_KEY_FILE`",
                manifest.display()
            )),
            "{text}"
        );

        write(&good, &alice);
        assert_eq!(check(&keys, &subject(good.clone())).unwrap(), alice.key_id);

        let changed = check(&keys, &subject(plugin("c2", "m1"))).unwrap_err();
        assert!(
            matches!(changed, TrustProblem::ComponentChanged { .. }),
            "{changed}"
        );
        let grants = check(&keys, &subject(plugin("c1", "m2"))).unwrap_err();
        assert!(
            matches!(grants, TrustProblem::ManifestChanged { .. }),
            "{grants}"
        );
        let renamed = Statement::Plugin {
            name: "other".into(),
            component_sha256: "c1".into(),
            manifest_sha256: "m1".into(),
        };
        let other = check(&keys, &subject(renamed)).unwrap_err();
        assert!(other.to_string().contains("signs plugin `echo`"), "{other}");
        let hook = check(
            &keys,
            &subject(Statement::Hook {
                component_sha256: "c1".into(),
            }),
        )
        .unwrap_err();
        assert!(matches!(hook, TrustProblem::OtherSubject { .. }), "{hook}");

        write(&good, &mallory);
        let untrusted = check(&keys, &subject(good.clone())).unwrap_err();
        let text = untrusted.to_string();
        assert!(
            text.contains(&format!("is by key {}", mallory.key_id))
                && text.contains(&format!("expects a signature by key {}", alice.key_id)),
            "{text}"
        );
        // Two keys trusted: either signs.
        let both = [trusted(&alice), trusted(&mallory)];
        assert_eq!(
            check(&both, &subject(good.clone())).unwrap(),
            mallory.key_id
        );

        std::fs::write(dir.path().join("echo.toml.sig"), "garbage").unwrap();
        let unreadable = check(&keys, &subject(good)).unwrap_err();
        assert!(
            matches!(unreadable, TrustProblem::Unreadable { .. }),
            "{unreadable}"
        );
    }
}
