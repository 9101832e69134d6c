//! Tool-name patterns, as operators write them in hook settings: `*` (every tool), a
//! prefix followed by `*` (`files.*`), or an exact name (`files.read`).
//!
//! Tool names are `plugin.tool`, in lowercase letters, digits, `-`, `_` and `.`; a
//! pattern uses the same characters plus one `*`, at the end only.

use alloc::format;
use alloc::string::String;

/// Whether `pattern` matches `name`. `pattern` is assumed valid (see [`check`]).
pub fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// Checks a pattern; the error says what is wrong with it.
pub fn check(pattern: &str) -> Result<(), String> {
    if pattern.is_empty() {
        return Err(String::from("a pattern cannot be empty"));
    }
    let body = pattern.strip_suffix('*').unwrap_or(pattern);
    for c in body.chars() {
        match c {
            'a'..='z' | '0'..='9' | '-' | '_' | '.' => {}
            '*' => {
                return Err(format!(
                    "pattern `{pattern}` has `*` before its end; only a trailing `*` is supported"
                ));
            }
            'A'..='Z' => {
                return Err(format!(
                    "pattern `{pattern}` has an uppercase letter; tool names are lowercase"
                ));
            }
            other => {
                return Err(format!(
                    "pattern `{pattern}` has {other:?}; tool names use lowercase letters, digits, `-`, `_` and `.`"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_and_exact_names() {
        assert!(matches("*", "files.write"));
        assert!(matches("files.*", "files.write"));
        assert!(!matches("files.*", "filesx.write"));
        assert!(!matches("files.*", "files"));
        assert!(matches("files.read", "files.read"));
        assert!(!matches("files.read", "files.reader"));
        assert!(matches("files.re*", "files.reader"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        for ok in ["*", "files.*", "files.read", "text-2_x.y*"] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
        for bad in ["", "*.read", "fi*les", "Files.read", "files read", "**"] {
            assert!(check(bad).is_err(), "{bad}");
        }
    }
}
