//! `doctor.score`: the compliance score of the findings `doctor.check`
//! reports now, with its weights, and the daily scores the sweep recorded
//! (`crate::doctor::compliance`): for automation that watches a fleet's drift
//! without reading the dashboard.

use serde::Serialize;

use super::{Audience, NoArguments, Operation, OperationError, Route};
use crate::doctor::{DailyScore, Finding, NOTICE_WEIGHT, Score, WARNING_WEIGHT, check, score};
use crate::scope::Scope;
use crate::session::SessionError;

pub struct DoctorScore;

/// The score now, what it is made of, and its recorded trend.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Compliance {
    #[serde(flatten)]
    pub now: Score,
    /// The points a finding costs, by severity.
    pub weights: Weights,
    /// The findings the score is made of (as `doctor.check` reports them).
    pub findings: Vec<Finding>,
    /// The daily scores the sweep recorded, oldest first (the last 30 days;
    /// none while the sweep is off).
    pub trend: Vec<DailyScore>,
}

/// The points a finding costs, by severity.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Weights {
    pub warning: u32,
    pub notice: u32,
}

impl Operation for DoctorScore {
    const NAME: &'static str = "doctor.score";
    const SUMMARY: &'static str = "The compliance score of the findings now (100 less 10 a warning and 2 a notice), its weights, the findings, and the daily scores recorded.";
    const DESCRIPTION: &'static str = "The score `glovebox doctor --json --score` prints, and its 30-day trend as the sweep recorded it once a day (what the dashboard's doctor page draws). Broad hooks are probed with made-up calls; nothing is recorded and no tool runs.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::get("/doctor/score"));
    type Args = NoArguments;
    type Output = Compliance;

    async fn run(scope: Scope<'_>, _: NoArguments) -> Result<Compliance, OperationError> {
        let gateway = scope.gateway();
        let findings = check(gateway).await?;
        let recorded = gateway.clone();
        let trend = crate::tasks::ledger_work(move || {
            crate::doctor::trend(&recorded).map_err(SessionError::Storage)
        })
        .await?;
        Ok(Compliance {
            now: score(&findings),
            weights: Weights {
                warning: WARNING_WEIGHT,
                notice: NOTICE_WEIGHT,
            },
            findings,
            trend,
        })
    }
}
