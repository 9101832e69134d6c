//! Notifications, delivered: the worker that sends the persisted outbox (the
//! ledger's [`Outbox`], filled from the session log) to the operator's
//! `[[notify]]` URLs while the host serves.
//!
//! Each target has a task of its own, so a slow or dead receiver only delays
//! its own entries; every delivery has the target's `timeout`. Delivery is
//! at least once: an entry leaves the outbox only after a 2xx answer, so a
//! host killed mid-delivery sends it again after a restart, with the same
//! `X-Glovebox-Delivery` id. A failed attempt is retried after the target's
//! exponential back-off; after `max_attempts` the entry is kept as `failed`
//! (`glovebox notify status` shows it with its last error).
//!
//! Several hosts on one shared store (`backend = "nats"`) all run this
//! worker; each attempt is preceded by a compare-and-set claim of the entry
//! ([`Outbox::claim`]), so a receiver gets one request per attempt, from
//! whichever host claimed it, not one per host.
//!
//! Only the configured URLs are contacted: redirects are not followed and no
//! proxy is taken from the environment. With a `secret`, each delivery is
//! signed: `X-Glovebox-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
//! "<t>.<body>">`.

use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

pub use glovebox_ledger::notify::{
    DELIVERED_BUCKET, FAILED_BUCKET, Notification, NotifyKind, NotifyObserver, NotifyTarget,
    OUTBOX_BUCKET, Outbox, OutboxEntry, TargetStatus, derive, test_notification,
};

use crate::manifest::NotifyFormat;
use crate::tasks;

/// How often each target's task looks for due entries.
const POLL: Duration = Duration::from_millis(200);
/// Delivered entries are kept this long (for `notify status`), then pruned.
const KEEP_DELIVERED: Duration = Duration::from_secs(7 * 24 * 3600);
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// The part of a refusing receiver's answer kept in the entry's last error.
const MAX_ANSWER: usize = 300;
/// A claim on an entry lasts the target's timeout and this much more (the
/// outbox writes after the answer): long enough that a live host's attempt
/// is never doubled by another host, short enough that a dead host's entry
/// is sent again soon.
const CLAIM_MARGIN_MS: u64 = 10_000;

/// The body a target gets in the `json` format.
#[derive(Serialize)]
struct JsonBody<'a> {
    delivery_id: &'a str,
    target: &'a str,
    #[serde(flatten)]
    notification: &'a Notification,
}

/// The exact bytes `entry` is delivered as, in `format`.
pub fn body(format: NotifyFormat, entry: &OutboxEntry) -> Vec<u8> {
    let value = match format {
        NotifyFormat::Json => serde_json::to_value(JsonBody {
            delivery_id: &entry.delivery_id,
            target: &entry.target,
            notification: &entry.notification,
        })
        .unwrap_or_default(),
        NotifyFormat::Slack => {
            let n = &entry.notification;
            let severity = n.severity.map(|s| format!(" ({s})")).unwrap_or_default();
            // The summary carries what agents wrote (session names, notes,
            // reasons): escaped as Slack documents, so `<!channel>`,
            // `<@U…>` and `<http://…|…>` arrive as text, not as a mention of
            // everyone or a disguised link; and no link is unfurled.
            serde_json::json!({
                "text": slack_escape(&format!("[glovebox] {}{severity}: {}", n.event, n.summary)),
                "unfurl_links": false,
                "unfurl_media": false,
            })
        }
    };
    serde_json::to_vec(&value).unwrap_or_default()
}

/// `text` for a Slack message: `&`, `<` and `>` as `&amp;`, `&lt;` and
/// `&gt;`, the three characters Slack's formatting gives a meaning
/// (https://api.slack.com/reference/surfaces/formatting#escaping), so no
/// mention (`<!channel>`, `<!here>`, `<@U…>`) or link (`<http://…|…>`) is
/// made from it.
pub fn slack_escape(text: &str) -> String {
    escape_markup(text, false)
}

/// `text` with `&`, `<` and `>` as `&amp;`, `&lt;` and `&gt;`, and with
/// `quotes` also `"` and `'` as `&quot;` and `&#39;`: what a Slack message
/// escapes ([`slack_escape`]) and, with the quotes, what HTML does (the
/// dashboard's pages: safe in element content and in quoted attribute
/// values).
pub fn escape_markup(text: &str, quotes: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if quotes => out.push_str("&quot;"),
            '\'' if quotes => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`.
pub fn signature(secret: &str, unix_seconds: u64, body: &[u8]) -> String {
    // HMAC takes a key of any length.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
    mac.update(unix_seconds.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!(
        "t={unix_seconds},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

/// The HTTP client deliveries use: no redirects, no proxy from the
/// environment, rustls.
pub fn client() -> Result<reqwest::Client, NoClient> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .user_agent(concat!("glovebox/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(NoClient)
}

/// The notification HTTP client could not be built (TLS roots, the
/// resolver): nothing can be delivered.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the notification HTTP client: {0}")]
pub struct NoClient(reqwest::Error);

/// Why one delivery attempt failed; the outbox keeps its text as the
/// entry's last error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Undelivered {
    /// No answer came (what the HTTP client said, with its causes).
    #[error("{0}")]
    Request(String),
    /// The receiver answered with a status that is not 2xx; `text` is the
    /// start of its answer, trimmed (empty when it said nothing).
    #[error("the receiver answered {status}{}", shown_answer(.text))]
    Refused {
        status: reqwest::StatusCode,
        text: String,
    },
    /// No answer within the target's `timeout`.
    #[error("no answer within {} (the target's `timeout`)", humantime::format_duration(*.0))]
    TimedOut(Duration),
}

/// `: <text>` after a refusal's status, or nothing when the answer was empty.
fn shown_answer(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    }
}

/// One attempt to deliver `entry` to `target` at `now_ms` (the time a
/// signature carries): `Ok(status)` on a 2xx answer, else what went wrong.
/// Bounded by the target's `timeout`.
pub async fn deliver(
    client: &reqwest::Client,
    target: &NotifyTarget,
    entry: &OutboxEntry,
    now_ms: u64,
) -> Result<u16, Undelivered> {
    let body = body(target.format, entry);
    let mut request = client
        .post(&target.url)
        .timeout(target.timeout)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("X-Glovebox-Delivery", &entry.delivery_id)
        .header("X-Glovebox-Event", &entry.notification.event)
        .header("X-Glovebox-Attempt", (entry.attempts + 1).to_string());
    if let Some(secret) = &target.secret {
        let at = now_ms / 1000;
        request = request.header("X-Glovebox-Signature", signature(secret, at, &body));
    }
    let attempt = async {
        let mut response = request
            .body(body)
            .send()
            .await
            .map_err(|e| Undelivered::Request(describe(&e)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(status.as_u16());
        }
        // A little of the answer says why; the rest is not read.
        let first = response.chunk().await.ok().flatten().unwrap_or_default();
        let text = String::from_utf8_lossy(&first[..first.len().min(MAX_ANSWER)])
            .trim()
            .to_string();
        Err(Undelivered::Refused { status, text })
    };
    match tokio::time::timeout(target.timeout, attempt).await {
        Ok(result) => result,
        Err(_) => Err(Undelivered::TimedOut(target.timeout)),
    }
}

/// A reqwest error in one line, with its causes.
fn describe(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() {
        "timed out".to_string()
    } else if e.is_connect() {
        "cannot connect".to_string()
    } else {
        "request failed".to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// What the worker did with one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempted {
    Delivered,
    RetryLater,
    Failed,
}

/// Attempts every due entry of `target`, oldest first; returns what happened
/// to each. The outbox is updated after each attempt.
pub async fn deliver_due(
    outbox: &Arc<Outbox>,
    client: &reqwest::Client,
    target: &NotifyTarget,
) -> Vec<Attempted> {
    let name = target.name.clone();
    let pending = {
        let outbox = outbox.clone();
        tasks::blocking(
            move || outbox.pending(&name),
            glovebox_store::StorageError::Io,
        )
        .await
    };
    let pending = match pending {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(target = %target.name, error = %e, "notify: cannot read the outbox (retried shortly)");
            return Vec::new();
        }
    };
    let mut done = Vec::new();
    for entry in pending {
        if entry.next_attempt_at_ms > outbox.clock_ms() {
            continue;
        }
        // Claimed for the attempt (the target's timeout and a margin), so
        // that another host on a shared store does not send it too.
        let claimed = {
            let (outbox, entry) = (outbox.clone(), entry.clone());
            let for_ms = u64::try_from(target.timeout.as_millis())
                .unwrap_or(u64::MAX)
                .saturating_add(CLAIM_MARGIN_MS);
            tasks::blocking(
                move || outbox.claim(&entry, outbox.clock_ms(), for_ms),
                glovebox_store::StorageError::Io,
            )
            .await
        };
        let mut entry = match claimed {
            Ok(Some(entry)) => entry,
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!(target = %target.name, delivery = %entry.delivery_id, error = %e, "notify: cannot claim an outbox entry (retried shortly)");
                continue;
            }
        };
        let result = deliver(client, target, &entry, outbox.clock_ms()).await;
        let now = outbox.clock_ms();
        entry.attempts += 1;
        entry.last_attempt_at_ms = Some(now);
        let what = match result {
            Ok(status) => {
                entry.delivered_at_ms = Some(now);
                entry.last_error = None;
                tracing::debug!(target = %target.name, delivery = %entry.delivery_id, status, "notify: delivered");
                Attempted::Delivered
            }
            Err(why) => {
                entry.last_error = Some(why.to_string());
                if entry.attempts >= target.max_attempts {
                    tracing::warn!(target = %target.name, delivery = %entry.delivery_id, attempts = entry.attempts, error = %why, "notify: giving up on a delivery (kept as failed: `glovebox notify status`)");
                    Attempted::Failed
                } else {
                    let wait = target.backoff(entry.attempts);
                    entry.next_attempt_at_ms =
                        now.saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
                    tracing::info!(target = %target.name, delivery = %entry.delivery_id, attempt = entry.attempts, retry_in = %humantime::format_duration(wait), error = %why, "notify: delivery failed; retried later");
                    Attempted::RetryLater
                }
            }
        };
        let saved = {
            let (outbox, entry, what) = (outbox.clone(), entry.clone(), what.clone());
            tasks::blocking(
                move || match what {
                    Attempted::Delivered => outbox.delivered(&entry),
                    Attempted::RetryLater => outbox.retry_later(&entry),
                    Attempted::Failed => outbox.failed(&entry),
                },
                glovebox_store::StorageError::Io,
            )
            .await
        };
        if let Err(e) = saved {
            // A delivered entry still in the outbox is sent again: at least once.
            tracing::warn!(target = %target.name, delivery = %entry.delivery_id, error = %e, "notify: cannot update the outbox entry");
        }
        done.push(what);
    }
    done
}

/// Starts the delivery worker: a task per target, and the pruning of old
/// delivered entries. `None` without targets. Stops when the handle is dropped.
pub fn start(outbox: Arc<Outbox>) -> Option<tasks::Owned<()>> {
    if outbox.targets().is_empty() {
        return None;
    }
    let client = match client() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "notify: no notifications are delivered");
            return None;
        }
    };
    let mut workers = Vec::new();
    for target in outbox.targets().iter().cloned() {
        tracing::info!(target = %target.name, url = %redacted(&target.url), events = ?target.events.iter().map(|k| k.as_str()).collect::<Vec<_>>(), "notify: delivering to a target");
        let (outbox, client, target) = (outbox.clone(), client.clone(), Arc::new(target));
        workers.push(tasks::every(POLL, move || {
            let (outbox, client, target) = (outbox.clone(), client.clone(), target.clone());
            async move {
                deliver_due(&outbox, &client, &target).await;
            }
        }));
    }
    let pruner = outbox.clone();
    workers.push(tasks::every(PRUNE_EVERY, move || {
        let outbox = pruner.clone();
        async move {
            let before = outbox
                .clock_ms()
                .saturating_sub(KEEP_DELIVERED.as_millis() as u64);
            match tasks::blocking(
                move || outbox.prune_delivered(before),
                glovebox_store::StorageError::Io,
            )
            .await
            {
                Ok(0) => {}
                Ok(n) => tracing::info!(removed = n, "notify: pruned old delivered entries"),
                Err(e) => tracing::warn!(error = %e, "notify: cannot prune delivered entries"),
            }
        }
    }));
    Some(tasks::holding(workers))
}

/// A URL for a log line: scheme, host and port only (a Slack webhook's path
/// is its credential).
pub fn redacted(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let cut = rest.len() > host.len();
    format!("{scheme}://{host}{}", if cut { "/…" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_timestamp_dot_body() {
        // Computed independently (Python's hmac module) over "1.<body>".
        assert_eq!(
            signature("Jefe", 1, b"what do ya want for nothing?"),
            "t=1,v1=a9049465ce89cfb8e9aac62333abda66f80e3403f51f57f6bae3c3a4485eca38"
        );
    }

    // Threat 57: agent text in a Slack body is escaped as Slack documents.
    #[test]
    fn threat_57_slack_markup_in_agent_text_is_escaped() {
        assert_eq!(
            slack_escape("<!channel> <!here> <@U123> <http://evil.example|docs> a & b > c"),
            "&lt;!channel&gt; &lt;!here&gt; &lt;@U123&gt; &lt;http://evil.example|docs&gt; a &amp; b &gt; c"
        );
    }

    // Slack's escaping leaves quotes; the HTML one (the dashboard's) does not.
    #[test]
    fn markup_escapes_quotes_only_when_asked() {
        let text = r#"<a title="x" alt='y'>&"#;
        assert_eq!(slack_escape(text), r#"&lt;a title="x" alt='y'&gt;&amp;"#);
        assert_eq!(
            escape_markup(text, true),
            "&lt;a title=&quot;x&quot; alt=&#39;y&#39;&gt;&amp;"
        );
    }

    #[test]
    fn log_lines_show_no_webhook_path() {
        assert_eq!(
            redacted("https://hooks.slack.com/services/T/B/X"),
            "https://hooks.slack.com/…"
        );
        assert_eq!(redacted("http://127.0.0.1:9"), "http://127.0.0.1:9");
    }
}
