//! Enums that are spelled as words on the command line, in configs and in the log.
//!
//! The macro lives in the bottom crate because the value types here ([`Role`],
//! [`Cap`]) use it, and every crate above can reach it from here:
//! `glovebox_manifest::named_enum!` (so the ledger's enums write it). It is
//! `#[macro_export]`ed, so it sits at this crate's root; besides `::std`
//! paths and the type's own `ALL` and `as_str` it names only
//! [`UnknownWord`], through `$crate`, so it expands the same in any crate.
//!
//! [`Role`]: crate::Role
//! [`Cap`]: crate::Cap

/// A word that is none of an enum's words (the `FromStr` error of every
/// [`named_enum!`] type): it names what the word should be and lists the
/// words there are.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[error("unknown {what} `{word}`: expected one of {}", .expected.join(", "))]
pub struct UnknownWord {
    /// What the word names, e.g. `role`.
    pub what: &'static str,
    /// The word as given.
    pub word: String,
    /// Every word of the type, in order.
    pub expected: Vec<&'static str>,
}

/// `Display` and `FromStr` for a fieldless enum with `ALL` (every variant) and
/// `as_str` (its word): it prints as its word, and parses from it (`-` taken as
/// `_`). An unknown word is refused with an error naming `what` it should be and
/// listing the words: ``unknown role `x`: expected one of orchestrator, ...``.
#[macro_export]
macro_rules! named_enum {
    ($ty:ty, $what:literal) => {
        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = $crate::UnknownWord;

            fn from_str(s: &str) -> Result<Self, $crate::UnknownWord> {
                let word = s.replace('-', "_");
                <$ty>::ALL
                    .into_iter()
                    .find(|v| v.as_str() == word)
                    .ok_or_else(|| $crate::UnknownWord {
                        what: $what,
                        word: s.to_string(),
                        expected: <$ty>::ALL.map(|v| v.as_str()).to_vec(),
                    })
            }
        }
    };
}
