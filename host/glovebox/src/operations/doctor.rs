//! `doctor.check`: the antipatterns in the config and the data dir
//! (`crate::doctor` finds them), each with its culprit and its fix.

use super::{Audience, NoArguments, Operation, OperationError, Route};
use crate::doctor::{Finding, check};
use crate::scope::Scope;

pub struct Doctor;

impl Operation for Doctor {
    const NAME: &'static str = "doctor.check";
    const SUMMARY: &'static str =
        "The antipatterns in the config and the data dir, each with its culprit and its fix.";
    const DESCRIPTION: &'static str = "Warnings first, then notices, by rule and culprit (the rules are in docs/operators/doctor.md). Broad hooks are probed with made-up calls; nothing is recorded and no tool runs.";
    const AUDIENCE: Audience = Audience::Operator;
    const HTTP: Option<Route> = Some(Route::get("/doctor"));
    type Args = NoArguments;
    type Output = Vec<Finding>;

    async fn run(scope: Scope<'_>, _: NoArguments) -> Result<Vec<Finding>, OperationError> {
        Ok(check(scope.gateway()).await?)
    }
}
