//! The one place a registry client is made: which registries are reached
//! over plain HTTP, the timeouts, and the credentials.

use std::time::Duration;

use glovebox_manifest::OciReference;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use crate::OciError;

/// The user name for a registry that asks for one (HTTP basic auth).
pub(crate) const USERNAME_VAR: &str = "GLOVEBOX_REGISTRY_USERNAME";
/// Its password or token.
pub(crate) const PASSWORD_VAR: &str = "GLOVEBOX_REGISTRY_PASSWORD";

/// A client for the registries of some references, and the credentials it
/// presents.
pub(crate) struct Registry {
    pub(crate) client: Client,
    pub(crate) auth: RegistryAuth,
}

impl Registry {
    /// A client for `references`: HTTPS, but for registries on this machine
    /// (`localhost`, `127.0.0.0/8`, `[::1]`), which are reached over HTTP as
    /// Docker reaches them; credentials from the environment, else none.
    pub(crate) fn new<'a>(references: impl IntoIterator<Item = &'a OciReference>) -> Registry {
        // reqwest is built without a provider of its own: the ring provider,
        // which the rest of the host builds, is the process's default.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let loopback: Vec<String> = references
            .into_iter()
            .filter(|r| r.is_loopback())
            .map(|r| r.registry.clone())
            .collect();
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(loopback),
            connect_timeout: Some(Duration::from_secs(10)),
            read_timeout: Some(Duration::from_secs(60)),
            user_agent: concat!("glovebox/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let auth = match (std::env::var(USERNAME_VAR), std::env::var(PASSWORD_VAR)) {
            (Ok(user), Ok(password)) if !user.is_empty() => RegistryAuth::Basic(user, password),
            _ => RegistryAuth::Anonymous,
        };
        Registry {
            client: Client::new(config),
            auth,
        }
    }
}

/// `reference` as the client names it; `digest`, when given, replaces its
/// tag and digest (a pinned pull).
pub(crate) fn image(reference: &OciReference, digest: Option<&str>) -> Result<Reference, OciError> {
    let text = match digest {
        Some(digest) => format!("{}/{}@{digest}", reference.registry, reference.repository),
        None => reference.image(),
    };
    text.parse().map_err(|e| OciError::Registry {
        registry: reference.registry.clone(),
        reference: reference.text.clone(),
        detail: format!("the OCI client does not take `{text}`: {e}"),
        fix: "write `oci://REGISTRY/NAME:TAG` or `oci://REGISTRY/NAME@sha256:DIGEST`".to_owned(),
    })
}

/// What was being done when a registry failed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Doing {
    Pull,
    Push,
}

/// The client's error for `reference` while `doing`, worded with what to do.
pub(crate) fn failed(
    reference: &OciReference,
    doing: Doing,
    error: OciDistributionError,
) -> OciError {
    use oci_client::errors::DigestError;
    let (detail, fix) = match error {
        OciDistributionError::DigestError(DigestError::VerificationError { expected, actual }) => {
            return OciError::Tampered {
                reference: reference.text.clone(),
                expected,
                actual,
            };
        }
        OciDistributionError::RequestError(e) => (
            reqwest_chain(&e),
            match doing {
                Doing::Pull => "check that the registry is up and reachable from this machine (components already pulled load from the cache without it)",
                Doing::Push => "check that the registry is up and reachable from this machine",
            }
            .to_owned(),
        ),
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => (
            "the registry refused the credentials".to_owned(),
            format!("set `{USERNAME_VAR}` and `{PASSWORD_VAR}` to an account that may read (or push to) this repository"),
        ),
        OciDistributionError::ImageManifestNotFoundError(_) => (
            "no such manifest".to_owned(),
            "check the name and the tag or digest, or push the component first (`glovebox plugin push`)".to_owned(),
        ),
        OciDistributionError::ServerError { code: 404, .. } => (
            "not found".to_owned(),
            "check the name and the tag or digest, or push the component first (`glovebox plugin push`)".to_owned(),
        ),
        OciDistributionError::RegistryError { envelope, .. } => (
            envelope.to_string(),
            "check the name and the tag or digest, or push the component first (`glovebox plugin push`)".to_owned(),
        ),
        other => (
            other.to_string(),
            "check the reference and the registry".to_owned(),
        ),
    };
    OciError::Registry {
        registry: reference.registry.clone(),
        reference: reference.text.clone(),
        detail,
        fix,
    }
}

/// A request error with its causes, which say what actually failed
/// ("connection refused").
fn reqwest_chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}
