//! Work queues (`queue.rs`) on a real server: each item goes to one of the
//! hosts pulling, comes back when handed back or when its holder goes
//! silent past the ack wait, stays while its holder says it is at work, and
//! is gone once acknowledged; groups take turns.

use std::time::{Duration, Instant};

use glovebox_store::{Durability, Storage};

use crate::{NatsConfig, NatsStore};

fn host(url: &str) -> NatsStore {
    NatsStore::open(&NatsConfig::new(url.to_string()), Durability::Flush).unwrap()
}

#[test]
fn a_work_queue_hands_each_item_to_one_host_and_back_when_its_holder_goes_silent() {
    let (_tmp, server) = super::server();
    let (a, b) = (host(&server.url()), host(&server.url()));
    let ack_wait = Duration::from_secs(1);
    let qa = a
        .work_queue("jobs", ack_wait)
        .unwrap()
        .expect("a queue on NATS");
    // The second host joins the same queue.
    let qb = b.work_queue("jobs", ack_wait).unwrap().unwrap();
    assert_eq!(qb.ack_wait(), ack_wait);
    let wait = Duration::from_millis(500);
    assert!(qa.pull(wait).unwrap().is_none(), "an empty queue");

    qa.push("job-1", "agent").unwrap();
    qb.push("job-2", "agent").unwrap();
    let one = qa.pull(wait).unwrap().expect("job-1");
    let two = qb.pull(wait).unwrap().expect("job-2");
    assert_eq!((one.item(), one.delivered()), ("job-1", 1));
    assert_eq!((two.item(), two.delivered()), ("job-2", 1));
    assert!(
        qa.pull(wait).unwrap().is_none(),
        "each item is with one host"
    );

    // Handed back: another host gets it again.
    one.nak(Duration::ZERO).unwrap();
    let again = qb.pull(wait).unwrap().expect("job-1 again");
    assert_eq!((again.item(), again.delivered()), ("job-1", 2));
    again.ack().unwrap();

    // Kept alive past several ack waits, it stays with its holder.
    let until = Instant::now() + 3 * ack_wait;
    while Instant::now() < until {
        two.in_progress().unwrap();
        assert!(qa.pull(ack_wait / 3).unwrap().is_none(), "job-2 is at work");
    }
    // Its holder goes silent (a host that died): it comes back to another.
    drop(two);
    let back = qa.pull(3 * ack_wait).unwrap().expect("job-2 back");
    assert_eq!((back.item(), back.delivered()), ("job-2", 2));
    back.ack().unwrap();

    // Acknowledged items never come back.
    assert!(qa.pull(2 * ack_wait).unwrap().is_none());
    assert!(qb.pull(wait).unwrap().is_none());
}

/// One group pushes many items, then another group one: a host pulling
/// gets the second group's item second, not after the first group's whole
/// backlog; then the groups keep taking turns, and each group's items come
/// in the order they were pushed. Two groups whose names differ only in
/// bytes NATS escapes stay two groups.
#[test]
fn groups_take_turns_in_a_work_queue() {
    let (_tmp, server) = super::server();
    let a = host(&server.url());
    let q = a
        .work_queue("jobs", Duration::from_secs(30))
        .unwrap()
        .unwrap();
    for n in 1..=5 {
        q.push(&format!("flood-{n}"), "flood.bot").unwrap();
    }
    q.push("quiet-1", "quiet bot").unwrap();
    q.push("quiet-2", "quiet bot").unwrap();
    q.push("other-1", "flood/bot").unwrap();
    let mut order = Vec::new();
    while let Some(d) = q.pull(Duration::from_millis(300)).unwrap() {
        order.push(d.item().to_string());
        d.ack().unwrap();
    }
    assert_eq!(order.len(), 8, "{order:?}");
    let first_quiet = order.iter().position(|i| i == "quiet-1").unwrap();
    let first_other = order.iter().position(|i| i == "other-1").unwrap();
    assert!(first_quiet < 3 && first_other < 3, "{order:?}");
    // Within a group, first in first out.
    let flood: Vec<_> = order.iter().filter(|i| i.starts_with("flood-")).collect();
    assert_eq!(
        flood,
        ["flood-1", "flood-2", "flood-3", "flood-4", "flood-5"]
    );
    let quiet: Vec<_> = order.iter().filter(|i| i.starts_with("quiet-")).collect();
    assert_eq!(quiet, ["quiet-1", "quiet-2"]);
    // The flood's last three come after both other groups ran dry.
    assert!(
        order[5..].iter().all(|i| i.starts_with("flood-")),
        "{order:?}"
    );
}

#[test]
fn the_embedded_stores_have_no_work_queue() {
    let dir = tempfile::tempdir().unwrap();
    let sled = glovebox_store::SledStore::open(dir.path(), Durability::Flush).unwrap();
    assert!(
        sled.work_queue("jobs", Duration::from_secs(1))
            .unwrap()
            .is_none()
    );
}
