//! The CNCF Wasm OCI artifact: what a pushed component looks like in a
//! registry, and how a pulled manifest is checked to be one.

use glovebox_manifest::{LockedComponent, OciReference};
use oci_client::manifest::OciImageManifest;

use crate::OciError;

/// The config blob's media type.
pub(crate) const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";

/// The component layer's media type.
pub(crate) const LAYER_MEDIA_TYPE: &str = "application/wasm";

/// The older layer media type (`wasm-to-oci`), still taken on a pull.
const LEGACY_LAYER_MEDIA_TYPE: &str = oci_client::manifest::WASM_LAYER_MEDIA_TYPE;

/// The config blob of a component of digest `layer_digest`.
pub(crate) fn config_blob(layer_digest: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "created": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer_digest],
    }))
    .expect("a JSON object serializes")
}

/// The pin of `reference`, whose OCI manifest of digest `digest` is
/// `manifest`: its one component layer, no larger than `max_bytes`.
pub(crate) fn pin_of(
    reference: &OciReference,
    manifest: &OciImageManifest,
    digest: String,
    max_bytes: u64,
) -> Result<LockedComponent, OciError> {
    let wasm: Vec<_> = manifest
        .layers
        .iter()
        .filter(|l| l.media_type == LAYER_MEDIA_TYPE || l.media_type == LEGACY_LAYER_MEDIA_TYPE)
        .collect();
    let [layer] = wasm.as_slice() else {
        let types: Vec<&str> = manifest
            .layers
            .iter()
            .map(|l| l.media_type.as_str())
            .collect();
        return Err(OciError::NotWasm {
            reference: reference.text.clone(),
            detail: format!(
                "it has {} `{LAYER_MEDIA_TYPE}` layers (layers: {})",
                wasm.len(),
                if types.is_empty() {
                    "none".to_owned()
                } else {
                    types.join(", ")
                }
            ),
        });
    };
    let size = u64::try_from(layer.size).unwrap_or(0);
    if size > max_bytes {
        return Err(OciError::TooLarge {
            reference: reference.text.clone(),
            size,
            limit: max_bytes,
        });
    }
    if !layer.digest.starts_with("sha256:") {
        return Err(OciError::NotWasm {
            reference: reference.text.clone(),
            detail: format!("its layer digest `{}` is not sha256", layer.digest),
        });
    }
    Ok(LockedComponent {
        reference: reference.text.clone(),
        manifest: digest,
        component: layer.digest.clone(),
        size,
    })
}

/// Whether `bytes` start as a WebAssembly component (not a core module):
/// the error says what they are instead.
pub(crate) fn check_component(bytes: &[u8]) -> Result<(), String> {
    match bytes.get(..8) {
        Some([0, b'a', b's', b'm', _, _, 1, 0]) => Ok(()),
        Some([0, b'a', b's', b'm', 1, 0, 0, 0]) => Err("a core module".to_owned()),
        _ => Err("not WebAssembly at all".to_owned()),
    }
}
