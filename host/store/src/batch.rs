//! The entries of one append as one record, for backends that store an
//! append as a single value so it is recovered whole or not at all: sled (one
//! key, `<stream> 0x00 <first seq>`) and NATS (one JetStream message).
//! Format: entry count (u32 BE), then per entry its length (u32 BE) and bytes.

use crate::StorageError;

/// Encodes the entries of one append.
pub fn encode(entries: &[Vec<u8>]) -> Result<Vec<u8>, StorageError> {
    let too_big = || {
        StorageError::Io("an append is too large: keep it under 4 GiB and 2^32 entries".to_string())
    };
    let total = entries.iter().map(|e| 4 + e.len()).sum::<usize>() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(
        &u32::try_from(entries.len())
            .map_err(|_| too_big())?
            .to_be_bytes(),
    );
    for entry in entries {
        out.extend_from_slice(
            &u32::try_from(entry.len())
                .map_err(|_| too_big())?
                .to_be_bytes(),
        );
        out.extend_from_slice(entry);
    }
    Ok(out)
}

/// What is wrong with a record that does not decode. It names no stream or
/// sequence: the caller knows which record it read (see
/// `StorageError::Damaged`, whose reason this becomes).
#[derive(thiserror::Error, Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordError {
    /// The record ends inside its entry count or an entry's length.
    #[error("it ends inside a length")]
    EndsInsideLength,
    /// The record's entry count is zero (an append has at least one).
    #[error("it holds no entry")]
    NoEntry,
    /// An entry's length reaches past the record's end.
    #[error("an entry is cut short")]
    EntryCutShort,
    /// Bytes follow the last entry the count announces.
    #[error("bytes follow its last entry")]
    TrailingBytes,
    /// The record's entries would end past the largest sequence (its
    /// first sequence is in its key, not in the record).
    #[error("it holds {count} entries, past the largest sequence")]
    PastLastSequence { count: u64 },
}

fn read_u32(bytes: &[u8], at: usize) -> Result<u32, RecordError> {
    bytes
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
        .ok_or(RecordError::EndsInsideLength)
}

/// The number of entries in a record, read from its header alone.
pub fn count(bytes: &[u8]) -> Result<u64, RecordError> {
    let n = read_u32(bytes, 0)?;
    if n == 0 {
        return Err(RecordError::NoEntry);
    }
    Ok(u64::from(n))
}

/// The entries of a record, in order.
pub fn decode(bytes: &[u8]) -> Result<Vec<&[u8]>, RecordError> {
    let n = count(bytes)?;
    let mut at = 4;
    let mut out = Vec::new();
    for _ in 0..n {
        let len = read_u32(bytes, at)? as usize;
        at += 4;
        let entry = bytes.get(at..at + len).ok_or(RecordError::EntryCutShort)?;
        out.push(entry);
        at += len;
    }
    if at != bytes.len() {
        return Err(RecordError::TrailingBytes);
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
        assert_eq!(count(&bytes).unwrap(), 3);
        let back: Vec<Vec<u8>> = decode(&bytes)
            .unwrap()
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect();
        assert_eq!(back, entries);
        assert_eq!(
            decode(&bytes[..bytes.len() - 1]),
            Err(RecordError::EntryCutShort)
        );
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), Err(RecordError::TrailingBytes));
        assert_eq!(count(&[0, 0, 0, 0]), Err(RecordError::NoEntry));
        assert_eq!(count(&[0, 0]), Err(RecordError::EndsInsideLength));
    }
}
