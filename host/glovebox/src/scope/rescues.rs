//! The rescues of the data dir on behalf of the caller: the `rescues.*`
//! operations run the ledger's rescue calls (`glovebox_ledger::rescue`)
//! through here, off the async threads, with the `[context]` and `[memory]`
//! settings the host serves now (a reload changes who may write the index
//! at once). The rescues are the operator's: the operations say so
//! (`Audience::Operator`), and the ledger keeps its own refusals (a
//! `[context] writers` that leaves rescues out refuses an enrich step).

use super::Scope;
use crate::rescue::{RescueError, Rescues};
use crate::tasks::blocking;

impl Scope<'_> {
    /// Runs `act` on the data dir's rescues, off the async threads.
    pub(crate) async fn rescues<T: Send + 'static>(
        self,
        act: impl FnOnce(&Rescues) -> Result<T, RescueError> + Send + 'static,
    ) -> Result<T, RescueError> {
        let ledger = self.gateway.ledger().clone();
        let host = self.gateway.host();
        blocking(
            move || {
                let config = host.config();
                let rescues = Rescues::new(
                    ledger.sessions.clone(),
                    ledger.storage.clone(),
                    config.context.clone(),
                )
                .with_memory(config.memory.clone());
                act(&rescues)
            },
            |why| {
                RescueError::Storage(crate::storage::StorageError::Io(format!(
                    "the rescues: {why}"
                )))
            },
        )
        .await
    }
}
