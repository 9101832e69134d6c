//! `[approvals]`: how long a call a permission hook asked a human about
//! waits for the answer. Kept apart from the hooks (which decide *that* a
//! human is asked) and from the detector (which flags approvals that wait
//! too long).

use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
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
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            wait: Duration::from_secs(300),
        }
    }
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawApprovals {
    wait: Option<Millis>,
}

pub(super) fn validate_approvals(
    src: &Source,
    raw: &RawApprovals,
) -> Result<ApprovalsConfig, ConfigError> {
    let mut config = ApprovalsConfig::default();
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
    Ok(config)
}
