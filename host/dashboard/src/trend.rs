//! The compliance score's trend on the doctor page: the daily records the
//! sweep wrote (`glovebox::doctor::trend`, the last 30 days) as a
//! server-rendered inline SVG line (no script, nothing fetched: the
//! dashboard's CSP allows neither) and a table of the same figures, for
//! reading and for screen readers. A day with no record (the host was
//! down) is a gap in the line's x axis, not a point.

use std::fmt::Write as _;

use glovebox::billing::parse_date;
use glovebox::doctor::{DailyScore, FULL_SCORE};

use crate::html::esc;

/// The chart's size in pixels.
const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 120.0;
/// Room for the axis labels.
const PAD: f64 = 28.0;

/// The trend of `records` (oldest first) over the `days` days up to
/// `today` (`YYYY-MM-DD`): a chart and a table, or a muted note when there
/// is no record yet.
pub(crate) fn trend(records: &[DailyScore], today: &str, days: i64) -> String {
    let mut out =
        format!("<h2>Compliance trend <span class=\"muted\">last {days} days</span></h2>");
    if records.is_empty() {
        out += "<p class=\"muted\" id=\"no-trend\">no daily record yet: the sweep records the score once a day</p>";
        return out;
    }
    let last = parse_date(today).unwrap_or(0);
    let first = last - days + 1;
    let span = (days - 1).max(1) as f64;
    let x = |day: &str| {
        let d = parse_date(day).unwrap_or(first);
        PAD + (d - first) as f64 / span * (WIDTH - 2.0 * PAD)
    };
    let y = |score: u32| {
        let s = f64::from(score.min(FULL_SCORE)) / f64::from(FULL_SCORE);
        PAD / 2.0 + (1.0 - s) * (HEIGHT - PAD)
    };
    let points: Vec<String> = records
        .iter()
        .map(|r| format!("{:.1},{:.1}", x(&r.day), y(r.score.score)))
        .collect();
    let _ = write!(
        out,
        "<figure class=\"chart trend\"><svg id=\"compliance-trend\" width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"compliance score, last {days} days\">"
    );
    // The axis: 100 and 0, the first and the last day.
    for score in [FULL_SCORE, 0] {
        let _ = write!(
            out,
            "<line class=\"axis\" x1=\"{PAD}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e3e6ec\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{score}</text>",
            WIDTH - PAD,
            PAD - 4.0,
            y(score) + 4.0,
            y = y(score),
        );
    }
    let _ = write!(
        out,
        "<text x=\"{PAD}\" y=\"{HEIGHT}\">{}</text><text x=\"{:.1}\" y=\"{HEIGHT}\" text-anchor=\"end\">{}</text>",
        glovebox::billing::format_day(first),
        WIDTH - PAD,
        esc(today)
    );
    let _ = write!(
        out,
        "<polyline class=\"score\" fill=\"none\" stroke=\"#2f5fd0\" stroke-width=\"2\" points=\"{}\"/>",
        points.join(" ")
    );
    for r in records {
        let _ = write!(
            out,
            "<circle class=\"score\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"#2f5fd0\"><title>{}: {}</title></circle>",
            x(&r.day),
            y(r.score.score),
            esc(&r.day),
            r.score.score
        );
    }
    out += "</svg></figure>";
    out += "<table id=\"compliance-days\"><thead><tr><th>day</th><th>score</th><th>warnings</th><th>notices</th></tr></thead><tbody>";
    for r in records.iter().rev() {
        let _ = write!(
            out,
            "<tr data-day=\"{day}\"><td>{day}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.score.score,
            r.score.warnings,
            r.score.notices,
            day = esc(&r.day),
        );
    }
    out += "</tbody></table>";
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use glovebox::doctor::Score;

    fn record(day: &str, score: u32) -> DailyScore {
        DailyScore {
            day: day.into(),
            at_ms: 0,
            score: Score {
                score,
                warnings: u64::from((100 - score) / 10),
                notices: 0,
            },
            rules: Default::default(),
        }
    }

    #[test]
    fn the_trend_places_each_day_on_the_line_and_lists_it() {
        let records = [record("2026-11-07", 100), record("2026-12-06", 70)];
        let html = trend(&records, "2026-12-06", 30);
        // The first day of the window at the left, today at the right; 100
        // at the top, 0 at the bottom.
        assert!(html.contains("points=\"28.0,14.0 572.0,41.6\""), "{html}");
        assert!(html.contains("<title>2026-12-06: 70</title>"), "{html}");
        assert!(
            html.contains("<tr data-day=\"2026-12-06\"><td>2026-12-06</td><td>70</td><td>3</td><td>0</td></tr><tr data-day=\"2026-11-07\">"),
            "{html}"
        );
        assert!(trend(&[], "2026-12-06", 30).contains("id=\"no-trend\""));
    }
}
