//! The figures the pipeline records as calls go by: calls by tool and
//! outcome and their latency, each hook's decisions and latency, and the
//! time the ledger takes to write a call's records before it runs.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::seconds;
use crate::call::CallReport;
use crate::session::EventKind;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolOutcome {
    tool: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HookDecision {
    hook: String,
    decision: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HookLabel {
    hook: String,
}

/// The pipeline's counters and latencies.
pub(super) struct Pipeline {
    calls: Family<ToolOutcome, Counter>,
    call_seconds: Family<ToolLabel, Histogram>,
    hook_decisions: Family<HookDecision, Counter>,
    hook_seconds: Family<HookLabel, Histogram>,
    ledger_seconds: Histogram,
}

impl Pipeline {
    /// The pipeline's families, registered in `registry`.
    pub(super) fn register(registry: &mut Registry) -> Pipeline {
        let calls = Family::<ToolOutcome, Counter>::default();
        registry.register(
            "calls",
            "Tool calls that reached the pipeline's judge, by tool and outcome (`ok` or the error kind)",
            calls.clone(),
        );
        let call_seconds = Family::<ToolLabel, Histogram>::new_with_constructor(seconds);
        registry.register(
            "call_duration_seconds",
            "Wall time of the calls that ran, instantiation included, by tool",
            call_seconds.clone(),
        );
        let hook_decisions = Family::<HookDecision, Counter>::default();
        registry.register(
            "hook_decisions",
            "Permission hooks' decisions, by hook and decision (allow, deny, ask)",
            hook_decisions.clone(),
        );
        let hook_seconds = Family::<HookLabel, Histogram>::new_with_constructor(seconds);
        registry.register(
            "hook_duration_seconds",
            "Time a hook took to decide, instantiation included, by hook",
            hook_seconds.clone(),
        );
        let ledger_seconds = seconds();
        registry.register(
            "log_append_duration_seconds",
            "Time the ledger took to write one call's records before it ran (the durable write-ahead batch)",
            ledger_seconds.clone(),
        );
        Pipeline {
            calls,
            call_seconds,
            hook_decisions,
            hook_seconds,
            ledger_seconds,
        }
    }

    /// A call's report.
    pub(super) fn call(&self, report: &CallReport) {
        let outcome = match &report.outcome {
            Ok(_) => "ok".to_string(),
            Err(e) => e.kind().to_string(),
        };
        self.calls
            .get_or_create(&ToolOutcome {
                tool: report.tool.clone(),
                outcome,
            })
            .inc();
        if report.metering.wall > Duration::ZERO {
            self.call_seconds
                .get_or_create(&ToolLabel {
                    tool: report.tool.clone(),
                })
                .observe(report.metering.wall.as_secs_f64());
        }
    }

    /// The hooks' decisions on a call (its `call_decided` events).
    pub(super) fn decisions(&self, decisions: &[EventKind]) {
        for d in decisions {
            if let EventKind::CallDecided {
                hook,
                decision,
                took_ms,
                ..
            } = d
            {
                self.hook_decisions
                    .get_or_create(&HookDecision {
                        hook: hook.clone(),
                        decision: decision.clone(),
                    })
                    .inc();
                self.hook_seconds
                    .get_or_create(&HookLabel { hook: hook.clone() })
                    .observe(*took_ms as f64 / 1000.0);
            }
        }
    }

    /// The ledger's write of one call's records before it ran.
    pub(super) fn ledger_write(&self, took: Duration) {
        self.ledger_seconds.observe(took.as_secs_f64());
    }
}
