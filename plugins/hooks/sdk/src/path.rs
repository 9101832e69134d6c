//! Paths as hooks compare them: a hook cannot look at the filesystem, so it judges
//! the text of a path, and must not be dodged by how that text is spelt.

use alloc::string::String;
use alloc::vec::Vec;

/// The names of `raw`, lexically normalized: `/` and `\\` both separate, empty names and
/// `.` are dropped, `..` removes the name before it (never above the root), and ASCII
/// case is folded, because the host's filesystem may ignore it (macOS, Windows).
/// `/data/x/../Tests/a.rs` is `["data", "tests", "a.rs"]`.
pub fn names(raw: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in raw.split(['/', '\\']) {
        match name {
            "" | "." => {}
            ".." => {
                names.pop();
            }
            n => names.push(n.to_ascii_lowercase()),
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_separators_and_case_are_normalized() {
        assert_eq!(names("./tests/../tests/a.rs"), ["tests", "a.rs"]);
        assert_eq!(names("/data//x/./y\\Z.rs"), ["data", "x", "y", "z.rs"]);
        assert_eq!(names("/../../tests/a"), ["tests", "a"]);
    }
}
