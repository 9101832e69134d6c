//! The layout of streams on disk, for tests that damage a closed data dir
//! behind the store's back.

/// The sled tree, in `<data dir>/sled`, holding every stream's records.
pub const STREAMS_TREE: &str = super::STREAMS_TREE;

/// The key of the record of `stream` whose first entry has sequence `seq`.
pub fn record_key(stream: &str, seq: u64) -> Vec<u8> {
    let prefix = super::records::stream_prefix(stream).expect("a stream name without NUL");
    super::records::entry_key(&prefix, seq)
}

/// A record holding `entries`.
pub fn encode_record(entries: &[Vec<u8>]) -> Vec<u8> {
    crate::batch::encode(entries).expect("a record under 4 GiB")
}

/// The entries of a record.
pub fn decode_record(bytes: &[u8]) -> Result<Vec<Vec<u8>>, crate::batch::RecordError> {
    Ok(crate::batch::decode(bytes)?
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect())
}
