//! How the trait's names become NATS names, and back.
//!
//! The trait allows any string as a stream name, a bucket name or a key
//! (empty ones, spaces, dots, non-ASCII); NATS allows few characters in
//! subjects, stream names and KV keys. Each name is escaped: the characters
//! NATS takes everywhere stay as they are (so a name in `nats stream ls` or
//! `nats kv ls` is still readable), every other byte becomes an escape with
//! its hex value. Escaping is strict and one-to-one, so decoding a name that
//! another program put there fails instead of aliasing one of ours.

use glovebox_store::StorageError;

/// Why a deployment prefix cannot name this deployment's streams and
/// buckets: each variant names the prefix and says what a good one is.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PrefixError {
    /// Empty, or longer than 32 characters.
    #[error("the prefix `{prefix}` must be 1 to 32 characters long")]
    Length { prefix: String },
    /// A character NATS names or the prefix's separation do not allow.
    #[error("the prefix `{prefix}` holds `{bad}`: use letters, digits and `-` only")]
    Character { prefix: String, bad: char },
}

/// Checks a deployment prefix: letters, digits and dashes. No underscore:
/// it separates the prefix from the rest of a stream name, so no prefix can
/// read as another prefix followed by part of a name.
pub fn check_prefix(prefix: &str) -> Result<(), PrefixError> {
    if prefix.is_empty() || prefix.len() > 32 {
        return Err(PrefixError::Length {
            prefix: prefix.to_string(),
        });
    }
    if let Some(bad) = prefix
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-'))
    {
        return Err(PrefixError::Character {
            prefix: prefix.to_string(),
            bad,
        });
    }
    Ok(())
}

fn escape(name: &str, keep: impl Fn(u8) -> bool, mark: u8) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    for &b in name.as_bytes() {
        if keep(b) {
            out.push(b as char);
        } else {
            out.push(mark as char);
            out.push_str(&format!("{b:02X}"));
        }
    }
    out
}

fn unescape(text: &str, keep: impl Fn(u8) -> bool, mark: u8) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == mark {
            let hex = text.get(i + 1..i + 3)?;
            if !hex
                .bytes()
                .all(|h| h.is_ascii_digit() || (b'A'..=b'F').contains(&h))
            {
                return None;
            }
            let byte = u8::from_str_radix(hex, 16).ok()?;
            // One spelling per name: a byte that may stand as itself is never escaped.
            if keep(byte) {
                return None;
            }
            out.push(byte);
            i += 3;
        } else if keep(b) {
            out.push(b);
            i += 1;
        } else {
            return None;
        }
    }
    String::from_utf8(out).ok()
}

/// Bytes kept as they are in a subject token or a KV key.
fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'/'
}

/// A stream name or a key as one subject token (and a valid KV key): `k`
/// and the escaped name (`=XX` for other bytes), so the empty name has a
/// token too.
pub fn to_token(name: &str) -> String {
    format!("k{}", escape(name, token_byte, b'='))
}

pub fn from_token(token: &str) -> Option<String> {
    unescape(token.strip_prefix('k')?, token_byte, b'=')
}

/// A subject token as part of a consumer name (which takes no `.`, `*`,
/// `>`, path separators or `=`): `_XX` for the other bytes.
pub fn consumer_token(token: &str) -> String {
    escape(token, bucket_byte, b'_')
}

/// Bytes kept as they are in a bucket name (KV names take letters, digits, `-` and `_`).
fn bucket_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// The KV bucket that holds the trait's bucket `bucket`: `<prefix>_<escaped>`
/// (`_XX` for other bytes). Its stream is `KV_<that>`.
pub fn kv_bucket(prefix: &str, bucket: &str) -> String {
    format!("{prefix}_b{}", escape(bucket, bucket_byte, b'_'))
}

/// The trait's bucket held by KV stream `stream_name`, if it is one of this prefix's.
pub fn bucket_of_kv_stream(prefix: &str, stream_name: &str) -> Option<String> {
    let rest = stream_name.strip_prefix("KV_")?.strip_prefix(prefix)?;
    unescape(rest.strip_prefix("_b")?, bucket_byte, b'_')
}

/// Refuses stream names with NUL, as the embedded backends do (their keys
/// end a stream name with NUL), so a name works on every backend or none.
pub fn check_stream_name(name: &str) -> Result<(), StorageError> {
    if name.contains('\0') {
        return Err(StorageError::Io(format!(
            "stream name {name:?} contains NUL: stream names cannot"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_foreign_spellings_are_refused() {
        for name in [
            "",
            "a",
            "session/é ☃",
            "a.b*>c",
            "=41",
            "_",
            "a\0z",
            "\u{10FFFF}",
        ] {
            let token = to_token(name);
            assert!(token.bytes().all(|b| token_byte(b) || b == b'='), "{token}");
            assert_eq!(from_token(&token).as_deref(), Some(name));
            let bucket = kv_bucket("gb", name);
            assert!(
                bucket.bytes().all(|b| bucket_byte(b) || b == b'_'),
                "{bucket}"
            );
            assert_eq!(
                bucket_of_kv_stream("gb", &format!("KV_{bucket}")).as_deref(),
                Some(name)
            );
        }
        assert_eq!(to_token("a b"), "ka=20b");
        // An escaped byte that may stand for itself, lowercase hex, a cut escape.
        for bad in ["ka=62", "k=2e", "k=2", "x", "k.", "k=FF"] {
            assert_eq!(from_token(bad), None, "{bad}");
        }
        // Another prefix's bucket, or a bucket glovebox did not make.
        assert_eq!(bucket_of_kv_stream("gb", "KV_gb2_bx"), None);
        assert_eq!(bucket_of_kv_stream("gb", "KV_gb_x"), None);
        assert_eq!(bucket_of_kv_stream("gb", "gb_log"), None);
        assert!(check_prefix("glovebox-prod").is_ok());
        assert!(check_prefix("a_b").is_err());
        assert!(check_prefix("").is_err());
        assert!(check_prefix("a.b").is_err());
    }
}
