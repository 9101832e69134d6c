//! The payload of one log message: the entries of one append.
//!
//! An append is one JetStream message, so JetStream stores it whole or not
//! at all, and the expected-sequence check covers all of it. The message's
//! `Glovebox-First` header holds the sequence of its first entry; the
//! payload is the entry count (u32 BE), then per entry its length (u32 BE)
//! and bytes (the sled backend's record format).

use bytes::{BufMut, Bytes, BytesMut};
use glovebox_store::StorageError;

/// The header naming the trait sequence of a message's first entry.
pub const FIRST: &str = "Glovebox-First";

pub fn encode(entries: &[Vec<u8>]) -> Result<Bytes, StorageError> {
    let too_big = || {
        StorageError::Io("an append is too large: keep it under 4 GiB and 2^32 entries".to_string())
    };
    let total = entries.iter().map(|e| 4 + e.len()).sum::<usize>() + 4;
    let mut out = BytesMut::with_capacity(total);
    out.put_u32(u32::try_from(entries.len()).map_err(|_| too_big())?);
    for entry in entries {
        out.put_u32(u32::try_from(entry.len()).map_err(|_| too_big())?);
        out.put_slice(entry);
    }
    Ok(out.freeze())
}

fn read_u32(bytes: &[u8], at: usize) -> Result<u32, String> {
    bytes
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
        .ok_or_else(|| "it ends inside a length".to_string())
}

/// The entries of a payload, in order; what is wrong with it otherwise.
pub fn decode(bytes: &[u8]) -> Result<Vec<&[u8]>, String> {
    let n = read_u32(bytes, 0)?;
    if n == 0 {
        return Err("it holds no entry".to_string());
    }
    let mut at = 4;
    let mut out = Vec::new();
    for _ in 0..n {
        let len = read_u32(bytes, at)? as usize;
        at += 4;
        let entry = bytes
            .get(at..at + len)
            .ok_or_else(|| "an entry is cut short".to_string())?;
        out.push(entry);
        at += len;
    }
    if at != bytes.len() {
        return Err("bytes follow its last entry".to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_damage() {
        let entries = vec![b"one".to_vec(), Vec::new(), vec![7; 300]];
        let bytes = encode(&entries).unwrap();
        let decoded: Vec<Vec<u8>> = decode(&bytes)
            .unwrap()
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect();
        assert_eq!(decoded, entries);
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(decode(&[0, 0, 0, 0]).is_err());
        assert!(decode(&[0, 0]).is_err());
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(decode(&longer).is_err());
    }
}
