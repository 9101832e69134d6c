//! The compliance score: one number for how far a host is from the
//! antipatterns `glovebox doctor` looks for, so a fleet's drift shows as a
//! trend (recorded daily by the sweep: `compliance.rs`).
//!
//! Each finding costs points by its severity, and the score is what is
//! left of 100:
//!
//! | severity | weight |
//! |---|---|
//! | `warning` | [`WARNING_WEIGHT`] (10) |
//! | `notice` | [`NOTICE_WEIGHT`] (2) |
//!
//! `score = max(0, 100 − 10 × warnings − 2 × notices)`: a clean host scores
//! 100, one warning 90, ten warnings (or fifty notices) 0.

use serde::{Deserialize, Serialize};

use super::findings::{Finding, Severity};

/// What a clean host scores.
pub const FULL_SCORE: u32 = 100;
/// The points a warning costs.
pub const WARNING_WEIGHT: u32 = 10;
/// The points a notice costs.
pub const NOTICE_WEIGHT: u32 = 2;

/// The points a finding of `severity` costs.
pub fn weight(severity: Severity) -> u32 {
    match severity {
        Severity::Warning => WARNING_WEIGHT,
        Severity::Notice => NOTICE_WEIGHT,
    }
}

/// A host's compliance score and the findings it is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Score {
    /// 0 to 100: 100 less the findings' weights, never below 0.
    pub score: u32,
    pub warnings: u64,
    pub notices: u64,
}

/// The score of `findings` (see the module's docs for the formula).
pub fn score(findings: &[Finding]) -> Score {
    let lost: u64 = findings.iter().map(|f| u64::from(weight(f.severity))).sum();
    let warnings = findings
        .iter()
        .filter(|f| f.severity == Severity::Warning)
        .count() as u64;
    Score {
        score: u32::try_from(u64::from(FULL_SCORE).saturating_sub(lost)).unwrap_or(0),
        warnings,
        notices: findings.len() as u64 - warnings,
    }
}

impl std::fmt::Display for Score {
    /// `85/100 (1 warning × 10, 2 notices × 2)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = |n: u64, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        write!(
            f,
            "{}/{FULL_SCORE} ({} × {WARNING_WEIGHT}, {} × {NOTICE_WEIGHT})",
            self.score,
            plural(self.warnings, "warning"),
            plural(self.notices, "notice"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::{Culprit, CulpritKind, Rule};

    fn finding(severity: Severity) -> Finding {
        Finding {
            rule: Rule::UnnamedSession,
            severity,
            culprit: Culprit {
                kind: CulpritKind::Session,
                name: "s-1".into(),
                id: None,
                file: None,
            },
            message: String::new(),
            fix: String::new(),
        }
    }

    fn of(warnings: usize, notices: usize) -> Score {
        let mut all = vec![finding(Severity::Warning); warnings];
        all.extend(vec![finding(Severity::Notice); notices]);
        score(&all)
    }

    #[test]
    fn the_score_is_100_less_the_weighted_findings_floored_at_0() {
        assert_eq!(
            of(0, 0),
            Score {
                score: 100,
                warnings: 0,
                notices: 0
            }
        );
        assert_eq!(of(1, 0).score, 90);
        assert_eq!(of(0, 1).score, 98);
        assert_eq!(of(2, 3).score, 100 - 2 * 10 - 3 * 2);
        assert_eq!(of(9, 4).score, 2);
        assert_eq!(of(10, 0).score, 0);
        assert_eq!(of(12, 7).score, 0);
        assert_eq!((of(2, 3).warnings, of(2, 3).notices), (2, 3));
        assert_eq!(
            of(1, 2).to_string(),
            "86/100 (1 warning × 10, 2 notices × 2)"
        );
    }
}
