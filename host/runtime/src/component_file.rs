//! Reading a component file to load it, for tools and hooks alike: its size
//! checked before it is read (a huge file costs nothing), its SHA-256 taken
//! and held to the operator's pin, and its header checked to be a component
//! (not a core module, not something else). What differs between a tool and a
//! hook (their world, their policy, how a failure is worded for the operator)
//! comes after, in `plugin.rs` and `hooks/load.rs`.

use std::path::Path;

use sha2::{Digest, Sha256};

/// A component file, read and checked.
pub(crate) struct ComponentFile {
    pub bytes: Vec<u8>,
    /// SHA-256 of the file, lowercase hex.
    pub digest: String,
}

/// Why a component file cannot be loaded.
#[derive(Debug)]
pub(crate) enum FileProblem {
    Read(std::io::Error),
    NotAFile,
    TooLarge {
        size: u64,
        limit: u64,
    },
    DigestMismatch {
        expected: String,
        actual: String,
    },
    /// No `\0asm` header.
    NotWasm,
    /// A core module (layer 0), not a component.
    CoreModule,
}

/// Reads `path` if it holds at most `limit` bytes, matches `pin` (a SHA-256
/// in hex) when one is given, and is a component.
pub(crate) fn read(
    path: &Path,
    limit: u64,
    pin: Option<&str>,
) -> Result<ComponentFile, FileProblem> {
    let meta = std::fs::metadata(path).map_err(FileProblem::Read)?;
    if !meta.is_file() {
        return Err(FileProblem::NotAFile);
    }
    if meta.len() > limit {
        return Err(FileProblem::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    let bytes = std::fs::read(path).map_err(FileProblem::Read)?;
    let digest = hex::encode(Sha256::digest(&bytes));
    if let Some(expected) = pin
        && expected != digest
    {
        return Err(FileProblem::DigestMismatch {
            expected: expected.to_string(),
            actual: digest,
        });
    }
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(FileProblem::NotWasm);
    }
    // Version 1, layer 0 is a core module; components use layer 1.
    if bytes[4..8] == [1, 0, 0, 0] {
        return Err(FileProblem::CoreModule);
    }
    Ok(ComponentFile { bytes, digest })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_problem_is_found_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        assert!(matches!(
            read(&dir.path().join("absent.wasm"), 100, None),
            Err(FileProblem::Read(_))
        ));
        assert!(matches!(
            read(dir.path(), 100, None),
            Err(FileProblem::NotAFile)
        ));
        let big = file("big.wasm", &[0; 101]);
        assert!(matches!(
            read(&big, 100, None),
            Err(FileProblem::TooLarge {
                size: 101,
                limit: 100
            })
        ));
        let text = file("text.wasm", b"not wasm at all");
        assert!(matches!(read(&text, 100, None), Err(FileProblem::NotWasm)));
        let core = file("core.wasm", b"\0asm\x01\0\0\0");
        assert!(matches!(
            read(&core, 100, None),
            Err(FileProblem::CoreModule)
        ));
        let component = file("c.wasm", b"\0asm\x0d\0\x01\0");
        let read_ok = read(&component, 100, None).ok().unwrap();
        assert_eq!(read_ok.digest.len(), 64);
        // The pin is checked before anything else is believed of the bytes.
        assert!(matches!(
            read(&text, 100, Some(&"0".repeat(64))),
            Err(FileProblem::DigestMismatch { .. })
        ));
        assert!(read(&component, 100, Some(&read_ok.digest)).is_ok());
    }
}
