//! Walking a bucket a page at a time.
//!
//! Why: the buckets that grow with what agents do (jobs, approvals, session
//! indexes) can hold far more than a host should decode at once. A sweep or
//! a recovery that must visit every key goes through [`pages`], which holds
//! one page of [`Storage::scan_page`] at a time, so its memory stays bounded
//! however large the bucket is.

use crate::{Result, Storage};

/// The keys a page holds when a caller does not choose: large enough that a
/// walk of a big bucket is few reads, small enough that a page of the
/// largest records (a job's 1 MiB input) stays a few hundred MiB at worst.
pub const PAGE: usize = 256;

/// Every key of `bucket` that starts with `prefix`, in key order, with its
/// value, read `page` keys at a time (see [`Storage::scan_page`]). An error
/// ends the walk: it is the last item.
pub fn pages<'a>(
    storage: &'a dyn Storage,
    bucket: &'a str,
    prefix: &'a str,
    page: usize,
) -> Pages<'a> {
    Pages {
        storage,
        bucket,
        prefix,
        page: page.max(1),
        after: None,
        buffer: Vec::new().into_iter(),
        done: false,
    }
}

/// The walk [`pages`] makes.
pub struct Pages<'a> {
    storage: &'a dyn Storage,
    bucket: &'a str,
    prefix: &'a str,
    page: usize,
    after: Option<String>,
    buffer: std::vec::IntoIter<(String, Vec<u8>)>,
    done: bool,
}

impl Iterator for Pages<'_> {
    type Item = Result<(String, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.buffer.next() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            let page = match self.storage.scan_page(
                self.bucket,
                self.prefix,
                self.after.as_deref(),
                self.page,
            ) {
                Ok(page) => page,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            self.done = page.len() < self.page;
            match page.last() {
                Some((key, _)) => self.after = Some(key.clone()),
                None => return None,
            }
            self.buffer = page.into_iter();
        }
    }
}
