//! Checking the `[[schedule]]` entries: a unique name and a cron expression,
//! then the action ([`super::run`]).

use crate::ConfigError;
use crate::notify::NotifyTarget;
use crate::source::Source;

use super::ScheduleConfig;
use super::cron::CronExpr;
use super::names::unique_name;
use super::raw::RawSchedule;
use super::run::validate_run;

pub(crate) fn validate_schedules(
    src: &Source,
    raw: &[RawSchedule],
    targets: &[NotifyTarget],
) -> Result<Vec<ScheduleConfig>, ConfigError> {
    let mut out: Vec<ScheduleConfig> = Vec::new();
    for (i, entry) in raw.iter().enumerate() {
        let at = |key: &str| format!("schedule[{i}].{key}");
        let name = unique_name(
            src,
            "schedule",
            i,
            entry.name.as_deref(),
            out.iter().map(|s| s.name.as_str()),
        )?;
        let cron = CronExpr::parse(entry.cron.as_deref().unwrap_or_default()).map_err(|p| {
            src.invalid(
                &at("cron"),
                p,
                "write five fields `minute hour day-of-month month day-of-week` in UTC, e.g. `cron = \"0 */6 * * *\"` (every 6 hours), or `@hourly`, `@daily`",
            )
        })?;
        let run = validate_run(src, &|k| at(k), &entry.run(), targets)?;
        out.push(ScheduleConfig {
            name,
            cron,
            catch_up: entry.catch_up.unwrap_or(true),
            run,
        });
    }
    Ok(out)
}
