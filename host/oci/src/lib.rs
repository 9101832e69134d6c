//! Plugin components through an OCI registry, the way other component
//! hosts ship them: `glovebox plugin push` puts a component in a registry as
//! a Wasm artifact, and a manifest's `component = "oci://…"` takes it from
//! there.
//!
//! Pulling happens before a config loads ([`pull`]), never while a call
//! runs: each reference is resolved once, pinned in the config's
//! `glovebox.lock` (the OCI manifest's digest and the component's), and its
//! bytes kept in the cache under their own digest. After that the registry is
//! not needed: a config whose components are pulled loads with the registry
//! down, and a tag that moves changes nothing until `plugin pull --update`.
//! What the lock pins is what loads: the component digest becomes the
//! plugin's `sha256` pin (in `glovebox-manifest`), and a signed plugin's
//! signature covers it as for a local file.
//!
//! What a registry sends is not trusted: every blob is checked against the
//! digest that names it before it is kept (a tampered blob is refused and
//! nothing is written), a component larger than `runtime.max_component_bytes`
//! is refused before and while it downloads, and only registries on this
//! machine are reached over plain HTTP.
//!
//! The artifact layout is the CNCF Wasm OCI artifact (config media type
//! `application/vnd.wasm.config.v0+json`, one `application/wasm` layer), so
//! other tools that speak it can push to and pull from the same
//! repositories.

#![forbid(unsafe_code)]

mod artifact;
mod error;
mod pull;
mod push;
mod registry;

pub use error::OciError;
pub use pull::{Pulled, pull};
pub use push::{Pushed, push};
