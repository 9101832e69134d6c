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

#[cfg(test)]
mod tests {
    use super::*;
    use oci_client::manifest::OciDescriptor;

    fn manifest(layers: &[(&str, i64)]) -> OciImageManifest {
        OciImageManifest {
            layers: layers
                .iter()
                .map(|(media_type, size)| OciDescriptor {
                    media_type: (*media_type).to_owned(),
                    digest: format!("sha256:{}", "a".repeat(64)),
                    size: *size,
                    ..OciDescriptor::default()
                })
                .collect(),
            ..OciImageManifest::default()
        }
    }

    fn reference() -> OciReference {
        OciReference::parse("oci://127.0.0.1:5000/glovebox/echo:1").unwrap()
    }

    #[test]
    fn a_component_larger_than_the_host_takes_is_refused_before_the_download() {
        let refused = pin_of(
            &reference(),
            &manifest(&[(LAYER_MEDIA_TYPE, 101)]),
            "d".into(),
            100,
        );
        assert!(
            matches!(
                refused,
                Err(OciError::TooLarge {
                    size: 101,
                    limit: 100,
                    ..
                })
            ),
            "{refused:?}"
        );
        let pin = pin_of(
            &reference(),
            &manifest(&[(LAYER_MEDIA_TYPE, 100)]),
            "d".into(),
            100,
        )
        .unwrap();
        assert_eq!(pin.size, 100);
    }

    #[test]
    fn an_artifact_without_exactly_one_wasm_layer_is_not_a_component() {
        for layers in [
            vec![],
            vec![("application/vnd.oci.image.layer.v1.tar", 1)],
            vec![(LAYER_MEDIA_TYPE, 1), (LAYER_MEDIA_TYPE, 1)],
        ] {
            let refused = pin_of(&reference(), &manifest(&layers), "d".into(), 100);
            assert!(
                matches!(refused, Err(OciError::NotWasm { .. })),
                "{refused:?}"
            );
        }
    }

    #[test]
    fn only_a_component_is_pushed() {
        assert!(check_component(&[0, b'a', b's', b'm', 0x0d, 0, 1, 0]).is_ok());
        assert_eq!(
            check_component(&[0, b'a', b's', b'm', 1, 0, 0, 0]).unwrap_err(),
            "a core module"
        );
        assert!(check_component(b"not wasm").is_err());
    }
}
