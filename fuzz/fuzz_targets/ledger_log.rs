//! Event decoding and log loading (`glovebox-ledger`): the records a store
//! or an export hands back, whatever they hold.
//!
//! Input: an exported log (`glovebox log export`, one event per line).
//! - Every line is decoded as an event; a decoded event re-encodes to a
//!   record that decodes to the same event.
//! - The lines are checked as an export (`verify_export`), without and with
//!   the head the last decoded event claims.
//! - The lines, as they are, are one session's stored log: the session store
//!   loads it (`Sessions::verify`, `Sessions::recover`), which must refuse
//!   a broken chain as tampering, never panic.
//! - The decoded events, re-chained with correct hashes, are a second
//!   session's log: loading it replays whatever kinds came, in whatever
//!   order, through the session state machine.
//! - The whole input is decoded as a checkpoint's session state.
#![no_main]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use glovebox_ledger::session::{
    Chain, ChainKey, Event, GENESIS_HASH, SessionState, Sessions, verify_export,
};
use glovebox_store::{Result, Storage, StorageError, Swap};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let lines: Vec<&[u8]> = data
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .collect();

    let mut decoded = Vec::new();
    for line in &lines {
        if let Ok(event) = Event::from_bytes(line) {
            let again = Event::from_bytes(&event.to_bytes()).expect("an encoded event decodes");
            assert_eq!(again, event, "an event survives encoding");
            decoded.push(event);
        }
    }

    let text: Vec<String> = lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    let _ = verify_export(text.clone(), None, None);
    // The keyed chain's checks too, under a fixed key.
    let key = Arc::new(ChainKey::new(vec![7; 32], "fuzz.key").expect("a 32-byte key"));
    let _ = verify_export(text.clone(), None, Some(&key));
    if let Some(last) = decoded.last() {
        let _ = verify_export(text, Some((last.seq, last.hash.clone())), None);
    }

    let storage = Arc::new(Memory::default());
    let raw = decoded
        .first()
        .map(|e| e.session.clone())
        .unwrap_or_else(|| "s-raw".to_string());
    let entries: Vec<Vec<u8>> = lines.iter().map(|l| l.to_vec()).collect();
    if !entries.is_empty() {
        storage.append(&raw, 0, &entries).expect("memory append");
    }
    let chained = "s-chained";
    if raw != chained && !decoded.is_empty() {
        let mut prev = GENESIS_HASH.to_string();
        let entries: Vec<Vec<u8>> = decoded
            .iter()
            .zip(1u64..)
            .map(|(event, seq)| {
                let mut e = event.clone();
                e.session = chained.to_string();
                e.seq = seq;
                e.prev_hash = prev.clone();
                e.hash = e.compute_hash(&Chain::Plain);
                prev = e.hash.clone();
                e.to_bytes()
            })
            .collect();
        storage.append(chained, 0, &entries).expect("memory append");
    }
    let sessions = Sessions::new(storage);
    let _ = sessions.verify(&raw);
    let _ = sessions.verify(chained);
    let _ = sessions.recover();

    let _ = serde_json::from_slice::<SessionState>(data);
});

/// A store in memory: streams and buckets, with the trait's contract (an
/// append must find the stream ending where the writer expects).
#[derive(Default)]
struct Memory {
    streams: Mutex<BTreeMap<String, Vec<Vec<u8>>>>,
    buckets: Mutex<BTreeMap<String, BTreeMap<String, Vec<u8>>>>,
}

impl Storage for Memory {
    fn append(&self, stream: &str, expected_last: u64, entries: &[Vec<u8>]) -> Result<u64> {
        let mut streams = self.streams.lock().unwrap();
        let log = streams.entry(stream.to_string()).or_default();
        let actual = log.len() as u64;
        if actual != expected_last {
            return Err(StorageError::Conflict {
                stream: stream.to_string(),
                expected: expected_last,
                actual,
            });
        }
        log.extend(entries.iter().cloned());
        Ok(log.len() as u64)
    }

    fn read(&self, stream: &str, from: u64, max: usize) -> Result<Vec<(u64, Vec<u8>)>> {
        let streams = self.streams.lock().unwrap();
        let Some(log) = streams.get(stream) else {
            return Ok(Vec::new());
        };
        Ok((from.max(1)..=log.len() as u64)
            .take(max)
            .map(|seq| (seq, log[(seq - 1) as usize].clone()))
            .collect())
    }

    fn last_seq(&self, stream: &str) -> Result<u64> {
        Ok(self
            .streams
            .lock()
            .unwrap()
            .get(stream)
            .map_or(0, |log| log.len() as u64))
    }

    fn streams(&self) -> Result<Vec<String>> {
        Ok(self.streams.lock().unwrap().keys().cloned().collect())
    }

    fn put(&self, bucket: &str, key: &str, value: &[u8]) -> Result<()> {
        self.buckets
            .lock()
            .unwrap()
            .entry(bucket.to_string())
            .or_default()
            .insert(key.to_string(), value.to_vec());
        Ok(())
    }

    fn put_if(&self, bucket: &str, key: &str, swap: Swap<'_>) -> Result<bool> {
        let (expected, value) = (swap.from, swap.to);
        let mut buckets = self.buckets.lock().unwrap();
        let current = buckets.get(bucket).and_then(|b| b.get(key));
        if current.map(Vec::as_slice) != expected {
            return Ok(false);
        }
        match value {
            Some(value) => {
                buckets
                    .entry(bucket.to_string())
                    .or_default()
                    .insert(key.to_string(), value.to_vec());
            }
            None => {
                if let Some(b) = buckets.get_mut(bucket) {
                    b.remove(key);
                }
            }
        }
        Ok(true)
    }

    fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self
            .buckets
            .lock()
            .unwrap()
            .get(bucket)
            .and_then(|b| b.get(key).cloned()))
    }

    fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        if let Some(b) = self.buckets.lock().unwrap().get_mut(bucket) {
            b.remove(key);
        }
        Ok(())
    }

    fn scan(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        Ok(self
            .buckets
            .lock()
            .unwrap()
            .get(bucket)
            .map(|b| {
                b.range(prefix.to_string()..)
                    .take_while(|(k, _)| k.starts_with(prefix))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default())
    }

    fn scan_page(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>> {
        let start = match after {
            Some(after) if after >= prefix => format!("{after}\0"),
            _ => prefix.to_string(),
        };
        Ok(self
            .buckets
            .lock()
            .unwrap()
            .get(bucket)
            .map(|b| {
                b.range(start..)
                    .take_while(|(k, _)| k.starts_with(prefix))
                    .take(limit)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default())
    }

    fn buckets(&self) -> Result<Vec<String>> {
        Ok(self.buckets.lock().unwrap().keys().cloned().collect())
    }
}
