//! Enums that are spelled as words on the command line, in configs and in the log.

/// `Display` and `FromStr` for a fieldless enum with `ALL` (every variant) and
/// `as_str` (its word): it prints as its word, and parses from it (`-` taken as
/// `_`). An unknown word is refused with an error naming `what` it should be and
/// listing the words: ``unknown role `x`: expected one of orchestrator, ...``.
macro_rules! named_enum {
    ($ty:ty, $what:literal) => {
        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, String> {
                let word = s.replace('-', "_");
                <$ty>::ALL
                    .into_iter()
                    .find(|v| v.as_str() == word)
                    .ok_or_else(|| {
                        format!(
                            "unknown {} `{s}`: expected one of {}",
                            $what,
                            <$ty>::ALL.map(|v| v.as_str()).join(", ")
                        )
                    })
            }
        }
    };
}

pub(crate) use named_enum;
