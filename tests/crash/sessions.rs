//! Sessions that survive, against the real binary: the trial of docs/threats.md
//! "Durability" that needs a second process holding the data dir and writing.
//!
//! Why here and not in the `all` binary's `sessions` module: the process that holds
//! the data dir is the `append` workload, which only this binary has.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::crash_binary;
use crate::util::Site;

/// Threat 27: a second host process on the same data dir is refused at start.
pub fn a_second_process_on_the_same_data_dir_is_refused() {
    let site = Site::new(true);
    let mut first = crash_binary()
        .arg("append")
        .arg("--config")
        .arg(site.config())
        .args(["--sessions", "1", "--writers", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until it holds the store (it has acknowledged an append).
    let mut lines = BufReader::new(first.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().starts_with("ack "));
    let (code, _, err) = site.run(&["session", "list"]);
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("in use by another glovebox process") && err.contains("pid"),
        "{err}"
    );
    // Once it is gone the data dir opens again.
    let (code, _, err) = site.run(&["session", "list"]);
    assert_eq!(code, 0, "{err}");
}
