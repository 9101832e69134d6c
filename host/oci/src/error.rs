//! What can go wrong between Glovebox and a registry, each worded once with
//! the reference it concerns and what to do.

use std::path::PathBuf;

use glovebox_manifest::ConfigError;

/// A push or a pull that did not happen.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The registry could not be reached, or answered with an error.
    #[error("registry `{registry}` for `{reference}`: {detail}: {fix}")]
    Registry {
        /// `host[:port]`.
        registry: String,
        /// The reference as written.
        reference: String,
        /// What the client or the registry said.
        detail: String,
        /// What to do about it.
        fix: String,
    },

    /// What the reference names is not a component artifact.
    #[error(
        "`{reference}` is not a Wasm component artifact: {detail}: push a component with `glovebox plugin push` (one `application/wasm` layer)"
    )]
    NotWasm {
        /// The reference as written.
        reference: String,
        /// What was found instead.
        detail: String,
    },

    /// The component is larger than the host takes.
    #[error(
        "`{reference}`'s component is {size} bytes, more than `runtime.max_component_bytes` ({limit}): raise that limit if the component is expected to be that large"
    )]
    TooLarge {
        /// The reference as written.
        reference: String,
        /// The size the registry declared, or the bytes received so far.
        size: u64,
        /// The limit.
        limit: u64,
    },

    /// Bytes that do not match the digest that names them.
    #[error(
        "`{reference}` came back with the wrong digest: expected `{expected}`, got `{actual}`: the registry's copy is damaged or was tampered with, and nothing was kept; push the component again or ask the registry's owner"
    )]
    Tampered {
        /// The reference as written.
        reference: String,
        /// The digest asked for.
        expected: String,
        /// The digest of what came.
        actual: String,
    },

    /// A push names something other than a tag.
    #[error("cannot push to `{reference}`: {problem}: push to a tag, `oci://REGISTRY/NAME:TAG`")]
    PushTarget {
        /// The reference as written.
        reference: String,
        /// What is wrong with it.
        problem: String,
    },

    /// The file to push is not a component.
    #[error(
        "`{path}` is not a WebAssembly component ({problem}): build it for `wasm32-wasip2` (a component, not a core module)"
    )]
    NotAComponent {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        problem: String,
    },

    /// A local file could not be read or written.
    #[error("cannot {action} `{path}`: {error}: check its permissions and the free space")]
    File {
        /// `read`, `write`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },

    /// The lock file does not read.
    #[error(transparent)]
    Lock(#[from] ConfigError),
}
