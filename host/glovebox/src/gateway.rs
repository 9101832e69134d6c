//! The gateway: the hands ([`Host`]: plugins, hooks, admission) and the
//! ledger ([`Durable`]: the sessions, approvals and records in the data dir)
//! held together, and every way a call comes in. Adapters (MCP, the CLI, the
//! jobs runner) hold one `Gateway` and nothing else; each of its entry points
//! ends in the one pipeline (`pipeline/`).

use std::path::Path;
use std::sync::{Arc, RwLock};

use crate::admitted::Admitted;
use crate::budget;
use crate::error::CallError;
use crate::host::Host;
use crate::ledger::{Durable, open_sessions};
use crate::manifest::Principal;
use crate::session::{Event, SessionError, Sessions};
use crate::settled::{Settled, Waiters};
use crate::spend::{Breach, SpendConfig};
use crate::tasks;
use crate::tasks::ledger_work;

/// The host and its ledger; cheap to clone. Every clone sees the same host,
/// including after a [`Gateway::reload`].
#[derive(Clone)]
pub struct Gateway {
    /// The host calls are admitted by now. A reload swaps it; a call keeps
    /// the host it was admitted by until it ends.
    host: Arc<RwLock<Arc<Host>>>,
    ledger: Arc<Durable>,
    /// One reload at a time.
    reloading: Arc<tokio::sync::Mutex<()>>,
    /// Bumped by every reload that took: adapters holding connections look
    /// their principals up again (see [`Gateway::reloads`]).
    reloads: Arc<tokio::sync::watch::Sender<u64>>,
    /// Calls waiting for their approval to be settled.
    waiters: Waiters,
    /// What the pipeline counts (`/metrics`).
    metrics: Arc<crate::metrics::Metrics>,
    /// Requests an adapter received and has not answered yet (see
    /// [`Gateway::request`]), and whether a drain has begun.
    requests: Arc<Requests>,
    /// Bumped when a child session may have settled (`session_wait`).
    children: crate::children::ChildBell,
    /// Renews the session leases this host holds, on a shared store.
    _leases: Option<Arc<tasks::Owned<()>>>,
    /// The webhook deliveries taken, so a replay is refused (threat 57).
    webhooks: Arc<crate::triggers::replay::Seen>,
    /// The `[[verify]]` checks' failures in a row, by (session id, check).
    pub(crate) verify_streaks:
        Arc<std::sync::Mutex<std::collections::HashMap<(String, String), u32>>>,
    /// What agents should hear on their live connections (`notices.rs`).
    notices: crate::notices::Notices,
}

/// The adapters' requests in flight, for a stopping server's drain.
#[derive(Default)]
struct Requests {
    open: std::sync::atomic::AtomicUsize,
    draining: tokio::sync::watch::Sender<bool>,
}

/// One request in flight (see [`Gateway::request`]); it ends when dropped.
pub struct InFlight(Arc<Requests>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0
            .open
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// What a reload put in place.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Reloaded {
    /// The config file read again.
    pub config: std::path::PathBuf,
    /// The tools now served, by name.
    pub tools: Vec<String>,
    /// The permission hooks now judging calls: name and component digest
    /// (`None` for a hook that did not load and so denies every call).
    pub hooks: Vec<(String, Option<String>)>,
}

/// The gateway bound to one caller: every operation that depends on who
/// calls is a method of it (`scope/`, one file per family, whose module docs
/// say why in one place). Declared here, beside the gateway it borrows, so
/// that [`Gateway::scope`] is the gateway's own and the gateway is one
/// `impl` in one file. Cheap: a few references.
#[derive(Clone, Copy)]
pub struct Scope<'g> {
    pub(crate) gateway: &'g Gateway,
    pub(crate) caller: &'g Principal,
    /// The session the caller acts from, if any: an MCP connection's bound
    /// session ([`Scope::acting_from`]).
    pub(crate) session: Option<&'g str>,
    /// The jobs runner, where the surface has one ([`Scope::with_jobs`]):
    /// it is started over the gateway, not part of it.
    pub(crate) jobs: Option<&'g Arc<crate::jobs::Jobs>>,
}

impl Gateway {
    /// The gateway on behalf of `caller`: every operation that depends on
    /// who calls (see [`Scope`]).
    pub fn scope<'g>(&'g self, caller: &'g Principal) -> Scope<'g> {
        Scope {
            gateway: self,
            caller,
            session: None,
            jobs: None,
        }
    }

    pub fn new(host: Arc<Host>, ledger: Arc<Durable>) -> Gateway {
        let metrics: Arc<crate::metrics::Metrics> = Arc::default();
        ledger.storage.observe_flushes(metrics.flush_observer());
        host.observe_admission_waits(metrics.admission_wait_observer());
        let children = crate::children::ChildBell::default();
        ledger.sessions.observe_children(Arc::new(children.clone()));
        let waiters = Waiters::default();
        ledger.sessions.observe_approvals(Arc::new(waiters.clone()));
        let notices = crate::notices::Notices::default();
        ledger.sessions.observe_handovers(Arc::new(notices.clone()));
        let leases = tasks::lease_renewal(&ledger.sessions).map(Arc::new);
        ledger
            .sessions
            .tallies()
            .configure(SpendConfig::of(host.config()));
        let webhooks = Arc::new(crate::triggers::replay::Seen::new(ledger.storage.clone()));
        host.set_held(crate::tool_text::holds(&*ledger.storage, host.all_tools()));
        Gateway {
            host: Arc::new(RwLock::new(host)),
            ledger,
            reloading: Arc::default(),
            reloads: Arc::new(tokio::sync::watch::Sender::new(0)),
            waiters,
            metrics,
            requests: Arc::default(),
            children,
            _leases: leases,
            webhooks,
            verify_streaks: Arc::default(),
            notices,
        }
    }

    /// The notices for agents' live connections sent from now on
    /// (`notices.rs`): an adapter forwards those of the sessions a
    /// connection acts in.
    pub fn session_notices(
        &self,
    ) -> tokio::sync::broadcast::Receiver<Arc<crate::notices::SessionNotice>> {
        self.notices.subscribe()
    }

    /// The webhook deliveries taken (`triggers::replay`).
    pub(crate) fn webhooks_seen(&self) -> &Arc<crate::triggers::replay::Seen> {
        &self.webhooks
    }

    /// Rung when a child session may have settled.
    pub(crate) fn child_bell(&self) -> &crate::children::ChildBell {
        &self.children
    }

    /// Counts a request an adapter received (an MCP `tools/call`) until the
    /// guard is dropped with its answer: a stopping server's drain
    /// ([`Gateway::wait_idle`]) waits for it even before its call is
    /// admitted to run.
    pub fn request(&self) -> InFlight {
        self.requests
            .open
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        InFlight(self.requests.clone())
    }

    /// Loads the host from the config at `path` and opens its data dir
    /// (refused while another process holds it; calls that were in flight when
    /// the last process died are marked interrupted).
    pub async fn open(path: &Path) -> anyhow::Result<Gateway> {
        let host = Arc::new(Host::from_config_file(path).await?);
        let ledger = Arc::new(open_sessions(host.config())?);
        Ok(Gateway::new(host, ledger))
    }

    /// [`Gateway::open`] without the config's plugins ([`Host::without_tools`]):
    /// for an operation that runs no tool, from the command line while no
    /// server holds the data dir.
    pub async fn open_without_tools(path: &Path) -> anyhow::Result<Gateway> {
        let config = crate::load_config(path).await?;
        let host = Arc::new(Host::without_tools(config).await?);
        let ledger = Arc::new(open_sessions(host.config())?);
        Ok(Gateway::new(host, ledger))
    }

    /// The host as it is now (a reload swaps it; what is taken here stays
    /// as it was for as long as it is held).
    pub fn host(&self) -> Arc<Host> {
        self.host
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Changes at every reload that took: an adapter that holds connections
    /// waits on it to end those of principals the new config no longer
    /// declares.
    pub fn reloads(&self) -> tokio::sync::watch::Receiver<u64> {
        self.reloads.subscribe()
    }

    /// What the pipeline counts.
    pub(crate) fn metrics(&self) -> &crate::metrics::Metrics {
        &self.metrics
    }

    /// The metrics in Prometheus' text format: the pipeline's counters and
    /// what the ledger holds now (read here, off the async threads).
    pub async fn metrics_text(&self) -> Result<String, SessionError> {
        let ledger = self.ledger.clone();
        let host = self.host();
        let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let admission = crate::metrics::Admission {
            calls_in_flight: gauge(host.calls_in_flight() as u64),
            call_slots: gauge(u64::from(host.config().runtime.max_concurrent_calls)),
            memory_reserved_bytes: gauge(host.memory_reserved()),
            memory_budget_bytes: gauge(host.config().runtime.memory_budget),
            calls_waiting: gauge(host.admission_waiting().0 as u64),
            hooks_waiting: gauge(host.admission_waiting().1 as u64),
        };
        let mut snapshot = ledger_work(move || snapshot(&ledger)).await?;
        snapshot.admission = admission;
        Ok(self.metrics.encode(&snapshot))
    }

    /// Waits until no call runs (a stopping server's drain), up to
    /// `within`; `false` when calls still run then.
    /// Waits for approvals stop waiting from here on: their calls answer
    /// "awaiting approval" (the approval stays pending, also across the
    /// restart), so a client waiting on a human does not hold the drain.
    pub async fn wait_idle(&self, within: std::time::Duration) -> bool {
        self.requests.draining.send_replace(true);
        let deadline = tokio::time::Instant::now() + within;
        let open = || self.requests.open.load(std::sync::atomic::Ordering::SeqCst);
        while self.host().calls_in_flight() > 0 || open() > 0 {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        true
    }

    /// Reads the config, its plugins and hooks again and serves them from
    /// now on (`glovebox reload`, SIGHUP). A config that does not load, or
    /// that changes what a running server cannot (see [`Host::reloaded`]),
    /// is refused with the reason and the current one keeps serving. Calls
    /// already admitted finish under the host that admitted them.
    pub async fn reload(&self) -> anyhow::Result<Reloaded> {
        let _one = self.reloading.lock().await;
        let next = Arc::new(self.host().reloaded().await?);
        next.set_held(crate::tool_text::holds(
            &*self.ledger.storage,
            next.all_tools(),
        ));
        let reloaded = Reloaded {
            config: next.config().path.clone(),
            tools: next.tools().iter().map(|t| t.name.clone()).collect(),
            hooks: next
                .hooks()
                .hooks()
                .into_iter()
                .map(|h| (h.name, h.digest))
                .collect(),
        };
        // The ceilings and quotas across sessions follow the config too.
        self.sessions()
            .tallies()
            .configure(SpendConfig::of(next.config()));
        *self
            .host
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = next;
        self.reloads.send_modify(|n| *n += 1);
        tracing::info!(config = %reloaded.config.display(), tools = reloaded.tools.len(), hooks = reloaded.hooks.len(), "reloaded the config, plugins and hooks");
        Ok(reloaded)
    }

    /// Reads again which tools are held for their text (after an operator
    /// accepted some), and tells the connections their tool list changed.
    pub(crate) fn refresh_holds(&self) {
        let host = self.host();
        host.set_held(crate::tool_text::holds(
            &*self.ledger.storage,
            host.all_tools(),
        ));
        self.reloads.send_modify(|n| *n += 1);
    }

    pub fn ledger(&self) -> &Arc<Durable> {
        &self.ledger
    }

    pub fn sessions(&self) -> &Arc<Sessions> {
        &self.ledger.sessions
    }

    /// Stage one of the pipeline, for adapters that check a request before
    /// they commit to it: see [`Host::admit`].
    pub fn admit(&self, tool: &str, input: &str) -> Result<Admitted, CallError> {
        self.host().admit(tool, input)
    }

    /// The calls waiting for their approval to be settled.
    pub(crate) fn waiters(&self) -> &Waiters {
        &self.waiters
    }

    /// Waits up to `within` for approval `id` to be settled by whoever
    /// settles it (`glovebox approve` or `deny` through the control
    /// socket). `None`: still pending; it stays pending.
    pub async fn wait_for_approval(
        &self,
        id: &str,
        within: std::time::Duration,
    ) -> Option<Settled> {
        let mut draining = self.requests.draining.subscribe();
        tokio::select! {
            settled = self.waiters.wait(&self.ledger.approvals, id, within) => settled,
            // The server is stopping: the approval stays pending.
            _ = draining.wait_for(|d| *d) => None,
        }
    }

    /// Logs usage the brain reports (tokens, model cost) into `session`; its
    /// cost counts toward the session's cost cap. See [`budget::report_usage`].
    /// A caller reports through its scope (`Scope::report_usage`).
    pub(crate) async fn report_usage(
        &self,
        session: &str,
        usage: budget::UsageReport,
    ) -> Result<Vec<Event>, SessionError> {
        let budgets = self.host().config().budgets.clone();
        let sessions = self.sessions().clone();
        let key = session.to_string();
        ledger_work(move || budget::report_usage(&sessions, &budgets, &key, &usage)).await
    }

    /// The data dir's memory bank, with the config's `[memory]` settings
    /// (the rules are the ledger's, `glovebox_ledger::memory`; proposing and
    /// searching from a session are the caller's scope's, `scope/memory.rs`).
    pub fn memory_bank(&self) -> crate::memory::MemoryBank {
        crate::memory::MemoryBank::new(
            self.ledger().storage.clone(),
            self.host().config().memory.clone(),
        )
    }

    /// Checks a completion condition a caller declares (at a start or a
    /// spawn): every gate names a tool this host has, with a small object
    /// input. The error names the gate and the fix. Running a session's
    /// gates at `session_end completed` is the caller's scope's
    /// (`Scope::end_checked`, in `scope/completion.rs`).
    pub fn check_completion(
        &self,
        completion: &crate::manifest::Completion,
    ) -> Result<(), SessionError> {
        let host = self.host();
        completion
            .check(|tool| host.resolve(tool).is_ok())
            .map_err(|e| SessionError::InvalidInput(format!("completion condition: {e}")))
    }

    /// The principals of the config served now (see [`Principals`](crate::principals::Principals)).
    pub fn principals(&self) -> crate::principals::Principals {
        crate::principals::Principals::new(self.host())
    }

    /// The tags only the operator may set (`manifest::pinned_tags`).
    pub(crate) fn reserved_tags(&self) -> std::collections::HashSet<String> {
        crate::manifest::pinned_tags(&self.host().config().principals)
    }

    /// Whether `caller` may see session `id` (an id, as jobs record it).
    pub(crate) fn sees_session(&self, caller: &Principal, id: &str) -> bool {
        caller.is_operator()
            || self
                .sessions()
                .show(id)
                .is_ok_and(|s| crate::session::may_touch(caller, s.owner_name()))
    }

    /// Pauses, in the background and as the host, the active sessions of
    /// the scope whose ceiling `breach` reached, but `except` (paused
    /// already): see [`crate::ceilings::pause_scope`].
    pub(crate) fn pause_scope(&self, breach: &Breach, except: &str) {
        let (sessions, breach, except) =
            (self.sessions().clone(), breach.clone(), except.to_string());
        tasks::host_task(async move {
            let paused = ledger_work(move || {
                crate::session::actor::scoped(crate::session::actor::HOST, || {
                    crate::ceilings::pause_scope(&sessions, &breach, &except)
                })
            })
            .await;
            match paused {
                Ok(ids) if !ids.is_empty() => {
                    tracing::warn!(
                        sessions = ids.len(),
                        "paused the sessions of a scope at a spend ceiling"
                    )
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "could not pause the sessions of a scope at a spend ceiling; each is refused at its next call")
                }
            }
        });
    }
}

/// What the ledger holds now, for the gauges of a scrape.
fn snapshot(ledger: &Durable) -> Result<crate::metrics::Snapshot, SessionError> {
    use std::collections::BTreeMap;
    let count = |map: &mut BTreeMap<String, i64>, key: String| *map.entry(key).or_default() += 1;
    let (mut sessions, mut flags) = (BTreeMap::new(), BTreeMap::new());
    // The live sessions (the live index: a scrape reads as many as are
    // live, not every session the store ever held).
    for info in ledger.sessions.walk_live()? {
        let info = info?;
        count(&mut sessions, info.header.status.to_string());
        if let Ok(state) = ledger.sessions.show(&info.header.id) {
            for (rule, flag) in &state.watch.flags {
                *flags
                    .entry((rule.clone(), flag.severity.to_string()))
                    .or_default() += 1;
            }
        }
    }
    // Counted through the jobs' indexes, never their bodies.
    let jobs: BTreeMap<String, i64> = crate::jobs::JobStore::new(ledger.storage.clone())
        .counts()
        .map_err(|e| SessionError::InvalidInput(e.to_string()))?
        .into_iter()
        .map(|(status, n)| (status.to_string(), i64::try_from(n).unwrap_or(i64::MAX)))
        .collect();
    let approvals_pending =
        i64::try_from(ledger.approvals.count_pending(usize::MAX)?).unwrap_or(i64::MAX);
    let outbox_depth = ledger
        .outbox
        .depth()
        .map(|n| i64::try_from(n).unwrap_or(i64::MAX))
        .unwrap_or(0);
    Ok(crate::metrics::Snapshot {
        sessions_by_status: sessions.into_iter().collect(),
        jobs_by_status: jobs.into_iter().collect(),
        approvals_pending,
        flags: flags.into_iter().collect(),
        outbox_depth,
        outbox_dropped: ledger
            .outbox
            .dropped()
            .unwrap_or_default()
            .into_iter()
            .map(|(target, count)| (target, count.dropped))
            .collect(),
        admission: Default::default(),
    })
}
