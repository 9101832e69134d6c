//! Webhook deliveries already taken (threat 57): a signed request sent
//! again while its signature is still good is refused, also after a
//! restart and on another host sharing the store.
//!
//! A signature is good for [`WEBHOOK_SKEW`] either side of the time it
//! signs, so the same request replayed within that window would fire its
//! trigger again. Each accepted signature is remembered in the store
//! (bucket `webhook_seen`) until its window has passed, under a key made of
//! when it expires, the trigger and the signature's MAC: the remembering is
//! a compare-and-set of an absent key, so of two copies sent at once
//! exactly one is taken, and a key's expiry in front keeps the bucket in
//! expiry order, so each delivery taken first removes a page of expired
//! ones. At most [`SEEN_MAX`] are remembered at once (the webhooks of every
//! trigger within one window); past it a delivery is refused as busy, not
//! taken unremembered.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use glovebox_store::{Storage, StorageError, Swap};

/// How far a webhook's signed timestamp may be from now (and so how long
/// a delivery is remembered).
pub const WEBHOOK_SKEW: Duration = Duration::from_secs(300);

/// The bucket of the deliveries taken.
pub const BUCKET: &str = "webhook_seen";
/// The most deliveries remembered at once.
pub const SEEN_MAX: u64 = 100_000;
/// Expired entries removed with each delivery taken, at most.
const PRUNE_PAGE: usize = 64;

/// Why a delivery is not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The same signed request was taken already; it expires at this time
    /// (unix seconds).
    Replayed { until_s: u64 },
    /// [`SEEN_MAX`] deliveries are remembered already.
    Full,
    /// The store did not answer: nothing is taken unremembered.
    Store(String),
}

/// The deliveries taken, in one store.
pub struct Seen {
    storage: Arc<dyn Storage>,
    /// How many are remembered, once counted (`u64::MAX`: not yet).
    live: AtomicU64,
}

impl Seen {
    pub fn new(storage: Arc<dyn Storage>) -> Seen {
        Seen {
            storage,
            live: AtomicU64::new(u64::MAX),
        }
    }

    /// Takes the delivery signed `mac` at `signed_s` for `trigger`, at
    /// `now_s`: remembered until its window passes, or refused.
    pub fn take(
        &self,
        trigger: &str,
        signed_s: u64,
        mac: &[u8],
        now_s: u64,
    ) -> Result<(), Refused> {
        let store = |e: StorageError| Refused::Store(e.to_string());
        self.prune(now_s).map_err(store)?;
        if self.live().map_err(store)? >= SEEN_MAX {
            return Err(Refused::Full);
        }
        let until_s = signed_s.saturating_add(WEBHOOK_SKEW.as_secs());
        let key = format!("{until_s:020}/{trigger}/{}", hex::encode(mac));
        let taken = self
            .storage
            .put_if(BUCKET, &key, Swap::new(None, Some(b"")))
            .map_err(store)?;
        if !taken {
            return Err(Refused::Replayed { until_s });
        }
        self.live.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// How many deliveries are remembered: counted from the store once.
    fn live(&self) -> Result<u64, StorageError> {
        let known = self.live.load(Ordering::SeqCst);
        if known != u64::MAX {
            return Ok(known);
        }
        let mut count = 0;
        for entry in glovebox_store::pages(self.storage.as_ref(), BUCKET, "", 1024) {
            entry?;
            count += 1;
        }
        self.live.store(count, Ordering::SeqCst);
        Ok(count)
    }

    /// Removes up to a page of entries whose window has passed.
    fn prune(&self, now_s: u64) -> Result<(), StorageError> {
        let page = self.storage.scan_page(BUCKET, "", None, PRUNE_PAGE)?;
        for (key, _) in page {
            let expired = key
                .split('/')
                .next()
                .and_then(|until| until.parse::<u64>().ok())
                .is_none_or(|until| until < now_s);
            if !expired {
                break;
            }
            self.storage.delete(BUCKET, &key)?;
            let _ = self
                .live
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    (n != u64::MAX).then(|| n.saturating_sub(1))
                });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_is_taken_once_within_its_window_and_forgotten_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let store =
            glovebox_store::SqliteStore::open(dir.path(), glovebox_store::Durability::Flush)
                .unwrap();
        let seen = Seen::new(Arc::new(store));
        assert_eq!(seen.take("deploy", 1000, b"mac-1", 1000), Ok(()));
        assert_eq!(
            seen.take("deploy", 1000, b"mac-1", 1200),
            Err(Refused::Replayed { until_s: 1300 })
        );
        // Another trigger, another signature: their own deliveries.
        assert_eq!(seen.take("other", 1000, b"mac-1", 1200), Ok(()));
        assert_eq!(seen.take("deploy", 1001, b"mac-2", 1200), Ok(()));
        // Past the window the entries go (the signature is stale by then).
        assert_eq!(seen.take("deploy", 1400, b"mac-3", 1400), Ok(()));
        assert_eq!(seen.live().unwrap(), 1);
    }
}
