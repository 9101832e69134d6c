//! How `memory_search` orders what it finds.
//!
//! Deliberately simple and explainable, so an operator can tell why an entry
//! came first: an entry must contain at least one word of the query (any
//! case); entries with more of the query's distinct words come first, then
//! those where they occur more often, then the most recently approved. No
//! model and no index: the bank is small (what operators approved), and a
//! scan is what the context index does too.

use super::records::MemoryEntry;

/// An entry found by a search, with why it ranks where it does.
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

/// `entries` that match `words`, best first, at most `limit`.
pub(crate) fn rank(entries: Vec<MemoryEntry>, words: &[String], limit: usize) -> Vec<Ranked> {
    let mut found: Vec<Ranked> = entries
        .into_iter()
        .filter_map(|entry| {
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
        })
        .collect();
    found.sort_by(|a, b| {
        b.matched_words
            .cmp(&a.matched_words)
            .then_with(|| b.hits.cmp(&a.hits))
            .then_with(|| b.entry.approved_at_ms().cmp(&a.entry.approved_at_ms()))
            .then_with(|| a.entry.id.cmp(&b.entry.id))
    });
    found.truncate(limit);
    found
}
