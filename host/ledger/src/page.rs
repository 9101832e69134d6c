//! Pages of a listing: what every listing the ledger answers (jobs, sessions,
//! approvals, children, memory entries) takes and gives, on every surface.
//!
//! Why: a listing that answers everything at once holds as much as agents
//! have made, and an agent can make a lot (threat 49). A listing answers at
//! most [`MAX_PAGE`] items, and a cursor to ask for the rest; the store is
//! read a page at a time behind it (`glovebox_store::Storage::scan_page`), so
//! neither the answer nor the work behind it grows with the bucket.
//!
//! The cursor is opaque to callers: a listing's own position (an index key),
//! handed back as it came. A cursor that does not fit the listing is a bad
//! request naming it, never a silent restart from the top.

use serde::{Deserialize, Serialize};

/// Items a page holds when the caller does not say.
pub const DEFAULT_PAGE: usize = 100;
/// The most items one page holds, whatever the caller asks.
pub const MAX_PAGE: usize = 500;

/// Which page a caller asks for.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRequest {
    /// Items wanted: [`DEFAULT_PAGE`] when `None`, at most [`MAX_PAGE`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Where the previous page ended (its [`Page::next_cursor`]); `None`
    /// for the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

impl PageRequest {
    /// The first page of `limit` items.
    pub fn first(limit: usize) -> PageRequest {
        PageRequest {
            limit: Some(limit),
            cursor: None,
        }
    }

    /// The items this page holds: the limit asked for, within 1 to [`MAX_PAGE`].
    pub fn size(&self) -> usize {
        self.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE)
    }
}

/// One page of a listing, and where the next one starts.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schemars", schemars(rename = "PageOf{T}"))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// The cursor of the next page; `None` when this page is the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// A last page.
    pub fn last(items: Vec<T>) -> Page<T> {
        Page {
            items,
            next_cursor: None,
        }
    }

    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_never_empty_of_size_nor_past_the_maximum() {
        assert_eq!(PageRequest::default().size(), DEFAULT_PAGE);
        assert_eq!(PageRequest::first(0).size(), 1);
        assert_eq!(PageRequest::first(10_000).size(), MAX_PAGE);
        assert_eq!(PageRequest::first(7).size(), 7);
    }
}
