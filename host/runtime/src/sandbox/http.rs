//! Outgoing HTTP for tool plugins: only to the hosts the operator granted.
//!
//! Every request a guest makes through `wasi:http/outgoing-handler` passes
//! [`HttpPolicy::send_request`]: the scheme, host and port must match a
//! `[[http]]` grant whose `methods` and `paths` (if it lists any) allow the
//! request's method and path ([`judge`]), and the addresses the host name
//! resolves to must be public unless the grant names the address itself. A
//! path judged by `paths` is read decoded and with `.` and `..` resolved, and
//! the request goes out with that path ([`RequestPath`]), so the server is
//! sent what was judged. Redirects are not followed by
//! the host: a guest that follows one makes a new request, which is checked
//! again. The connection goes to the address that was vetted, never to a
//! second lookup of the name ([`super::connect`]).
//!
//! The refused requests are kept for the call's report, bounded: the guest
//! chooses both how many requests it makes and how long their host names are.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};

use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use super::connect::{Tls, send_to};
use super::egress::Egress;
use crate::manifest::{GrantCaller, HttpGrant, RequestPath};

/// At most this many refused requests are kept per call; the rest are counted.
pub const MAX_DENIALS: usize = 32;
/// A refusal's reason is cut to this many bytes (a guest's host name can be
/// megabytes long).
pub const MAX_DENIAL_BYTES: usize = 512;

type ResponseFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                ),
                HttpError,
            >,
        > + Send,
>;

/// The HTTP grants of one call, and the requests it refused.
pub struct HttpPolicy {
    grants: Arc<[HttpGrant]>,
    /// Who makes the call: what `only` on a grant reads.
    caller: Arc<GrantCaller>,
    egress: Egress,
    denials: Arc<Mutex<Denials>>,
}

/// The first [`MAX_DENIALS`] refusals, each cut to [`MAX_DENIAL_BYTES`], and
/// how many more there were.
#[derive(Default)]
struct Denials {
    kept: Vec<String>,
    dropped: usize,
}

impl Denials {
    fn push(&mut self, reason: String) {
        if self.kept.len() < MAX_DENIALS {
            self.kept.push(reason);
        } else {
            self.dropped += 1;
        }
    }

    fn list(&self) -> Vec<String> {
        let mut list = self.kept.clone();
        if self.dropped > 0 {
            let s = if self.dropped == 1 { "" } else { "s" };
            list.push(format!("and {} more refused request{s}", self.dropped));
        }
        list
    }
}

/// `reason` cut to [`MAX_DENIAL_BYTES`] on a character boundary, saying how
/// long it was.
fn bounded(mut reason: String) -> String {
    if reason.len() > MAX_DENIAL_BYTES {
        let total = reason.len();
        reason.truncate(reason.floor_char_boundary(MAX_DENIAL_BYTES));
        reason.push_str(&format!("… ({total} bytes in all)"));
    }
    reason
}

impl HttpPolicy {
    pub fn new(grants: Arc<[HttpGrant]>, caller: Arc<GrantCaller>, egress: Egress) -> HttpPolicy {
        HttpPolicy {
            grants,
            caller,
            egress,
            denials: Arc::default(),
        }
    }

    /// The requests refused so far, each with the reason: at most
    /// [`MAX_DENIALS`] of them, then a line counting the rest.
    pub fn denials(&self) -> Vec<String> {
        self.denials
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .list()
    }

    /// Records a refusal (a secret's value in it masked) and makes its error.
    fn deny(&self, reason: String) -> HttpError {
        Self::deny_in(&self.denials, &self.egress, reason)
    }

    fn deny_in(denials: &Mutex<Denials>, egress: &Egress, reason: String) -> HttpError {
        let reason = bounded(egress.mask(&reason).into_owned());
        tracing::info!(%reason, "outgoing http request denied");
        denials
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(reason);
        HttpError::HttpRequestDenied
    }
}

/// What the grants on a request's origin say of its method and path.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// No grant is on the origin.
    NoOrigin,
    /// Allowed by the grant (its index); with the path to send instead, when
    /// a grant's `paths` read it and it was not as written.
    Allowed(usize, Option<String>),
    /// The origin is granted, but not for this method or path: why.
    Refused(String),
}

/// Judges a `method` request to `path` (without its query) on
/// `scheme://host:port` by `grants`, for `caller`: any grant on the origin
/// that is for the caller (`only`) and allows the method and path allows it
/// (a grant's path rules read the path with [`RequestPath`]; grants without
/// path rules never read it).
fn judge(
    grants: &[HttpGrant],
    caller: &GrantCaller,
    scheme: &str,
    host: &str,
    port: u16,
    method: &str,
    path: &str,
) -> Verdict {
    let (on_origin, not_for_caller): (Vec<(usize, &HttpGrant)>, Vec<_>) = grants
        .iter()
        .enumerate()
        .filter(|(_, g)| g.matches(scheme, host, port))
        .partition(|(_, g)| g.only.admits(caller));
    if on_origin.is_empty() {
        let Some((_, grant)) = not_for_caller.first() else {
            return Verdict::NoOrigin;
        };
        let whom: Vec<String> = not_for_caller
            .iter()
            .map(|(_, g)| g.only.describe())
            .collect();
        return Verdict::Refused(format!(
            "the plugin's `[[http]]` grant for {grant} is only for {}, and this call is by {}",
            whom.join(" or for "),
            caller.describe()
        ));
    }
    let read = on_origin
        .iter()
        .any(|(_, g)| !g.rules.paths.is_empty())
        .then(|| RequestPath::parse(path));
    for &(index, grant) in &on_origin {
        if !grant.rules.allows_method(method) {
            continue;
        }
        if grant.rules.paths.is_empty() {
            return Verdict::Allowed(index, None);
        }
        if let Some(Ok(read)) = &read
            && grant.rules.allows_path(&read.matched)
        {
            let rewritten = (read.forwarded != path).then(|| read.forwarded.clone());
            return Verdict::Allowed(index, rewritten);
        }
    }
    let origin = on_origin[0].1.to_string();
    let rules: Vec<String> = on_origin.iter().map(|(_, g)| g.rules.to_string()).collect();
    let allowed = format!(
        "the plugin's `[[http]]` grant for {origin} allows {}",
        rules.join(" or ")
    );
    Verdict::Refused(match &read {
        Some(Err(unreadable)) if on_origin.iter().any(|(_, g)| g.rules.allows_method(method)) => {
            format!("{unreadable}, which its grant's `paths` cannot judge ({allowed})")
        }
        _ => format!("not allowed: {allowed}"),
    })
}

pub use super::ranges::{is_restricted, restriction};

/// `uri` with its path replaced by `path` (the query kept).
fn with_path(uri: &http::Uri, path: &str) -> Result<http::Uri, HttpError> {
    let path_and_query = match uri.query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_string(),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(
        path_and_query
            .parse()
            .map_err(|_| HttpError::HttpRequestUriInvalid)?,
    );
    http::Uri::from_parts(parts).map_err(|_| HttpError::HttpRequestUriInvalid)
}

impl WasiHttpHooks for HttpPolicy {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> ResponseFuture {
        drop(fut);
        let denials = self.denials.clone();
        let uri = request.uri().clone();
        let scheme = uri.scheme_str().unwrap_or("").to_ascii_lowercase();
        let host = uri
            .host()
            .unwrap_or("")
            .trim_matches(['[', ']'])
            .to_ascii_lowercase();
        let port = uri
            .port_u16()
            .unwrap_or(if scheme == "https" { 443 } else { 80 });
        let target = format!("{scheme}://{host}:{port}");

        let method = request.method().as_str().to_string();
        let path = uri.path().to_string();
        let index = match judge(
            &self.grants,
            &self.caller,
            &scheme,
            &host,
            port,
            &method,
            &path,
        ) {
            Verdict::Allowed(index, rewritten) => (index, rewritten),
            Verdict::NoOrigin => {
                let err = self.deny(no_grant(&self.grants, &target));
                return Box::new(async move { Err(err) });
            }
            Verdict::Refused(why) => {
                let err = self.deny(format!("request {method} {target}{path} refused: {why}"));
                return Box::new(async move { Err(err) });
            }
        };
        let (index, rewritten) = index;
        let grant = self.grants[index].clone();
        // What the guest wrote may not carry a secret's value: only the
        // host sends those, where a grant injects them.
        if let Some((place, secret)) = self.egress.scan_head(&request) {
            let err = self.deny(format!(
                "request {method} {target} refused: its {place} carries the value of secret `{secret}`, which only the host sends (where an `[[http]]` grant injects it)"
            ));
            return Box::new(async move { Err(err) });
        }
        let mut request = request;
        if let Some(path) = rewritten {
            match with_path(&uri, &path) {
                Ok(uri) => *request.uri_mut() = uri,
                Err(e) => return Box::new(async move { Err(e) }),
            }
        }
        if let Err(why) = self.egress.inject(index, &mut request) {
            let err = self.deny(format!(
                "request {method} {target} refused: its grant's `inject` cannot be made: {why}"
            ));
            return Box::new(async move { Err(err) });
        }
        let (egress, body_denials) = (self.egress.clone(), denials.clone());
        let refused_target = format!("request {method} {target}");
        let request = request.map(move |body| {
            let masker = egress.clone();
            egress.scan_body(body, move |secret| {
                HttpPolicy::deny_in(
                    &body_denials,
                    &masker,
                    format!("{refused_target} refused: its body carries the value of secret `{secret}`, which only the host sends (where an `[[http]]` grant injects it)"),
                );
            })
        });

        let egress_for_denials = self.egress.clone();
        Box::new(async move {
            // Resolve here, vet every address, then connect to a vetted one, so
            // the name cannot resolve to something else between check and use.
            let addrs = match vetted_addrs(&host, port, grant.host_is_ip()).await? {
                Ok(addrs) => addrs,
                Err(why) => {
                    return Err(Self::deny_in(
                        &denials,
                        &egress_for_denials,
                        format!("request to {target} refused: {why}"),
                    ));
                }
            };
            // Connect to a vetted address itself, never to what the name
            // resolves to by then; TLS checks the certificate against the
            // granted name (`sandbox::connect`).
            let tls = if scheme == "https" {
                Some(Tls::public(&host)?)
            } else {
                None
            };
            send_to(request, options, &addrs, tls).await
        })
    }
}

/// Why a request to `target` (`scheme://host:port`) is refused when no
/// grant of `grants` names its origin.
fn no_grant(grants: &[HttpGrant], target: &str) -> String {
    if grants.is_empty() {
        return format!("request to {target} refused: the plugin has no `[[http]]` grant");
    }
    let granted: Vec<String> = grants.iter().map(ToString::to_string).collect();
    format!(
        "request to {target} refused: not in the plugin's `[[http]]` grants ({})",
        granted.join(", ")
    )
}

/// The addresses `host` resolves to (itself, when it is one), for a
/// request on `port`: `Ok(Err(why))` when one of them is not public and the
/// grant named the host, not an address (`granted_by_address`). Every
/// address is vetted, so the one connected to is one that was vetted.
async fn vetted_addrs(
    host: &str,
    port: u16,
    granted_by_address: bool,
) -> Result<Result<Vec<SocketAddr>, String>, HttpError> {
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => match tokio::net::lookup_host((host, port)).await {
            Ok(addrs) => addrs.collect(),
            Err(e) => {
                return Err(HttpError::DnsError {
                    rcode: Some(e.to_string()),
                    info_code: None,
                });
            }
        },
    };
    let list: Vec<String> = addrs
        .iter()
        .filter_map(|a| restriction(a.ip()).map(|why| format!("{} ({why})", a.ip())))
        .collect();
    if !granted_by_address && !list.is_empty() {
        return Ok(Err(format!(
            "`{host}` resolves to a non-public address ({}); grant the address itself in `[[http]]` to allow it",
            list.join(", ")
        )));
    }
    if addrs.is_empty() {
        return Err(HttpError::DestinationNotFound);
    }
    Ok(Ok(addrs))
}

#[cfg(test)]
mod tests {
    use super::*;

    use http_body_util::{BodyExt, Empty};

    fn refused(policy: &mut HttpPolicy, url: &str) {
        let request = http::Request::get(url)
            .body(Empty::new().map_err(|never| match never {}).boxed_unsync())
            .unwrap();
        // Refused before anything is awaited: the future is never polled.
        drop(policy.send_request(request, None, Box::new(async { Ok(()) })));
    }

    // A guest picks how many requests it makes and how long their host names
    // are; what the host keeps of its refusals stays bounded either way.
    #[test]
    fn threat_40_the_refused_requests_list_is_bounded_in_count_and_length() {
        let mut policy = HttpPolicy::new(Arc::from(Vec::new()), Arc::default(), Egress::default());
        let long_host = format!("{}.example", "a".repeat(60_000));
        for _ in 0..1000 {
            refused(&mut policy, &format!("http://{long_host}/"));
        }
        refused(&mut policy, "http://short.example/");
        let denials = policy.denials();
        assert_eq!(denials.len(), MAX_DENIALS + 1, "{:?}", denials.last());
        for reason in &denials[..MAX_DENIALS] {
            assert!(reason.len() <= MAX_DENIAL_BYTES + 32, "{}", reason.len());
            assert!(reason.starts_with("request to http://aaaa"), "{reason}");
            let total = "request to http://:80 refused: the plugin has no `[[http]]` grant".len()
                + long_host.len();
            assert!(
                reason.ends_with(&format!("… ({total} bytes in all)")),
                "{}",
                &reason[MAX_DENIAL_BYTES - 40..]
            );
        }
        assert_eq!(denials[MAX_DENIALS], "and 969 more refused requests");
    }

    fn ruled(url: &str, methods: &[&str], paths: &[&str]) -> HttpGrant {
        let mut grant: HttpGrant = url.parse().unwrap();
        let list = |l: &[&str]| l.iter().map(ToString::to_string).collect::<Vec<_>>();
        grant.rules = crate::manifest::HttpRules::parse(&list(methods), &list(paths)).unwrap();
        grant
    }

    fn verdict(grants: &[HttpGrant], method: &str, path: &str) -> Verdict {
        verdict_for(grants, &GrantCaller::default(), method, path)
    }

    fn verdict_for(
        grants: &[HttpGrant],
        caller: &GrantCaller,
        method: &str,
        path: &str,
    ) -> Verdict {
        judge(
            grants,
            caller,
            "https",
            "api.example.com",
            443,
            method,
            path,
        )
    }

    #[test]
    fn a_grant_only_for_some_callers_refuses_the_others_saying_whom_it_is_for() {
        let mut scoring = ruled("https://api.example.com", &["POST"], &[]);
        scoring.only.projects = vec!["scoring".into()];
        let reader = ruled("https://api.example.com", &["GET"], &[]);
        let caller = |project: &str| GrantCaller {
            principal: "agent".into(),
            role: "workagent".into(),
            project: Some(project.into()),
            session: Some("s-1".into()),
        };
        let grants = [scoring.clone(), reader];
        assert!(matches!(
            verdict_for(&grants, &caller("scoring"), "POST", "/x"),
            Verdict::Allowed(0, None)
        ));
        // Another project keeps the grant every caller holds, not scoring's.
        assert!(matches!(
            verdict_for(&grants, &caller("outreach"), "GET", "/x"),
            Verdict::Allowed(1, None)
        ));
        assert!(matches!(
            verdict_for(&grants, &caller("outreach"), "POST", "/x"),
            Verdict::Refused(_)
        ));
        let Verdict::Refused(why) = verdict_for(&[scoring], &caller("outreach"), "POST", "/x")
        else {
            panic!("a grant only for scoring let outreach through")
        };
        assert_eq!(
            why,
            "the plugin's `[[http]]` grant for https://api.example.com:443 is only for projects `scoring`, and this call is by principal `agent` (role `workagent`) in project `outreach`"
        );
    }

    #[test]
    fn threat_61_methods_and_paths_narrow_an_origin() {
        let grants = [ruled(
            "https://api.example.com",
            &["GET"],
            &["/repos/acme/**"],
        )];
        assert!(matches!(
            verdict(&grants, "GET", "/repos/acme/widget"),
            Verdict::Allowed(_, None)
        ));
        let Verdict::Refused(why) = verdict(&grants, "PUT", "/repos/acme/widget") else {
            panic!("PUT allowed")
        };
        assert_eq!(
            why,
            "not allowed: the plugin's `[[http]]` grant for https://api.example.com:443 allows methods GET; paths /repos/acme/**"
        );
        for path in [
            "/repos/other",
            "/repos/acme/../other",
            "/repos/acme/%2e%2e/other",
            "/repos/acmecorp/x",
        ] {
            assert!(
                matches!(verdict(&grants, "GET", path), Verdict::Refused(_)),
                "{path}"
            );
        }
        let Verdict::Refused(why) = verdict(&grants, "GET", "/repos/acme%2F..%2Fother") else {
            panic!("an encoded slash passed")
        };
        assert!(why.starts_with("the path has an encoded `/`"), "{why}");
        assert_eq!(
            verdict(&grants, "GET", "https://elsewhere"),
            Verdict::Refused(
                "the path is not absolute, which its grant's `paths` cannot judge (the plugin's `[[http]]` grant for https://api.example.com:443 allows methods GET; paths /repos/acme/**)".into()
            )
        );
        assert_eq!(
            judge(
                &grants,
                &GrantCaller::default(),
                "https",
                "other.example.com",
                443,
                "GET",
                "/repos/acme"
            ),
            Verdict::NoOrigin
        );
    }

    #[test]
    fn a_path_judged_with_dots_goes_out_resolved() {
        let grants = [ruled("https://api.example.com", &[], &["/repos/acme"])];
        let Verdict::Allowed(_, rewritten) = verdict(&grants, "GET", "/repos/x/../acme/./w") else {
            panic!("refused")
        };
        assert_eq!(rewritten.as_deref(), Some("/repos/acme/w"));
        let uri: http::Uri = "https://api.example.com/repos/x/../acme/w?page=2"
            .parse()
            .unwrap();
        assert_eq!(
            with_path(&uri, "/repos/acme/w").unwrap().to_string(),
            "https://api.example.com/repos/acme/w?page=2"
        );
    }

    #[test]
    fn any_grant_on_the_origin_may_allow_and_open_grants_read_no_path() {
        let grants = [
            ruled("https://api.example.com", &["GET"], &[]),
            ruled(
                "https://api.example.com",
                &["POST"],
                &["/repos/acme/widget/issues"],
            ),
        ];
        assert!(matches!(
            verdict(&grants, "GET", "/a//b%2F"),
            Verdict::Allowed(_, None)
        ));
        assert!(matches!(
            verdict(&grants, "POST", "/repos/acme/widget/issues"),
            Verdict::Allowed(_, None)
        ));
        let Verdict::Refused(why) = verdict(&grants, "POST", "/repos/acme/widget/pulls") else {
            panic!("allowed")
        };
        assert!(
            why.ends_with(
                "allows methods GET; any path or methods POST; paths /repos/acme/widget/issues"
            ),
            "{why}"
        );
        let open = [ruled("https://api.example.com", &[], &[])];
        assert!(matches!(
            verdict(&open, "DELETE", "/a//b"),
            Verdict::Allowed(_, None)
        ));
    }

    #[test]
    fn a_reason_is_cut_on_a_character_boundary() {
        // 'é' is two bytes: 511 bytes of ASCII put a boundary mid-character.
        let reason = format!("{}{}", "x".repeat(MAX_DENIAL_BYTES - 1), "é".repeat(100));
        let cut = bounded(reason.clone());
        assert!(cut.starts_with(&"x".repeat(MAX_DENIAL_BYTES - 1)));
        assert!(
            cut.ends_with(&format!("… ({} bytes in all)", reason.len())),
            "{cut}"
        );
        assert_eq!(bounded("short".to_string()), "short");
    }
}
