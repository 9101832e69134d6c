//! OAuth 2.1 access tokens over HTTP (`[auth.oauth]`): Glovebox as a
//! resource server, beside the principals' own static tokens.
//!
//! MCP's authorization for HTTP servers is OAuth 2.1: a client finds the
//! authorization server through the protected-resource metadata (RFC 9728,
//! served at [`METADATA_PATH`] and pointed at by every 401), gets a token
//! there, and presents it as a bearer token. This module checks such a
//! token offline: its signature against the issuer's key set (cached; a
//! key it does not hold makes it read the set again, at most once a minute,
//! so a rotation is picked up without letting junk tokens hammer the
//! issuer), its `iss`, `aud`, `exp` and `nbf` (60 s of clock skew), and
//! asymmetric algorithms only (`alg: none` and HMAC, whose key would be a
//! secret shared with every client, are refused). The crypto is the
//! `jsonwebtoken` crate's, never this file's.
//!
//! Who the token is still comes from the config: its principal claim must
//! name a declared principal, or carry a value the operator's
//! `principal_map` gives one for (exactly one). A refusal is logged as the server's own line
//! naming why (never the token, never as the principal it claims).

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use serde_json::{Map, Value};

use glovebox::Principal;
use glovebox::manifest::{JwksSource, OAuthConfig};

use super::claims::{claimed, scopes};
use super::tool_scopes::TokenScopes;

/// Where the protected-resource metadata is served.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Clock skew allowed on `exp` and `nbf`.
const LEEWAY: Duration = Duration::from_secs(60);
/// The least time between two reads of the key set that a token's unknown
/// key causes.
const REFETCH_AFTER: Duration = Duration::from_secs(60);
/// How long a key set fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest key set read.
const MAX_JWKS: usize = 1 << 20;

/// Why a token was refused.
#[derive(Debug)]
pub(super) enum Refusal {
    /// Not a valid token for this server (401 `invalid_token`); the reason
    /// is for the server's log only.
    Invalid(String),
    /// Valid, but without every scope required (403 `insufficient_scope`).
    Scope(Vec<String>),
}

/// The checker of the config served now (rebuilt when a reload changes
/// `[auth.oauth]`).
#[derive(Default)]
pub(super) struct OAuth {
    current: std::sync::Mutex<Option<Arc<Verifier>>>,
}

impl OAuth {
    /// The verifier for `config`, kept while the config stays the same.
    pub(super) fn verifier(&self, config: &OAuthConfig) -> Arc<Verifier> {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        match &*current {
            Some(v) if v.config == *config => v.clone(),
            _ => {
                let v = Arc::new(Verifier::new(config.clone()));
                *current = Some(v.clone());
                v
            }
        }
    }
}

/// Checks tokens for one `[auth.oauth]`.
pub(super) struct Verifier {
    config: OAuthConfig,
    keys: tokio::sync::Mutex<Keys>,
}

#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    /// When the set was last read (or its read last tried).
    read: Option<Instant>,
}

impl Verifier {
    fn new(config: OAuthConfig) -> Verifier {
        Verifier {
            config,
            keys: tokio::sync::Mutex::new(Keys::default()),
        }
    }

    /// The principal named by `token`, as `principal` resolves names under
    /// the config served now.
    pub(super) async fn verify(
        &self,
        token: &str,
        principal: impl Fn(&str) -> Option<Principal>,
    ) -> Result<(Principal, TokenScopes), Refusal> {
        let invalid = |why: &str| Refusal::Invalid(why.to_string());
        // `alg: none` (and any algorithm the crate does not know) fails here.
        let header = jsonwebtoken::decode_header(token).map_err(|_| {
            invalid(
                "malformed, or an algorithm that is not one of RS/PS/ES/EdDSA (`none` among them)",
            )
        })?;
        if matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        ) {
            return Err(invalid(
                "signed with HMAC: only the issuer's public keys are accepted",
            ));
        }
        let keys = self.keys_for(header.kid.as_deref(), header.alg).await?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        validation.set_audience(&[&self.config.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let mut last = invalid("no key of the issuer fits it");
        let mut claims = None;
        for key in &keys {
            match jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation) {
                Ok(data) => {
                    claims = Some(data.claims);
                    break;
                }
                Err(e) => {
                    last = invalid(&why(e.kind()));
                    if !matches!(
                        e.kind(),
                        ErrorKind::InvalidSignature
                            | ErrorKind::InvalidEcdsaKey
                            | ErrorKind::InvalidRsaKey(_)
                            | ErrorKind::InvalidEddsaKey
                            | ErrorKind::InvalidKeyFormat
                    ) {
                        break;
                    }
                }
            }
        }
        let claims = claims.ok_or(last)?;
        let name = claimed(&claims, &self.config, |name| principal(name).is_some())
            .map_err(Refusal::Invalid)?;
        let Some(principal) = principal(name) else {
            return Err(Refusal::Invalid(format!(
                "its `{}` names no declared principal",
                self.config.principal_claim
            )));
        };
        let held = scopes(&claims);
        let missing: Vec<String> = self
            .config
            .required_scopes
            .iter()
            .filter(|s| !held.contains(s.as_str()))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(Refusal::Scope(missing));
        }
        let held = held.into_iter().map(str::to_string).collect();
        Ok((principal, TokenScopes(held)))
    }

    /// The decoding keys a token with `kid` and `alg` may be signed by:
    /// the key of that id (reading the set again if it is unknown and the
    /// last read is a minute old), or with no id every key of the family.
    async fn keys_for(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Vec<DecodingKey>, Refusal> {
        let mut keys = self.keys.lock().await;
        let mut found = keys.set.as_ref().map(|s| fitting(s, kid, alg));
        if found.as_ref().is_none_or(Vec::is_empty)
            && keys.read.is_none_or(|at| at.elapsed() >= REFETCH_AFTER)
        {
            keys.read = Some(Instant::now());
            match self.read_set().await {
                Ok(set) => {
                    found = Some(fitting(&set, kid, alg));
                    keys.set = Some(set);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not read the OAuth issuer's key set ([auth.oauth]); tokens it signed are refused until it can be read");
                }
            }
        }
        let found = found.unwrap_or_default();
        if found.is_empty() {
            return Err(Refusal::Invalid(match kid {
                Some(kid) => {
                    format!("signed by a key (`kid` {kid}) the issuer's key set does not hold")
                }
                None => "no key of the issuer's key set fits its algorithm".to_string(),
            }));
        }
        Ok(found)
    }

    async fn read_set(&self) -> anyhow::Result<JwkSet> {
        let text = match &self.config.jwks {
            JwksSource::File(path) => tokio::fs::read(path)
                .await
                .map_err(|e| anyhow::anyhow!("cannot read `{}`: {e}", path.display()))?,
            JwksSource::Url(url) => {
                let client = reqwest::Client::builder()
                    .timeout(FETCH_TIMEOUT)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()?;
                let response = client
                    .get(url)
                    .send()
                    .await
                    .and_then(|r| r.error_for_status())
                    .map_err(|e| anyhow::anyhow!("cannot fetch `{url}`: {e}"))?;
                let body = response
                    .bytes()
                    .await
                    .map_err(|e| anyhow::anyhow!("cannot fetch `{url}`: {e}"))?;
                body.to_vec()
            }
        };
        if text.len() > MAX_JWKS {
            anyhow::bail!("the key set is larger than {MAX_JWKS} bytes");
        }
        serde_json::from_slice::<JwkSet>(&text)
            .map_err(|e| anyhow::anyhow!("the key set is not a JSON Web Key Set: {e}"))
    }

    /// The protected-resource metadata (RFC 9728).
    pub(super) fn metadata(&self) -> Value {
        let mut doc = serde_json::json!({
            "resource": self.config.audience,
            "authorization_servers": [self.config.issuer],
            "bearer_methods_supported": ["header"],
        });
        if !self.config.required_scopes.is_empty() {
            doc["scopes_supported"] = self.config.required_scopes.clone().into();
        }
        doc
    }

    /// The URL of the metadata, for `WWW-Authenticate`: beside the
    /// audience when it is an http(s) URL (what clients were told to
    /// reach), else on the `Host` the request came to.
    pub(super) fn metadata_url(&self, host: Option<&str>) -> String {
        let audience = &self.config.audience;
        for scheme in ["https://", "http://"] {
            if let Some(rest) = audience.strip_prefix(scheme) {
                let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
                return format!("{scheme}{authority}{METADATA_PATH}");
            }
        }
        format!("http://{}{METADATA_PATH}", host.unwrap_or("localhost"))
    }
}

/// The keys of `set` a token with `kid` and `alg` may be checked against.
fn fitting(set: &JwkSet, kid: Option<&str>, alg: Algorithm) -> Vec<DecodingKey> {
    set.keys
        .iter()
        .filter(|k| kid.is_none() || k.common.key_id.as_deref() == kid)
        .filter(|k| fits(k, alg))
        .filter_map(|k| DecodingKey::from_jwk(k).ok())
        .collect()
}

/// Whether a key may check a signature of `alg`: an asymmetric key of the
/// algorithm's family, and of that algorithm if the key names one.
fn fits(key: &Jwk, alg: Algorithm) -> bool {
    use jsonwebtoken::jwk::AlgorithmParameters as P;
    let family = match &key.algorithm {
        P::RSA(_) => matches!(
            alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
        ),
        P::EllipticCurve(_) => matches!(alg, Algorithm::ES256 | Algorithm::ES384),
        P::OctetKeyPair(_) => alg == Algorithm::EdDSA,
        // A symmetric key in the set would let anyone holding it sign.
        _ => false,
    };
    family
        && key
            .common
            .key_algorithm
            .is_none_or(|named| named == jsonwebtoken::jwk::KeyAlgorithm::from(alg))
}

/// Why the crate refused a token, in the log's words.
fn why(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "expired".into(),
        ErrorKind::ImmatureSignature => "not valid yet (`nbf`)".into(),
        ErrorKind::InvalidIssuer => "wrong issuer".into(),
        ErrorKind::InvalidAudience => "wrong audience".into(),
        ErrorKind::InvalidSignature => "bad signature: not signed by the issuer's key".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("no `{claim}` claim"),
        ErrorKind::InvalidAlgorithm => "an algorithm its key does not allow".into(),
        _ => "malformed".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwk(value: Value) -> Jwk {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_asymmetric_keys_of_the_token_s_algorithm_fit() {
        let ec = jwk(
            serde_json::json!({"kty": "EC", "crv": "P-256", "x": "AAAA", "y": "AAAA", "alg": "ES256"}),
        );
        assert!(fits(&ec, Algorithm::ES256));
        assert!(!fits(&ec, Algorithm::ES384), "the key names ES256");
        assert!(!fits(&ec, Algorithm::RS256));
        let rsa = jwk(serde_json::json!({"kty": "RSA", "n": "AQAB", "e": "AQAB"}));
        assert!(fits(&rsa, Algorithm::RS256) && fits(&rsa, Algorithm::PS256));
        assert!(!fits(&rsa, Algorithm::HS256));
        // A shared secret in the key set would let whoever holds it sign.
        let oct = jwk(serde_json::json!({"kty": "oct", "k": "c2VjcmV0"}));
        for alg in [Algorithm::HS256, Algorithm::RS256, Algorithm::ES256] {
            assert!(!fits(&oct, alg));
        }
    }

    #[test]
    fn the_metadata_url_is_beside_an_audience_url_or_on_the_host() {
        let verifier = |audience: &str| {
            Verifier::new(OAuthConfig {
                issuer: "https://login.example.com".into(),
                audience: audience.into(),
                jwks: JwksSource::Url("https://login.example.com/jwks".into()),
                principal_claim: "sub".into(),
                required_scopes: Vec::new(),
                principal_map: Default::default(),
                tool_scopes: Default::default(),
            })
        };
        assert_eq!(
            verifier("https://gb.example.com:8443/mcp").metadata_url(Some("evil")),
            "https://gb.example.com:8443/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            verifier("glovebox").metadata_url(Some("127.0.0.1:7000")),
            "http://127.0.0.1:7000/.well-known/oauth-protected-resource"
        );
        let doc = verifier("glovebox").metadata();
        assert_eq!(doc["resource"], "glovebox");
        assert_eq!(
            doc["authorization_servers"],
            serde_json::json!(["https://login.example.com"])
        );
        assert!(doc.get("scopes_supported").is_none());
    }
}
