//! Threat 43 (a client that holds the HTTP server's connections): a request
//! whose headers never finish is cut off after the header timeout, the
//! connections served at once are capped (`serve --max-connections`), and
//! what waits beyond the cap is served as soon as a slot frees. Over the
//! real binary and raw TCP.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::util::Site;

/// `glovebox serve --http 127.0.0.1:0` with `args`; the process and its address.
fn serve(site: &Site, args: &[&str]) -> (Child, String) {
    let mut child = crate::util::glovebox()
        .arg("--config")
        .arg(site.config())
        .args(["serve", "--http", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("serve printed its address").unwrap();
        if let Some(rest) = line.strip_prefix("glovebox: serving MCP at http://") {
            break rest.trim_end_matches("/mcp").to_string();
        }
    };
    // Keep draining stderr so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    (child, addr)
}

/// A complete request: an HTTP answer comes back (any status).
fn answered(addr: &str, within: Duration) -> bool {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(within)).unwrap();
    write!(
        s,
        "GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1")
}

#[test]
fn threat_43_dribbled_headers_are_cut_off_and_connections_are_capped() {
    let site = Site::new(false);
    let (mut child, addr) = serve(&site, &["--max-connections", "2"]);
    assert!(
        answered(&addr, Duration::from_secs(10)),
        "the server answers"
    );

    // Two connections that send half a request hold both slots...
    let mut holders: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            write!(s, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // ...so a third waits, unanswered...
    assert!(
        !answered(&addr, Duration::from_secs(2)),
        "a connection past the cap was served"
    );
    // ...until the header timeout (10 s) cuts the dribblers off.
    let start = Instant::now();
    for holder in &mut holders {
        holder
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut rest = Vec::new();
        // The server closes it (an answer, if any, then EOF).
        let _ = holder.read_to_end(&mut rest);
    }
    let cut = start.elapsed();
    assert!(cut < Duration::from_secs(20), "held for {cut:?}");
    assert!(
        answered(&addr, Duration::from_secs(10)),
        "a freed slot is served"
    );
    let _ = child.kill();
    let _ = child.wait();
}
