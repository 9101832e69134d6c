//! Completion conditions at the gateway: the check of one a caller
//! declares. Running a session's gates at `session_end completed` is the
//! caller's scope's (`Scope::end_checked`, in `scope/completion.rs`).

use crate::gateway::Gateway;
use crate::manifest::Completion;
use crate::session::SessionError;

impl Gateway {
    /// Checks a completion condition a caller declares (at a start or a
    /// spawn): every gate names a tool this host has, with a small object
    /// input. The error names the gate and the fix.
    pub fn check_completion(&self, completion: &Completion) -> Result<(), SessionError> {
        let host = self.host();
        completion
            .check(|tool| host.resolve(tool).is_ok())
            .map_err(|e| SessionError::InvalidInput(format!("completion condition: {e}")))
    }
}
