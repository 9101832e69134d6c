//! Work queues (`queue.rs`) on a real server: each item goes to one of the
//! hosts pulling, comes back when handed back or when its holder goes
//! silent past the ack wait, stays while its holder says it is at work, and
//! is gone once acknowledged.

use std::time::{Duration, Instant};

use glovebox_store::{Durability, Storage};

use crate::testing::NatsServer;
use crate::{NatsConfig, NatsStore};

fn host(url: &str) -> NatsStore {
    NatsStore::open(&NatsConfig::new(url.to_string()), Durability::Flush).unwrap()
}

#[test]
fn a_work_queue_hands_each_item_to_one_host_and_back_when_its_holder_goes_silent() {
    let tmp = tempfile::tempdir().unwrap();
    let server = NatsServer::start(tmp.path(), true);
    let (a, b) = (host(&server.url()), host(&server.url()));
    let ack_wait = Duration::from_secs(1);
    let qa = a
        .work_queue("jobs", ack_wait)
        .unwrap()
        .expect("a queue on NATS");
    // The second host joins the same queue (and gets the wait it was made with).
    let qb = b
        .work_queue("jobs", Duration::from_secs(30))
        .unwrap()
        .unwrap();
    assert_eq!(qb.ack_wait(), ack_wait);
    let wait = Duration::from_millis(500);
    assert!(qa.pull(wait).unwrap().is_none(), "an empty queue");

    qa.push("job-1").unwrap();
    qb.push("job-2").unwrap();
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
