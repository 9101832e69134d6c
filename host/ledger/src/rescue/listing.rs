//! Reading rescues through their indexes (`index.rs`): a page of every
//! rescue or of the open ones, the latest opened first, and the rescues of
//! the last days for a report. Each reads the keys it shows and their
//! records, a page at a time, never the whole bucket (threat 49).

use super::index::{BY_OPEN, OPEN};
use super::report::{RescueReport, Tally};
use super::{DAY_MS, Rescue, RescueError, Rescues};
use crate::newest::{page_of, stamp_of, valid_cursor};
use crate::page::{Page, PageRequest};
use crate::session::bounded;
use crate::storage::{PAGE, pages};

impl Rescues {
    /// A page of the rescues, the latest opened first.
    pub fn list(&self, page: &PageRequest) -> Result<Page<Rescue>, RescueError> {
        self.page_of(BY_OPEN, page)
    }

    /// A page of the unresolved rescues, the latest opened first.
    pub fn open_rescues(&self, page: &PageRequest) -> Result<Page<Rescue>, RescueError> {
        self.page_of(OPEN, page)
    }

    fn page_of(&self, bucket: &str, page: &PageRequest) -> Result<Page<Rescue>, RescueError> {
        self.ensure_indexed()?;
        if let Some(cursor) = &page.cursor
            && !valid_cursor(cursor)
        {
            return Err(RescueError::InvalidInput(format!(
                "the cursor `{}` is not one this listing handed out: pass the cursor its previous page printed, or none for the first page",
                bounded(cursor, 64)
            )));
        }
        page_of(&*self.storage, bucket, "", page, |key, _| {
            self.confirmed(bucket, key).map_err(RescueError::from)
        })
    }

    /// Calls `each` with every rescue opened at or after `since_ms`, the
    /// latest first: the walk stops at the first key older than that.
    pub fn each_since(
        &self,
        since_ms: u64,
        mut each: impl FnMut(&Rescue),
    ) -> Result<(), RescueError> {
        self.ensure_indexed()?;
        for entry in pages(&*self.storage, BY_OPEN, "", PAGE) {
            let (key, _) = entry?;
            let opened = key.split('/').next().and_then(stamp_of).unwrap_or(0);
            if opened < since_ms {
                break;
            }
            if let Some(rescue) = self.confirmed(BY_OPEN, &key)? {
                each(&rescue);
            }
        }
        Ok(())
    }

    /// The start of a report over the last `days` days.
    pub fn since(&self, days: u64) -> u64 {
        self.now().saturating_sub(days.saturating_mul(DAY_MS))
    }

    /// The report over the rescues opened in the last `days` days: reads
    /// those rescues, a page at a time, and no older one.
    pub fn report(&self, days: u64) -> Result<RescueReport, RescueError> {
        let since_ms = self.since(days);
        let mut tally = Tally::new(days, since_ms);
        self.each_since(since_ms, |r| tally.add(r))?;
        Ok(tally.finish())
    }
}
