//! `[[trigger]]`: work the host starts when something happens, as the
//! trigger's own principal (`trigger:<name>`, see `manifest::Run`).
//!
//! Event triggers listen where notifications come from: the ledger tells
//! every [`NotifyObserver`] what each acknowledged event means (a job
//! finished or failed, a flag, a session completed, ...), the same
//! derivation the `[[notify]]` outbox uses, so there is one notion of "what
//! happened" and no polling. The observer only hands the notification to
//! the trigger worker (a bounded queue; the append never waits for it);
//! the worker runs the matching triggers one at a time. Events that a
//! trigger caused do not fire triggers, so triggers cannot chain into a
//! loop; events an agent causes in a loop fire a trigger at most once per
//! its `cooldown` ([`cooldown`]).
//!
//! Webhook triggers are `POST /hooks/<name>` on the admin listener, signed
//! like our notifications: `X-Glovebox-Signature: t=<unix seconds>,v1=<hex
//! HMAC-SHA256(secret, "<t>.<body>")>`, checked in constant time, within
//! [`WEBHOOK_SKEW`] of now (an old request is refused), and taken once: the
//! same request sent again within that window is refused too ([`replay`]).

pub mod cooldown;
pub mod replay;

pub use replay::WEBHOOK_SKEW;

use std::sync::Arc;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::gateway::Gateway;
use crate::manifest::{TriggerConfig, TriggerOn};
use crate::notify::{Notification, NotifyKind};
use crate::schedule::records::{self, Records};
use crate::schedule::{RunOutcome, record_run};
use crate::tasks;
use cooldown::Cooldowns;
use glovebox_ledger::notify::NotifyObserver;

/// Notifications waiting for the trigger worker; past this they are dropped
/// (and logged), so a flood of events never holds the log's appends.
const QUEUE: usize = 1024;
/// The largest webhook body taken.
pub const WEBHOOK_MAX_BODY: usize = 64 * 1024;

/// The ledger's side: hands each notification to the worker.
#[derive(Debug)]
struct Tap(mpsc::Sender<(NotifyKind, Notification)>);

impl NotifyObserver for Tap {
    fn raised(&self, by: Option<&str>, kind: NotifyKind, notification: &Notification) {
        if by.is_some_and(|by| by.starts_with("trigger:")) {
            return;
        }
        if let Err(mpsc::error::TrySendError::Full(_)) =
            self.0.try_send((kind, notification.clone()))
        {
            tracing::warn!(event = %kind, session = %notification.session, "trigger: the queue is full; this event fires no trigger");
        }
    }
}

/// Why a webhook request is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum WebhookRefusal {
    /// No webhook trigger of that name.
    Unknown,
    /// The signature is missing, malformed, stale or wrong.
    Unsigned(String),
    /// The same signed request was taken already (threat 57).
    Replayed(String),
    /// It cannot be remembered now (too many within the window, or the
    /// store failed): try again later.
    Busy(String),
}

/// Starts the trigger worker when the config has event triggers at
/// start (a reload's changes to them count from the next event, and
/// a changed `cooldown` from the reload for events already folded; the
/// first event trigger needs a restart). It stops when the handle is
/// dropped.
pub fn start(gateway: &Gateway) -> Option<tasks::Owned<()>> {
    let events = gateway
        .host()
        .config()
        .triggers
        .iter()
        .filter(|t| t.on != TriggerOn::Webhook)
        .count();
    if events == 0 {
        return None;
    }
    let (tx, mut rx) = mpsc::channel(QUEUE);
    gateway.sessions().observe_notifications(Arc::new(Tap(tx)));
    tracing::info!(triggers = events, "event triggers listen");
    let gateway = gateway.clone();
    let mut reloads = gateway.reloads();
    Some(tasks::owned(async move {
        let mut cooldowns = Cooldowns::default();
        loop {
            let config = gateway.host().config().clone();
            let cooldown_of = |name: &str| {
                config
                    .triggers
                    .iter()
                    .find(|t| t.name == name)
                    .map(|t| t.cooldown)
            };
            let next = cooldowns.next_due(cooldown_of);
            let event = tokio::select! {
                event = rx.recv() => match event {
                    Some(event) => Some(event),
                    None => break,
                },
                () = sleep_until(next) => None,
                // A reload may change a cooldown: when the folded
                // events are due is worked out again.
                Ok(()) = reloads.changed() => None,
            };
            let mut fires = Vec::new();
            if let Some((kind, n)) = event {
                for trigger in config.triggers.iter().filter(|t| {
                    t.on.fires_on(kind, n.severity)
                        && t.from_project.as_ref().is_none_or(|p| *p == n.project)
                }) {
                    let cause = format!(
                        "`{kind}` in session `{}` (event {}): {}",
                        n.session_name.as_deref().unwrap_or(&n.session),
                        n.seq,
                        n.summary
                    );
                    let now = Instant::now();
                    match cooldowns.offer(&trigger.name, trigger.cooldown, cause, now) {
                        Some(fire) => fires.push((trigger.clone(), fire)),
                        None => {
                            tracing::debug!(trigger = %trigger.name, event = %kind, "trigger: an event within the cooldown, folded into the next run")
                        }
                    }
                }
            }
            for (name, fire) in cooldowns.due(cooldown_of, Instant::now()) {
                if let Some(trigger) = config.triggers.iter().find(|t| t.name == name) {
                    tracing::info!(trigger = %name, folded = fire.folded, "trigger: events folded by the cooldown run it once");
                    fires.push((trigger.clone(), fire));
                }
            }
            for (trigger, fire) in fires {
                fire_folded(&gateway, &trigger, &fire.cause, fire.folded).await;
            }
        }
    }))
}

/// Runs `trigger` now, noting `cause`, and records the outcome.
pub async fn fire(gateway: &Gateway, trigger: &TriggerConfig, cause: &str) -> RunOutcome {
    fire_folded(gateway, trigger, cause, 0).await
}

/// [`fire`] for a run that stands for `folded` events
/// its cooldown held back, counted in its record.
async fn fire_folded(
    gateway: &Gateway,
    trigger: &TriggerConfig,
    cause: &str,
    folded: u64,
) -> RunOutcome {
    let principal = trigger.run.principal("trigger", &trigger.name);
    let started = gateway.sessions().clock_ms();
    let outcome = crate::schedule::run::run_action(gateway, &principal, &trigger.run, cause).await;
    let records = Records(gateway.ledger().storage.clone());
    record_run(
        &records,
        &records::key("trigger", &trigger.name),
        started,
        &outcome,
        folded,
    )
    .await;
    outcome
}

/// A webhook for trigger `name`: checks its signature (`header`, the
/// `X-Glovebox-Signature` value) against the trigger's secret at
/// `now_s` (unix seconds), then runs it.
pub async fn fire_webhook(
    gateway: &Gateway,
    name: &str,
    header: Option<&str>,
    body: &[u8],
    now_s: u64,
) -> Result<RunOutcome, WebhookRefusal> {
    let trigger = gateway
        .host()
        .config()
        .triggers
        .iter()
        .find(|t| t.name == name && t.on == TriggerOn::Webhook)
        .cloned()
        .ok_or(WebhookRefusal::Unknown)?;
    let secret = trigger.secret.as_deref().ok_or(WebhookRefusal::Unknown)?;
    let (signed_s, mac) = verify_signature(secret, header, body, now_s)
        .map_err(|bad| WebhookRefusal::Unsigned(bad.to_string()))?;
    // Remembered before it runs: of two copies sent at once, one runs.
    let seen = gateway.webhooks_seen().clone();
    let name_owned = name.to_string();
    let taken = tasks::blocking(
        move || Ok(seen.take(&name_owned, signed_s, &mac, now_s)),
        |why: String| why,
    )
    .await
    .unwrap_or_else(|why| Err(replay::Refused::Store(why)));
    match taken {
        Ok(()) => {}
        Err(replay::Refused::Replayed { until_s }) => {
            return Err(WebhookRefusal::Replayed(format!(
                "this signed request was taken already; the same signature is refused until {} (unix seconds {until_s}): sign each delivery anew",
                crate::schedule::show_ms(until_s.saturating_mul(1000))
            )));
        }
        Err(replay::Refused::Full) => {
            return Err(WebhookRefusal::Busy(format!(
                "{} webhook deliveries are remembered within the {} s replay window: try again later",
                replay::SEEN_MAX,
                WEBHOOK_SKEW.as_secs()
            )));
        }
        Err(replay::Refused::Store(why)) => {
            return Err(WebhookRefusal::Busy(format!(
                "the delivery cannot be remembered ({why}): try again later"
            )));
        }
    }
    let cause = format!(
        "a webhook ({} bytes, sha256 {})",
        body.len(),
        hex::encode(Sha256::digest(body))
    );
    Ok(fire(gateway, &trigger, &cause).await)
}

/// Why a webhook's `X-Glovebox-Signature` does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadSignature {
    #[error("no `X-Glovebox-Signature` header")]
    Missing,
    #[error("the signature is not `t=<unix seconds>,v1=<hex>`")]
    Malformed,
    /// The signed time is further from now than the window allows (seconds).
    #[error("the signed time is more than {0} s from now")]
    Stale(u64),
    #[error("the signature does not match")]
    Mismatch,
}

/// Checks `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`;
/// the signed time and the MAC when it holds.
pub fn verify_signature(
    secret: &str,
    header: Option<&str>,
    body: &[u8],
    now_s: u64,
) -> Result<(u64, Vec<u8>), BadSignature> {
    let header = header.ok_or(BadSignature::Missing)?;
    let (mut t, mut v1) = (None, None);
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => t = value.parse::<u64>().ok(),
            Some(("v1", value)) => v1 = hex::decode(value).ok(),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else {
        return Err(BadSignature::Malformed);
    };
    if t.abs_diff(now_s) > WEBHOOK_SKEW.as_secs() {
        return Err(BadSignature::Stale(WEBHOOK_SKEW.as_secs()));
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.verify_slice(&v1).map_err(|_| BadSignature::Mismatch)?;
    Ok((t, v1))
}

/// Sleeps until `at`; never wakes without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::signature;

    #[test]
    fn a_webhook_signature_is_checked_in_full() {
        let secret = "0123456789abcdef";
        let body = br#"{"deploy":"done"}"#;
        let good = signature(secret, 1000, body);
        assert_eq!(
            verify_signature(secret, Some(&good), body, 1000).map(|(t, _)| t),
            Ok(1000)
        );
        assert!(verify_signature(secret, Some(&good), body, 1200).is_ok());
        // Another body, another secret, a stale time, no header, garbage.
        assert!(verify_signature(secret, Some(&good), b"{}", 1000).is_err());
        assert!(verify_signature("another-secret-16", Some(&good), body, 1000).is_err());
        let stale = verify_signature(secret, Some(&good), body, 1000 + 301).unwrap_err();
        assert_eq!(
            stale.to_string(),
            "the signed time is more than 300 s from now"
        );
        assert!(verify_signature(secret, None, body, 1000).is_err());
        assert!(verify_signature(secret, Some("sha256=abc"), body, 1000).is_err());
    }
}
