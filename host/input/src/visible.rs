//! Text as a person must see it before approving what it names: every
//! character that is invisible, or that changes how the text around it is
//! displayed, is written as a mark (`<U+202E>`) instead.
//!
//! A right-to-left override (U+202E) before `txt.exe` in `invoice` +
//! U+202E + `txt.exe` makes it read as `invoiceexe.txt`; a zero-width
//! space (U+200B) makes `/data/a` + U+200B + `b` look like `/data/ab`; a carriage return or an escape sequence rewrites a terminal
//! line. An approval shown raw can thus show one call while another runs.
//! Every surface that shows an approval (the dashboard, the CLI, MCP
//! elicitation) goes through [`visible`], and prints the [`Legend`] of the
//! marks it made, so the operator knows what each one stands for.
//!
//! A literal `<` followed by `U+` is itself marked (`<U+003C>U+`), so every
//! `<U+` in the shown text is a mark and no text can pass for one.

use std::collections::BTreeSet;

/// The legend's first line: what a mark means.
pub const LEGEND_TITLE: &str = "<U+XXXX> marks a character that is invisible or changes how the text around it is displayed; the tool gets the character itself";

/// The name of a character [`visible`] marks, or `None` if it is shown as
/// it is. Line feeds are kept (multi-line text stays readable); every other
/// control character is marked.
pub fn mark_name(c: char) -> Option<&'static str> {
    Some(match c {
        '\n' => return None,
        '\u{202a}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202b}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202c}' => "POP DIRECTIONAL FORMATTING",
        '\u{202d}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202e}' => "RIGHT-TO-LEFT OVERRIDE (shows the text after it reversed)",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{200e}' => "LEFT-TO-RIGHT MARK",
        '\u{200f}' => "RIGHT-TO-LEFT MARK",
        '\u{061c}' => "ARABIC LETTER MARK",
        '\u{200b}' => "ZERO WIDTH SPACE",
        '\u{200c}' => "ZERO WIDTH NON-JOINER",
        '\u{200d}' => "ZERO WIDTH JOINER",
        '\u{2060}' => "WORD JOINER (zero width)",
        '\u{feff}' => "ZERO WIDTH NO-BREAK SPACE (byte order mark)",
        '\u{00ad}' => "SOFT HYPHEN (invisible)",
        '\u{034f}' => "COMBINING GRAPHEME JOINER (invisible)",
        '\u{115f}' | '\u{1160}' | '\u{3164}' | '\u{ffa0}' => "HANGUL FILLER (blank)",
        '\u{180e}' => "MONGOLIAN VOWEL SEPARATOR (invisible)",
        '\u{2061}'..='\u{2064}' => "INVISIBLE MATHEMATICAL OPERATOR",
        '\u{206a}'..='\u{206f}' => "DEPRECATED FORMAT CHARACTER (invisible)",
        '\u{2028}' => "LINE SEPARATOR",
        '\u{2029}' => "PARAGRAPH SEPARATOR",
        '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}' => "VARIATION SELECTOR (invisible)",
        '\u{fff9}'..='\u{fffb}' => "INTERLINEAR ANNOTATION CHARACTER",
        '\u{e0000}'..='\u{e007f}' => "TAG CHARACTER (invisible; can hide text)",
        '\t' => "TAB",
        '\r' => "CARRIAGE RETURN (can overwrite a terminal line)",
        '\u{1b}' => "ESCAPE (starts a terminal control sequence)",
        '\0' => "NUL",
        '\u{7f}' => "DELETE",
        '\u{85}' => "NEXT LINE",
        c if c.is_control() => "CONTROL CHARACTER",
        _ => return None,
    })
}

/// The marks a shown text made: which characters they stand for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Legend {
    marked: BTreeSet<char>,
}

impl Legend {
    /// Whether no character was marked.
    pub fn is_empty(&self) -> bool {
        self.marked.is_empty()
    }

    /// Each mark made, with what it stands for (`<U+202E>`,
    /// `RIGHT-TO-LEFT OVERRIDE ...`), in code point order.
    pub fn entries(&self) -> Vec<(String, &'static str)> {
        self.marked
            .iter()
            .map(|&c| {
                let name = if c == '<' {
                    "LESS-THAN SIGN (marked before `U+` so that no text passes for a mark)"
                } else {
                    mark_name(c).unwrap_or("CHARACTER")
                };
                (mark(c), name)
            })
            .collect()
    }

    /// Adds another legend's marks to this one.
    pub fn merge(&mut self, other: &Legend) {
        self.marked.extend(other.marked.iter().copied());
    }

    /// The legend as lines of text: [`LEGEND_TITLE`], then one line per mark.
    /// Empty when nothing was marked.
    pub fn lines(&self) -> Vec<String> {
        if self.is_empty() {
            return Vec::new();
        }
        let mut lines = vec![LEGEND_TITLE.to_string()];
        lines.extend(
            self.entries()
                .into_iter()
                .map(|(mark, name)| format!("  {mark} {name}")),
        );
        lines
    }
}

/// `<U+202E>`: how a marked character is written.
pub fn mark(c: char) -> String {
    format!("<U+{:04X}>", c as u32)
}

/// `text` with every character [`mark_name`] names written as its mark,
/// and `<` before `U+` marked too; the marks made are added to `legend`.
pub fn visible_into(text: &str, out: &mut String, legend: &mut Legend) {
    for (at, c) in text.char_indices() {
        let fake_mark = c == '<' && text[at + 1..].starts_with("U+");
        if fake_mark || mark_name(c).is_some() {
            out.push_str(&mark(c));
            legend.marked.insert(c);
        } else {
            out.push(c);
        }
    }
}

/// `text` as it must be shown; see the module docs.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    visible_into(text, &mut out, &mut Legend::default());
    out
}

/// [`visible`] and the legend of the marks it made.
pub fn visible_with_legend(text: &str) -> (String, Legend) {
    let mut out = String::with_capacity(text.len());
    let mut legend = Legend::default();
    visible_into(text, &mut out, &mut legend);
    (out, legend)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_zero_width_and_control_characters_are_marked_and_named() {
        let (shown, legend) =
            visible_with_legend("/data/invoice\u{202e}txt.exe a\u{200b}b \u{1b}[2J\r\u{feff}\n");
        assert_eq!(
            shown,
            "/data/invoice<U+202E>txt.exe a<U+200B>b <U+001B>[2J<U+000D><U+FEFF>\n"
        );
        let marks: Vec<String> = legend.entries().into_iter().map(|(m, _)| m).collect();
        assert_eq!(
            marks,
            ["<U+000D>", "<U+001B>", "<U+200B>", "<U+202E>", "<U+FEFF>"]
        );
        assert!(legend.lines()[0].starts_with("<U+XXXX> marks"));
        assert!(
            legend
                .lines()
                .iter()
                .any(|l| l.contains("RIGHT-TO-LEFT OVERRIDE"))
        );
    }

    #[test]
    fn every_listed_bidi_and_zero_width_character_is_marked() {
        let listed = [
            '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}',
            '\u{2068}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{061c}', '\u{200b}', '\u{200c}',
            '\u{200d}', '\u{2060}', '\u{feff}',
        ];
        for c in listed {
            assert_eq!(visible(&c.to_string()), mark(c), "{:04X}", c as u32);
        }
        assert_eq!(visible("plain é ü 日本 ✓"), "plain é ü 日本 ✓");
    }

    #[test]
    fn literal_text_cannot_pass_for_a_mark() {
        let (shown, legend) = visible_with_legend("a<U+202E>b <b>");
        assert_eq!(shown, "a<U+003C>U+202E>b <b>");
        assert_eq!(legend.entries().len(), 1);
    }
}
