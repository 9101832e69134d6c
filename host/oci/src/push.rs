//! Pushing: a component into a registry as a Wasm artifact, under a tag.

use std::collections::BTreeMap;
use std::path::Path;

use glovebox_manifest::OciReference;
use oci_client::annotations::{ORG_OPENCONTAINERS_IMAGE_CREATED, ORG_OPENCONTAINERS_IMAGE_TITLE};
use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::OciImageManifest;
use sha2::{Digest, Sha256};

use crate::OciError;
use crate::artifact::{CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE, check_component, config_blob};
use crate::registry::{Doing, Registry, failed, image};

/// What a push put in the registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pushed {
    /// The OCI manifest's digest: `oci://REGISTRY/NAME@<this>` names this
    /// push for good, whatever the tag later points to.
    pub manifest: String,
    /// The component's digest (`sha256:…`), its SHA-256.
    pub component: String,
    /// The component's size in bytes.
    pub size: u64,
}

/// Pushes the component file `component` to `reference` (which names a
/// tag), titled `title` (the plugin's name).
pub async fn push(
    component: &Path,
    reference: &OciReference,
    title: &str,
) -> Result<Pushed, OciError> {
    if reference.tag.is_none() || reference.digest.is_some() {
        return Err(OciError::PushTarget {
            reference: reference.text.clone(),
            problem: "a push names a tag, and only a tag (the registry gives the digest)"
                .to_owned(),
        });
    }
    let bytes = tokio::fs::read(component)
        .await
        .map_err(|error| OciError::File {
            action: "read",
            path: component.to_path_buf(),
            error,
        })?;
    check_component(&bytes).map_err(|problem| OciError::NotAComponent {
        path: component.to_path_buf(),
        problem,
    })?;
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
    let size = bytes.len() as u64;
    let layer = ImageLayer::new(bytes, LAYER_MEDIA_TYPE.to_owned(), None);
    let config = Config::new(config_blob(&digest), CONFIG_MEDIA_TYPE.to_owned(), None);
    let annotations = BTreeMap::from([
        (ORG_OPENCONTAINERS_IMAGE_TITLE.to_owned(), title.to_owned()),
        (
            ORG_OPENCONTAINERS_IMAGE_CREATED.to_owned(),
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        ),
    ]);
    let manifest =
        OciImageManifest::build(std::slice::from_ref(&layer), &config, Some(annotations));
    let registry = Registry::new([reference]);
    let target = image(reference, None)?;
    registry
        .client
        .push(&target, &[layer], config, &registry.auth, Some(manifest))
        .await
        .map_err(|e| failed(reference, Doing::Push, e))?;
    let manifest = registry
        .client
        .fetch_manifest_digest(&target, &registry.auth)
        .await
        .map_err(|e| failed(reference, Doing::Push, e))?;
    Ok(Pushed {
        manifest,
        component: digest,
        size,
    })
}
