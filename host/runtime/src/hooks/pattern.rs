//! Action patterns: what a hook says it judges (`execute:database:*`).

/// Whether `pattern` covers `action`.
///
/// `*` covers every action; `a:b:*` covers `a:b` and everything below it (`a:b:c`,
/// `a:b:c:d`) but not `a:bc`; any other pattern covers exactly the action it
/// spells. A pattern that is not [valid](valid_pattern) covers nothing (a hook
/// with one is refused at load, so this never decides a real call).
pub fn pattern_matches(pattern: &str, action: &str) -> bool {
    if !valid_pattern(pattern) {
        return false;
    }
    if pattern == "*" {
        return true;
    }
    match pattern.strip_suffix(":*") {
        Some(prefix) => {
            action == prefix
                || action
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with(':'))
        }
        None => pattern == action,
    }
}

/// `*`, or colon-separated segments of `[a-z0-9_-]` of which the last may be `*`
/// (`execute:file:delete`, `execute:database:*`).
pub fn valid_pattern(pattern: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    let body = pattern.strip_suffix(":*").unwrap_or(pattern);
    !body.is_empty() && body.split(':').all(valid_segment)
}

fn valid_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_exactly_or_by_prefix_of_whole_segments() {
        // (pattern, action, matches)
        let table = [
            ("*", "execute:file:delete", true),
            ("*", "x", true),
            ("execute:file:delete", "execute:file:delete", true),
            ("execute:file:delete", "execute:file:deleted", false),
            ("execute:file:delete", "execute:file", false),
            ("execute:file:delete", "execute:file:delete:all", false),
            ("execute:database:*", "execute:database", true),
            ("execute:database:*", "execute:database:delete", true),
            (
                "execute:database:*",
                "execute:database:delete:cascade",
                true,
            ),
            ("execute:database:*", "execute:databases", false),
            ("execute:database:*", "execute:databases:drop", false),
            ("execute:database:*", "execute", false),
            ("execute:database:*", "read:database:rows", false),
            ("execute:*", "execute:file:read", true),
            ("execute:*", "executed:file", false),
            ("read_only-1:*", "read_only-1:x", true),
            // Invalid patterns match nothing, not even themselves.
            ("execute:*:delete", "execute:*:delete", false),
            ("execute:*:delete", "execute:file:delete", false),
            ("Execute:file", "Execute:file", false),
            ("", "", false),
            ("execute:", "execute:", false),
            ("execute*", "execute:file", false),
        ];
        for (pattern, action, expected) in table {
            assert_eq!(
                pattern_matches(pattern, action),
                expected,
                "pattern {pattern:?} on action {action:?}"
            );
        }
    }

    #[test]
    fn valid_patterns_are_colon_paths_with_an_optional_trailing_star() {
        for good in [
            "*",
            "execute",
            "execute:*",
            "execute:file:delete",
            "execute:database:*",
            "a_b-c:0",
        ] {
            assert!(valid_pattern(good), "{good:?}");
        }
        for bad in [
            "",
            ":",
            "::*",
            ":*",
            "*:*",
            "execute:",
            ":execute",
            "execute::delete",
            "execute:*:delete",
            "execute:file*",
            "execute:**",
            "Execute",
            "execute file",
            "exécute",
            "execute.file",
        ] {
            assert!(!valid_pattern(bad), "{bad:?}");
        }
    }
}
