//! `cron = "..."`: a schedule's cron expression, parsed once at load and
//! stepped in UTC (the next fire, the last one missed), so the scheduler
//! only does arithmetic on unix millis.

use chrono::{DateTime, Utc};

/// A cron expression, parsed (by `croner`: standard five fields, or six
/// with seconds first; `@hourly`-style nicknames), evaluated in UTC.
#[derive(Clone)]
pub struct CronExpr {
    text: String,
    cron: croner::Cron,
}

/// Why a `cron` text is not a schedule; each quotes the text (the config
/// adds the key and what to write).
#[derive(thiserror::Error, Debug)]
#[non_exhaustive]
pub enum CronExprError {
    /// The cron parser refused it.
    #[error("`{text}` is not a cron expression: {error}")]
    NotCron {
        text: String,
        error: croner::errors::CronError,
    },
    /// It parses but matches no time (30 February): a typo too.
    #[error("`{text}` never fires")]
    NeverFires { text: String },
}

impl CronExpr {
    /// The expression, or why it is not one.
    pub fn parse(text: &str) -> Result<CronExpr, CronExprError> {
        let cron = croner::parser::CronParser::new()
            .parse(text.trim())
            .map_err(|error| CronExprError::NotCron {
                text: text.to_string(),
                error,
            })?;
        let expr = CronExpr {
            text: text.trim().to_string(),
            cron,
        };
        // An expression that never fires (30 February) is a typo too.
        if expr.next_after(0).is_none() {
            return Err(CronExprError::NeverFires {
                text: text.to_string(),
            });
        }
        Ok(expr)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The first time it fires strictly after `after_ms` (unix millis), if any.
    pub fn next_after(&self, after_ms: u64) -> Option<u64> {
        let after = DateTime::<Utc>::from_timestamp_millis(i64::try_from(after_ms).ok()?)?;
        let next = self.cron.find_next_occurrence(&after, false).ok()?;
        u64::try_from(next.timestamp_millis()).ok()
    }

    /// The last time it fired at or before `at_ms`, and after `after_ms`:
    /// the one fire of a stretch it missed (see `catch_up`).
    pub fn last_between(&self, after_ms: u64, at_ms: u64) -> Option<u64> {
        let at = DateTime::<Utc>::from_timestamp_millis(i64::try_from(at_ms).ok()?)?;
        let last = self.cron.find_previous_occurrence(&at, true).ok()?;
        u64::try_from(last.timestamp_millis())
            .ok()
            .filter(|last| *last > after_ms)
    }
}

impl std::fmt::Debug for CronExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CronExpr({:?})", self.text)
    }
}

impl PartialEq for CronExpr {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR_MS: u64 = 3_600_000;

    #[test]
    fn cron_steps_in_utc() {
        let every_six = CronExpr::parse("0 */6 * * *").unwrap();
        assert_eq!(every_six.next_after(0), Some(6 * HOUR_MS));
        assert_eq!(every_six.next_after(6 * HOUR_MS), Some(12 * HOUR_MS));
        assert_eq!(every_six.next_after(6 * HOUR_MS - 1), Some(6 * HOUR_MS));
        // The last of several missed fires, not the first.
        assert_eq!(every_six.last_between(1, 20 * HOUR_MS), Some(18 * HOUR_MS));
        assert_eq!(every_six.last_between(1, 5 * HOUR_MS), None);
        let seconds = CronExpr::parse("*/10 * * * * *").unwrap();
        assert_eq!(seconds.next_after(0), Some(10_000));
        assert!(CronExpr::parse("@hourly").is_ok());
    }

    #[test]
    fn bad_cron_expressions_are_refused() {
        for bad in [
            "",
            "* * *",
            "61 * * * *",
            "0 25 * * *",
            "every hour",
            "0 0 30 2 *",
        ] {
            assert!(CronExpr::parse(bad).is_err(), "{bad:?} parsed");
        }
    }
}
