//! The address ranges a tool may reach only when the operator grants the address
//! itself: everything that is not a public unicast address of the internet.
//!
//! One table per family, each range with the name a denial gives. IPv6 forms that
//! carry an IPv4 address are judged by that IPv4 address (IPv4-mapped, the NAT64
//! well-known prefix), or refused whole when the IPv4 address inside them is a
//! tunnel end or a translator the host cannot see through (6to4, Teredo,
//! IPv4-compatible, local-use NAT64): a resolver that answers `64:ff9b::a9fe:a9fe`
//! must not reach the cloud-metadata service at `169.254.169.254`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use ipnet::{Ipv4Net, Ipv6Net};

/// A table's rows as written (a range in the RFCs' notation, and the name a
/// denial gives), parsed once. A row that does not parse fails the tests,
/// which read every table.
fn parsed<N>(rows: &[(&str, &'static str)]) -> Vec<(N, &'static str)>
where
    N: std::str::FromStr,
    N::Err: std::fmt::Debug,
{
    rows.iter()
        .map(|(net, why)| (net.parse().expect("a range of the table"), *why))
        .collect()
}

/// IPv4 ranges that are not public (IANA special-purpose registry, RFC 6890 and later).
pub static RESTRICTED_V4: LazyLock<Vec<(Ipv4Net, &str)>> = LazyLock::new(|| {
    parsed(&[
        ("0.0.0.0/8", "\"this network\""),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "carrier-grade NAT"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local (cloud metadata)"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.0/24", "documentation (TEST-NET-1)"),
        ("192.88.99.0/24", "6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation (TEST-NET-2)"),
        ("203.0.113.0/24", "documentation (TEST-NET-3)"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved (and broadcast)"),
    ])
});

/// IPv6 ranges that are not public, but for the ones that embed an IPv4 address
/// judged by that address ([`embedded_v4`]).
pub static RESTRICTED_V6: LazyLock<Vec<(Ipv6Net, &str)>> = LazyLock::new(|| {
    parsed(&[
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        // Deprecated (RFC 4291); the host would reach the IPv4 address inside.
        ("::/96", "IPv4-compatible"),
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("100::/64", "discard-only"),
        ("2001::/32", "Teredo"),
        ("2001:2::/48", "benchmarking"),
        ("2001:10::/28", "ORCHID"),
        ("2001:20::/28", "ORCHIDv2"),
        ("2001:db8::/32", "documentation"),
        ("2002::/16", "6to4"),
        ("3fff::/20", "documentation"),
        ("5f00::/16", "segment routing (SRv6) SIDs"),
        ("fc00::/7", "unique local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    ])
});

/// IPv6 prefixes whose last 32 bits are an IPv4 address that is reached directly.
static EMBEDDING_V6: LazyLock<Vec<(Ipv6Net, &str)>> =
    LazyLock::new(|| parsed(&[("::ffff:0:0/96", "IPv4-mapped"), ("64:ff9b::/96", "NAT64")]));

/// Why `ip` may be reached only when granted by address, or `None` for a public
/// address.
pub fn restriction(ip: IpAddr) -> Option<String> {
    match ip {
        IpAddr::V4(ip) => restriction_v4(ip).map(str::to_owned),
        IpAddr::V6(ip) => {
            if let Some((inner, form)) = embedded_v4(ip) {
                return restriction_v4(inner)
                    .map(|why| format!("{form} form of {inner}, which is {why}"));
            }
            RESTRICTED_V6
                .iter()
                .find(|(net, _)| net.contains(&ip))
                .map(|(_, why)| (*why).to_owned())
        }
    }
}

/// True for addresses a tool may reach only when granted by address.
pub fn is_restricted(ip: IpAddr) -> bool {
    restriction(ip).is_some()
}

fn restriction_v4(ip: Ipv4Addr) -> Option<&'static str> {
    RESTRICTED_V4
        .iter()
        .find(|(net, _)| net.contains(&ip))
        .map(|(_, why)| *why)
}

/// The IPv4 address an IPv4-mapped or NAT64 (well-known prefix) address stands for.
fn embedded_v4(ip: Ipv6Addr) -> Option<(Ipv4Addr, &'static str)> {
    let (_, form) = EMBEDDING_V6.iter().find(|(net, _)| net.contains(&ip))?;
    let [.., a, b, c, d] = ip.octets();
    Some((Ipv4Addr::new(a, b, c, d), form))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threat 17 (non-public addresses, with the IPv6 forms of IPv4 ones): one row per range,
    /// written out independently of the tables above, with the reason the denial
    /// must give. `None` rows are public controls that must stay reachable.
    #[rustfmt::skip]
    const ROWS: &[(&str, Option<&str>)] = &[
        // IPv4
        ("0.0.0.0", Some("\"this network\"")),
        ("0.255.255.255", Some("\"this network\"")),
        ("10.1.2.3", Some("private")),
        ("100.64.0.1", Some("carrier-grade NAT")),
        ("100.127.255.255", Some("carrier-grade NAT")),
        ("127.0.0.1", Some("loopback")),
        ("169.254.169.254", Some("link-local (cloud metadata)")),
        ("172.16.0.1", Some("private")),
        ("172.31.255.255", Some("private")),
        ("192.0.0.1", Some("IETF protocol assignments")),
        ("192.0.0.170", Some("IETF protocol assignments")),
        ("192.0.2.1", Some("documentation (TEST-NET-1)")),
        ("192.88.99.1", Some("6to4 relay anycast")),
        ("192.168.1.1", Some("private")),
        ("198.18.0.1", Some("benchmarking")),
        ("198.19.255.255", Some("benchmarking")),
        ("198.51.100.7", Some("documentation (TEST-NET-2)")),
        ("203.0.113.9", Some("documentation (TEST-NET-3)")),
        ("224.0.0.1", Some("multicast")),
        ("239.255.255.255", Some("multicast")),
        ("240.0.0.1", Some("reserved (and broadcast)")),
        ("255.255.255.255", Some("reserved (and broadcast)")),
        // IPv6
        ("::", Some("unspecified")),
        ("::1", Some("loopback")),
        ("::8.8.8.8", Some("IPv4-compatible")),
        ("::7f00:1", Some("IPv4-compatible")),
        ("::ffff:127.0.0.1", Some("IPv4-mapped form of 127.0.0.1, which is loopback")),
        ("::ffff:169.254.169.254", Some("IPv4-mapped form of 169.254.169.254, which is link-local (cloud metadata)")),
        ("::ffff:192.0.0.8", Some("IPv4-mapped form of 192.0.0.8, which is IETF protocol assignments")),
        ("64:ff9b::a9fe:a9fe", Some("NAT64 form of 169.254.169.254, which is link-local (cloud metadata)")),
        ("64:ff9b::10.0.0.1", Some("NAT64 form of 10.0.0.1, which is private")),
        ("64:ff9b::203.0.113.1", Some("NAT64 form of 203.0.113.1, which is documentation (TEST-NET-3)")),
        ("64:ff9b:1::1", Some("local-use NAT64")),
        ("64:ff9b:1:ffff:ffff:ffff:ffff:ffff", Some("local-use NAT64")),
        ("100::1", Some("discard-only")),
        ("100::ffff:ffff:ffff:ffff", Some("discard-only")),
        ("2001::1", Some("Teredo")),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Some("Teredo")),
        ("2001:2::1", Some("benchmarking")),
        ("2001:10::1", Some("ORCHID")),
        ("2001:20::1", Some("ORCHIDv2")),
        ("2001:db8::1", Some("documentation")),
        ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", Some("documentation")),
        ("2002:7f00:1::1", Some("6to4")),
        ("2002:808:808::1", Some("6to4")),
        ("3fff::1", Some("documentation")),
        ("3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", Some("documentation")),
        ("5f00::1", Some("segment routing (SRv6) SIDs")),
        ("fc00::1", Some("unique local")),
        ("fd00:ec2::254", Some("unique local")),
        ("fe80::1", Some("link-local")),
        ("febf::1", Some("link-local")),
        ("fec0::1", Some("site-local")),
        ("feff::1", Some("site-local")),
        ("ff02::1", Some("multicast")),
        // Public: reachable by name.
        ("1.1.1.1", None),
        ("8.8.8.8", None),
        ("93.184.215.14", None),
        ("100.63.255.255", None),
        ("100.128.0.0", None),
        ("172.32.0.1", None),
        ("192.0.1.1", None),
        ("192.88.98.1", None),
        ("198.20.0.1", None),
        ("223.255.255.255", None),
        ("::ffff:8.8.8.8", None),
        ("64:ff9b::8.8.8.8", None),
        ("64:ff9b:2::1", None),
        ("2001:1::1", None),
        ("2001:4860:4860::8888", None),
        ("2001:db9::1", None),
        ("2003::1", None),
        ("2606:4700::1111", None),
        ("3fff:1000::1", None),
        ("fbff::1", None),
    ];

    #[test]
    fn threat_17_every_restricted_range_table_driven() {
        let mut wrong = Vec::new();
        for (text, want) in ROWS {
            let ip: IpAddr = text.parse().unwrap();
            let got = restriction(ip);
            if got.as_deref() != *want {
                wrong.push(format!("{text}: want {want:?}, got {got:?}"));
            }
        }
        assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
    }

    /// No range of the tables is left without a row above: each one's first
    /// and last address are restricted, and some row falls inside it.
    #[test]
    fn every_range_of_the_tables_has_a_row_and_holds_at_both_ends() {
        let rows: Vec<IpAddr> = ROWS
            .iter()
            .filter(|(_, want)| want.is_some())
            .map(|(text, _)| text.parse().unwrap())
            .collect();
        for (net, why) in RESTRICTED_V4.iter() {
            for ip in [net.network(), net.broadcast()] {
                assert!(
                    is_restricted(ip.into()),
                    "{ip} ({why}) should be restricted"
                );
            }
            assert!(
                rows.iter()
                    .any(|ip| matches!(ip, IpAddr::V4(v) if net.contains(v))),
                "{net} ({why}) has no row in the table"
            );
        }
        for (net, why) in RESTRICTED_V6.iter().chain(EMBEDDING_V6.iter()) {
            assert!(
                rows.iter()
                    .any(|ip| matches!(ip, IpAddr::V6(v) if net.contains(v))),
                "{net} ({why}) has no row in the table"
            );
        }
        for (net, why) in RESTRICTED_V6.iter() {
            for ip in [net.network(), net.broadcast()] {
                assert!(
                    is_restricted(ip.into()),
                    "{ip} ({why}) should be restricted"
                );
            }
        }
    }
}
