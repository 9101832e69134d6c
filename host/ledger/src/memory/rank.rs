//! How `memory_search` orders what it finds.
//!
//! Deliberately simple and explainable, so an operator can tell why an entry
//! came first: an entry must contain at least one word of the query (any
//! case); entries with more of the query's distinct words come first, then
//! those where they occur more often, then the most recently approved. No
//! model: the entries looked at are the approved ones of the caller's
//! scopes (found through the index), a page of the index at a time, and
//! only the best ones after the cursor are kept while walking ([`Best`]),
//! so a search holds one page of results whatever the bank holds.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use super::records::MemoryEntry;

/// An entry found by a search, with why it ranks where it does.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Ranked {
    #[serde(flatten)]
    pub entry: MemoryEntry,
    /// Distinct query words it contains.
    pub matched_words: usize,
    /// How often they occur in it, together.
    pub hits: usize,
}

/// The query's distinct words, lowercased (split on anything that is not a
/// letter or digit).
pub(crate) fn words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.sort();
    words.dedup();
    words
}

/// `entry` ranked against `words`, if it contains one of them.
pub(crate) fn score(entry: MemoryEntry, words: &[String]) -> Option<Ranked> {
    let text = entry.text.to_lowercase();
    let counts: Vec<usize> = words
        .iter()
        .map(|w| text.matches(w.as_str()).count())
        .collect();
    let matched_words = counts.iter().filter(|n| **n > 0).count();
    (matched_words > 0).then(|| Ranked {
        entry,
        matched_words,
        hits: counts.iter().sum(),
    })
}

/// Where a found entry stands in a ranking: smaller is better. What a
/// search's cursor holds.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Place {
    matched_words: Reverse<usize>,
    hits: Reverse<usize>,
    approved_at_ms: Reverse<u64>,
    id: String,
}

impl Place {
    pub(crate) fn of(r: &Ranked) -> Place {
        Place {
            matched_words: Reverse(r.matched_words),
            hits: Reverse(r.hits),
            approved_at_ms: Reverse(r.entry.approved_at_ms()),
            id: r.entry.id.clone(),
        }
    }

    /// The cursor of a search for `words` that ended here.
    pub(crate) fn cursor(&self, words: &[String]) -> String {
        format!(
            "{}.{}.{}.{}.{}",
            fingerprint(words),
            self.matched_words.0,
            self.hits.0,
            self.approved_at_ms.0,
            self.id
        )
    }

    /// The place `cursor` holds, if it is a cursor of a search for `words`.
    pub(crate) fn from_cursor(cursor: &str, words: &[String]) -> Option<Place> {
        let mut parts = cursor.splitn(5, '.');
        if parts.next()? != fingerprint(words) {
            return None;
        }
        Some(Place {
            matched_words: Reverse(parts.next()?.parse().ok()?),
            hits: Reverse(parts.next()?.parse().ok()?),
            approved_at_ms: Reverse(parts.next()?.parse().ok()?),
            id: parts.next()?.to_string(),
        })
    }
}

/// A short digest of the query's words: a cursor is good for its own query only.
fn fingerprint(words: &[String]) -> String {
    crate::session::digest(words.join(" ").as_bytes())[..12].to_string()
}

/// The best `limit` found entries after a place, kept while walking: at
/// most `limit + 1` at a time (the one past the page says there is more).
pub(crate) struct Best {
    limit: usize,
    after: Option<Place>,
    kept: BTreeMap<Place, Ranked>,
}

impl Best {
    pub(crate) fn new(limit: usize, after: Option<Place>) -> Best {
        Best {
            limit,
            after,
            kept: BTreeMap::new(),
        }
    }

    pub(crate) fn offer(&mut self, found: Ranked) {
        let place = Place::of(&found);
        if self.after.as_ref().is_some_and(|after| place <= *after) {
            return;
        }
        self.kept.insert(place, found);
        if self.kept.len() > self.limit + 1 {
            self.kept.pop_last();
        }
    }

    /// The page, best first, and the place it ended at when there is more.
    pub(crate) fn page(mut self) -> (Vec<Ranked>, Option<Place>) {
        let more = self.kept.len() > self.limit;
        if more {
            self.kept.pop_last();
        }
        let last = more
            .then(|| self.kept.keys().next_back().cloned())
            .flatten();
        (self.kept.into_values().collect(), last)
    }
}
