//! Outgoing HTTP for tool plugins: only to the hosts the operator granted.
//!
//! Every request a guest makes through `wasi:http/outgoing-handler` passes
//! [`HttpPolicy::send_request`]: the scheme, host and port must match a
//! `[[http]]` grant, and the addresses the host name resolves to must be public
//! unless the grant names the address itself. Redirects are not followed by
//! the host: a guest that follows one makes a new request, which is checked
//! again.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};

use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use crate::manifest::HttpGrant;

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
    denials: Arc<Mutex<Vec<String>>>,
}

impl HttpPolicy {
    pub fn new(grants: Arc<[HttpGrant]>) -> HttpPolicy {
        HttpPolicy {
            grants,
            denials: Arc::default(),
        }
    }

    /// The requests refused so far, each with the reason.
    pub fn denials(&self) -> Vec<String> {
        self.denials
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn deny(denials: &Mutex<Vec<String>>, reason: String) -> HttpError {
        tracing::info!(%reason, "outgoing http request denied");
        denials
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(reason);
        HttpError::HttpRequestDenied
    }
}

/// The grant that allows `scheme://host:port`, if any.
fn find_grant<'a>(
    grants: &'a [HttpGrant],
    scheme: &str,
    host: &str,
    port: u16,
) -> Option<&'a HttpGrant> {
    grants.iter().find(|g| g.matches(scheme, host, port))
}

pub use super::ranges::{is_restricted, restriction};

impl WasiHttpHooks for HttpPolicy {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
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

        let grant = find_grant(&self.grants, &scheme, &host, port).cloned();
        let Some(grant) = grant else {
            let reason = if self.grants.is_empty() {
                format!("request to {target} refused: the plugin has no `[[http]]` grant")
            } else {
                let granted: Vec<String> = self.grants.iter().map(ToString::to_string).collect();
                format!(
                    "request to {target} refused: not in the plugin's `[[http]]` grants ({})",
                    granted.join(", ")
                )
            };
            let err = Self::deny(&denials, reason);
            return Box::new(async move { Err(err) });
        };

        Box::new(async move {
            // Resolve here, vet every address, then connect to a vetted one, so
            // the name cannot resolve to something else between check and use.
            let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
                Ok(ip) => vec![SocketAddr::new(ip, port)],
                Err(_) => match tokio::net::lookup_host((host.as_str(), port)).await {
                    Ok(addrs) => addrs.collect(),
                    Err(e) => {
                        return Err(HttpError::DnsError {
                            rcode: Some(e.to_string()),
                            info_code: None,
                        });
                    }
                },
            };
            let granted_by_address = grant.host_is_ip();
            let list: Vec<String> = addrs
                .iter()
                .filter_map(|a| restriction(a.ip()).map(|why| format!("{} ({why})", a.ip())))
                .collect();
            if !granted_by_address && !list.is_empty() {
                return Err(Self::deny(
                    &denials,
                    format!(
                        "request to {target} refused: `{host}` resolves to a non-public address ({}); grant the address itself in `[[http]]` to allow it",
                        list.join(", ")
                    ),
                ));
            }
            let Some(addr) = addrs.first().copied() else {
                return Err(HttpError::DestinationNotFound);
            };
            if scheme == "http" {
                // Pin the connection to the vetted address; the Host header
                // still carries the name.
                let pinned = match addr {
                    SocketAddr::V4(a) => format!("{}:{}", a.ip(), a.port()),
                    SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
                };
                let mut parts = uri.into_parts();
                parts.authority = pinned.parse().ok();
                if let Ok(pinned_uri) = http::Uri::from_parts(parts) {
                    *request.uri_mut() = pinned_uri;
                }
            }
            // For https the name must stay for certificate checks, so the
            // connection resolves it again (see docs/security.md).
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = Result<(), HttpError>> + Send>,
            ))
        })
    }
}
