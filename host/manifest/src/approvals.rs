//! `[approvals]`: how long a call a permission hook asked a human about
//! waits for the answer. Kept apart from the hooks (which decide *that* a
//! human is asked) and from the detector (which flags approvals that wait
//! too long).

use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use super::detector::OffOr;
use super::source::Source;
use super::units::Millis;

/// The longest `wait` accepted: a caller should not hold a request open
/// for longer than an hour; it can ask `approval_status` later.
const MAX_WAIT: Duration = Duration::from_secs(3600);

/// `[approvals]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalsConfig {
    /// `wait`: how long an MCP call that awaits an operator's approval waits
    /// for it (`glovebox approve` / `deny`) before it answers "awaiting
    /// approval" (the approval stays pending, and `approval_status` tells
    /// the agent later). `0` answers at once. Default 5 minutes, at most 1 hour.
    pub wait: Duration,
    /// `expire_after`: an approval still pending this long after its call
    /// was requested expires: it can no longer be approved, it is denied
    /// (by `host`, with the reason) the next time anyone tries or the
    /// detector's sweep passes, and its session resumes. `None` (`"off"`,
    /// the default): approvals wait until someone settles them.
    pub expire_after: Option<Duration>,
    /// `nested`: what a tool called from inside a run (code mode) does when
    /// a hook asks a human about it.
    pub nested: NestedApproval,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            wait: Duration::from_secs(300),
            expire_after: None,
            nested: NestedApproval::Fail,
        }
    }
}

/// What a nested call (a tool a script calls from inside its run) does
/// when a permission hook asks a human about it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum NestedApproval {
    /// The call fails at once with the approval's id (an exception the
    /// script can catch); the approval stays pending, and approving it
    /// runs the call later, outside the script.
    #[default]
    Fail,
    /// The whole run waits for the answer, up to `wait` and within the
    /// run's own deadline: approved, the call runs and the script gets its
    /// result; denied, the script gets the denial; still pending, it fails
    /// as with `fail`. A waiting run holds its instance and its memory.
    Wait,
}

/// `[approvals]` ([`operators/approvals.md`](operators/approvals.md)).
#[derive(Default, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(super) struct RawApprovals {
    /// How long an MCP call waits for an operator (at most an hour); `0`
    /// answers "awaiting approval" at once
    /// ([`operators/approvals.md`](operators/approvals.md)).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "5m")))]
    wait: Option<Millis>,
    /// A pending approval older than this is denied by `host` (at least `wait`).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "off")))]
    expire_after: Option<OffOr>,
    /// What a tool called from inside a run (code mode) does when a hook
    /// asks a human: `"fail"` (at once, with the approval's id) or
    /// `"wait"` (the run waits for the answer, up to `wait` and within its
    /// own deadline).
    #[cfg_attr(feature = "schemars", schemars(extend("default" = "fail")))]
    nested: Option<NestedApproval>,
}

pub(super) fn validate_approvals(
    src: &Source,
    raw: &RawApprovals,
) -> Result<ApprovalsConfig, ConfigError> {
    let mut config = ApprovalsConfig::default();
    if let Some(nested) = raw.nested {
        config.nested = nested;
    }
    if let Some(Millis(wait)) = raw.wait {
        if wait > MAX_WAIT {
            return Err(src.invalid(
                "approvals.wait",
                format!(
                    "{} is longer than the hour a call may wait for an approval",
                    humantime::format_duration(wait)
                ),
                "set at most `wait = \"1h\"`; the agent can ask `approval_status` afterwards",
            ));
        }
        config.wait = wait;
    }
    if let Some(expire) = raw.expire_after {
        config.expire_after = expire.duration();
        if let Some(after) = config.expire_after
            && after < config.wait
        {
            return Err(src.invalid(
                "approvals.expire_after",
                format!(
                    "approvals would expire after {} but calls wait {} for them",
                    humantime::format_duration(after),
                    humantime::format_duration(config.wait)
                ),
                "set `expire_after` to at least `wait`, or `\"off\"`",
            ));
        }
    }
    Ok(config)
}
