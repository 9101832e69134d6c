//! Permission hooks: sandboxed components that judge every tool call before it runs.
//!
//! A [`HookChain`] holds the hooks of a config, in its order. For each call, the
//! hooks whose triggers cover the call's action run in turn, each in a fresh
//! instance (or, for a hook declared pure with `reuse`, one kept for the same
//! principal: `kept.rs`) with only clocks and random, under its own deadline,
//! memory cap and fuel. The first deny stops the chain; an ask is remembered and the chain goes
//! on (a later deny still wins); otherwise the call is allowed. Hooks fail closed:
//! a hook that cannot be loaded, traps, runs out of time, memory or fuel, or
//! answers something malformed denies the call, and the reason says which hook
//! and why.

mod decision;
mod http;
mod kept;
mod load;
mod pattern;
mod run;
mod sandbox;
mod world;

#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use wasmtime::Engine;

use crate::manifest::HookConfig;
use crate::runtime::CompiledCache;
use load::{HookLoadError, LoadedHook, load_hook};
use run::run_hook;
use sandbox::hook_linker;

pub use decision::{
    DecisionKind, HookDecision, MAX_ALTERNATIVE_BYTES, MAX_ALTERNATIVES, MAX_REASON_BYTES,
};
pub use http::HookHttp;
pub use kept::KEPT_PER_HOOK;
pub use load::{MAX_HOOK_COMPONENT_BYTES, MAX_TRIGGER_BYTES, MAX_TRIGGERS};
pub use pattern::{pattern_matches, valid_pattern};
pub use run::MAX_ANSWER_BYTES;
use world::Requests;
pub use world::{HOOK_INTERFACE, HOOK_INTERFACE_V0_1, HOOK_INTERFACES, is_hook_interface};

/// The call a hook judges: what the `permission-hook` interface's `request` holds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct HookRequest {
    /// Id of the call; a decision applies to this call only.
    pub call_id: String,
    /// `plugin.tool`.
    pub tool: String,
    /// The call's action, after the operator's overrides.
    pub action: String,
    /// Role of the calling session.
    pub role: String,
    /// Id of the calling session.
    pub session: String,
    /// The call's input, as JSON text.
    pub input: String,
    /// From the tool manifest's cost model; 0 when it has none.
    pub estimated_cost: f64,
    /// Whether the tool is destructive, after the operator's overrides.
    pub destructive: bool,
    /// Tags of the calling session.
    pub tags: Vec<String>,
    /// The principal that made the call, as the session's log names it (its
    /// `by`). Hooks of the 0.2.0 world see it; 0.1.0 hooks do not.
    #[serde(default)]
    pub principal: String,
    /// The calling session's project; `None` outside a session or for a
    /// session started without one. Seen by 0.2.0 hooks only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The HTTP request the call makes, where its tool declares it
    /// ([`HookHttp::read`]). Seen by 0.2.0 hooks only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HookHttp>,
}

/// What the chain decided about a call.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// No hook denied or asked (or no hook's triggers covered the call).
    Allow,
    /// The first deny; nothing after it ran.
    Deny(HookDecision),
    /// The first ask, when no hook denied: a human must approve the call.
    Ask(HookDecision),
}

/// The verdict on a call and every decision behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainOutcome {
    pub verdict: Verdict,
    /// The decision of every hook that judged the call, in chain order (hooks whose
    /// triggers did not cover the call are absent; nothing follows a deny).
    pub decisions: Vec<HookDecision>,
}

/// A configured hook as the chain holds it.
#[derive(Clone, Debug, Serialize)]
pub struct HookInfo {
    pub name: String,
    /// The sha256 of its component (hex); `None` when it could not be loaded.
    pub digest: Option<String>,
    /// The action patterns it judges; empty when it could not be loaded.
    pub triggers: Vec<String>,
    pub status: HookStatus,
}

/// Whether a hook can judge calls.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HookStatus {
    Ready,
    /// It could not be loaded, and denies every call; the text says why.
    Broken(String),
}

enum Slot {
    Ready(Box<LoadedHook>),
    Broken { name: String, reason: String },
}

/// The hooks of a config, in order, ready to judge calls.
pub struct HookChain {
    engine: Engine,
    hooks: Vec<Slot>,
}

impl HookChain {
    /// Loads every hook of `hooks`. Never fails: a hook that cannot be loaded
    /// (missing file, digest mismatch, not a `hook-plugin` component, an import
    /// other than clocks and random, invalid triggers, a fault while listing
    /// them) is kept as broken and denies every call.
    ///
    /// Deadlines rely on `engine`'s epoch being advanced (the host's runtime
    /// does); without it only the timer stops a hook, which cannot interrupt a
    /// guest that computes.
    #[tracing::instrument(skip_all, fields(hooks = hooks.len()))]
    pub async fn load(engine: &Engine, cache: &CompiledCache, hooks: &[HookConfig]) -> HookChain {
        let linker = hook_linker(engine).map_err(|e| format!("{e:#}"));
        let mut slots = Vec::with_capacity(hooks.len());
        for config in hooks {
            let loaded = match &linker {
                Ok(linker) => load_hook(engine, cache, linker, config).await,
                Err(e) => Err(HookLoadError::Link { message: e.clone() }),
            };
            slots.push(match loaded {
                Ok(hook) => Slot::Ready(Box::new(hook)),
                Err(reason) => {
                    let reason = reason.to_string();
                    tracing::warn!(hook = %config.name, %reason, "permission hook cannot be loaded: it denies every call");
                    Slot::Broken {
                        name: config.name.clone(),
                        reason,
                    }
                }
            });
        }
        HookChain {
            engine: engine.clone(),
            hooks: slots,
        }
    }

    /// The hooks, in chain order, with their triggers and status.
    pub fn hooks(&self) -> Vec<HookInfo> {
        self.hooks
            .iter()
            .map(|slot| match slot {
                Slot::Ready(hook) => HookInfo {
                    name: hook.name.clone(),
                    digest: Some(hook.digest.clone()),
                    triggers: hook.triggers.clone(),
                    status: HookStatus::Ready,
                },
                Slot::Broken { name, reason } => HookInfo {
                    name: name.clone(),
                    digest: None,
                    triggers: Vec::new(),
                    status: HookStatus::Broken(reason.clone()),
                },
            })
            .collect()
    }

    /// True when no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Judges a call: every hook whose triggers cover its action, in order, until
    /// the first deny.
    #[tracing::instrument(skip_all, fields(call_id = %req.call_id, tool = %req.tool, action = %req.action))]
    pub async fn evaluate(&self, req: &HookRequest) -> ChainOutcome {
        let mut requests = Requests::default();
        let mut decisions = Vec::new();
        for slot in &self.hooks {
            let decision = match slot {
                Slot::Broken { name, reason } => HookDecision::fail_closed(
                    name,
                    "*",
                    format!(
                        "hook `{name}` cannot be loaded: {reason}; every call is denied until it is fixed"
                    ),
                    Duration::ZERO,
                ),
                Slot::Ready(hook) => match hook.trigger_for(&req.action) {
                    Some(pattern) => self.validate(hook, pattern, req, &mut requests).await,
                    None => continue,
                },
            };
            tracing::info!(
                hook = %decision.hook,
                pattern = %decision.pattern,
                decision = ?decision.decision,
                took_ms = decision.took.as_secs_f64() * 1e3,
                reason = decision.reason.as_deref().unwrap_or(""),
                "permission hook decided"
            );
            let stop = decision.decision == DecisionKind::Deny;
            decisions.push(decision);
            if stop {
                break;
            }
        }
        ChainOutcome {
            verdict: verdict_of(&decisions),
            decisions,
        }
    }

    /// The first hook that runs an instance to judge a call of `action`
    /// (its name and the trigger that covers the action): `None` when the
    /// chain runs none for it (no hook's triggers cover it, or only broken
    /// hooks, which deny without running). The host admits a chain that runs
    /// one before it judges (see its admission of hook runs).
    pub fn first_to_run(&self, action: &str) -> Option<(&str, &str)> {
        self.hooks.iter().find_map(|slot| match slot {
            Slot::Ready(hook) => hook
                .trigger_for(action)
                .map(|pattern| (hook.name.as_str(), pattern)),
            Slot::Broken { .. } => None,
        })
    }

    /// The outcome of a chain that could not run: the hook `name` (judging
    /// through `pattern`) denies, saying `reason` (hooks fail closed).
    pub fn failed_closed(
        name: &str,
        pattern: &str,
        reason: String,
        took: Duration,
    ) -> ChainOutcome {
        let decisions = vec![HookDecision::fail_closed(name, pattern, reason, took)];
        ChainOutcome {
            verdict: verdict_of(&decisions),
            decisions,
        }
    }

    /// What the hook `name` alone decides about a call (as if it were the
    /// only hook in the chain): `None` when there is no such loaded hook or
    /// its triggers do not cover the call's action. Nothing is recorded; used
    /// by `glovebox doctor` to probe how permissive each hook is.
    pub async fn evaluate_one(&self, name: &str, req: &HookRequest) -> Option<HookDecision> {
        let hook = self.hooks.iter().find_map(|slot| match slot {
            Slot::Ready(hook) if hook.name == name => Some(hook),
            _ => None,
        })?;
        let pattern = hook.trigger_for(&req.action)?;
        Some(
            self.validate(hook, pattern, req, &mut Requests::default())
                .await,
        )
    }

    async fn validate(
        &self,
        hook: &LoadedHook,
        pattern: &str,
        req: &HookRequest,
        requests: &mut Requests,
    ) -> HookDecision {
        let start = Instant::now();
        let judge = async |h: &world::HookInstance,
                           store: &mut wasmtime::Store<sandbox::HookState>| {
            h.validate(store, &hook.settings, req, requests).await
        };
        let answer = match &hook.kept {
            Some(kept) => {
                kept.run(&self.engine, &hook.pre, &hook.limits, &req.principal, judge)
                    .await
            }
            None => run_hook(&self.engine, &hook.pre, &hook.limits, judge).await,
        };
        let took = start.elapsed();
        let mut decision = match answer {
            Ok(answer) => decision::check_decision(&hook.name, pattern, answer, took),
            Err(fault) => HookDecision::fail_closed(
                &hook.name,
                pattern,
                format!(
                    "hook `{}` {}: the call is denied (hooks fail closed)",
                    hook.name,
                    fault.describe(&hook.limits)
                ),
                took,
            ),
        };
        decision.digest = Some(hook.digest.clone());
        decision
    }

    /// Whether any hook that allowed the call in `outcome` wants its `after`
    /// (`[[hook]] after = true`): when none does, there is nothing to tell
    /// and nothing to schedule.
    pub fn wants_after(&self, outcome: &ChainOutcome) -> bool {
        outcome
            .decisions
            .iter()
            .filter(|d| d.decision == DecisionKind::Allow)
            .any(|d| self.ready(&d.hook).is_some_and(|h| h.after))
    }

    /// Tells every hook that allowed the call and wants its `after` how the
    /// call ended (`ok`, and a short `summary`), in chain order, each in a
    /// fresh instance under its limits. Changes nothing: failures are logged
    /// and returned as (hook, error).
    #[tracing::instrument(skip_all, fields(call_id = %req.call_id, tool = %req.tool))]
    pub async fn after(
        &self,
        req: &HookRequest,
        outcome: &ChainOutcome,
        ok: bool,
        summary: &str,
    ) -> Vec<(String, String)> {
        let allowed = outcome
            .decisions
            .iter()
            .filter(|d| d.decision == DecisionKind::Allow);
        let mut failures = Vec::new();
        let mut requests = Requests::default();
        for decision in allowed {
            let Some(hook) = self.ready(&decision.hook).filter(|h| h.after) else {
                continue;
            };
            let result = run_hook(&self.engine, &hook.pre, &hook.limits, async |h, store| {
                h.after(store, &hook.settings, req, &mut requests, ok, summary)
                    .await
            })
            .await;
            if let Err(fault) = result {
                let error = format!(
                    "hook `{}` {} in `after`; ignored",
                    hook.name,
                    fault.describe(&hook.limits)
                );
                tracing::warn!(hook = %hook.name, %error, "permission hook failed after a call");
                failures.push((hook.name.clone(), error));
            }
        }
        failures
    }

    fn ready(&self, name: &str) -> Option<&LoadedHook> {
        self.hooks.iter().find_map(|slot| match slot {
            Slot::Ready(hook) if hook.name == name => Some(&**hook),
            _ => None,
        })
    }
}

/// Deny wins (the first one); else the first ask; else allow.
fn verdict_of(decisions: &[HookDecision]) -> Verdict {
    let first = |kind: DecisionKind| decisions.iter().find(|d| d.decision == kind).cloned();
    if let Some(deny) = first(DecisionKind::Deny) {
        Verdict::Deny(deny)
    } else if let Some(ask) = first(DecisionKind::Ask) {
        Verdict::Ask(ask)
    } else {
        Verdict::Allow
    }
}
