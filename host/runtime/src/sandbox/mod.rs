//! The hands: what a guest can reach during one call.
//!
//! This is the only module that turns operator grants into ambient authority:
//! it opens the granted directories, copies the granted environment variables
//! and arms the HTTP allowlist. Everything is denied unless a manifest grants
//! it; sockets are never granted.

pub mod bounds;
pub mod capture;
pub mod connect;
pub mod egress;
pub mod http;
pub mod limiter;
pub mod quota;
pub mod ranges;
pub mod symlink;
pub mod tools;

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::manifest::{Access, FsGrant, HttpGrant, PluginManifest, Secrets};
use capture::CapturePipe;
use egress::Egress;
use http::HttpPolicy;
use limiter::CallLimiter;
use quota::WriteBudget;

/// The grants of one plugin, prepared once at load so each call only copies them.
#[derive(Clone)]
pub struct Grants {
    fs: Arc<[FsGrant]>,
    env: Arc<[String]>,
    http: Arc<[HttpGrant]>,
    /// The host's secrets as the plugin's requests meet them.
    egress: Egress,
    /// Guest path of the session's scratch directory, if granted.
    scratch: Option<Arc<str>>,
}

impl Grants {
    /// A plugin's grants, its `[[http]]` injections resolved from the host's `secrets`.
    pub fn from_manifest(manifest: &PluginManifest, secrets: &Secrets) -> Grants {
        Grants {
            fs: manifest.fs.clone().into(),
            env: manifest.env.clone().into(),
            egress: Egress::new(&manifest.http, secrets),
            http: manifest.http.clone().into(),
            scratch: manifest.scratch.as_deref().map(Arc::from),
        }
    }

    /// The host's secrets as this plugin meets them: what masks them in its calls' reports.
    pub fn egress(&self) -> &Egress {
        &self.egress
    }

    /// No capabilities at all: used to list a plugin's tools.
    pub fn none() -> Grants {
        Grants {
            fs: Arc::new([]),
            env: Arc::new([]),
            http: Arc::new([]),
            egress: Egress::default(),
            scratch: None,
        }
    }

    /// These grants with `dirs` added: directories decided for one call
    /// (a session's worktree of a `[[workspace]]`), opened here as every
    /// granted directory is.
    pub fn with_dirs(&self, dirs: Vec<FsGrant>) -> Grants {
        if dirs.is_empty() {
            return self.clone();
        }
        let mut fs = self.fs.to_vec();
        fs.extend(dirs);
        Grants {
            fs: fs.into(),
            ..self.clone()
        }
    }

    /// Whether these grants mount a scratch directory.
    pub fn wants_scratch(&self) -> bool {
        self.scratch.is_some()
    }
}

/// The data of one call's store. Built fresh for every call and dropped after it.
pub struct CallState {
    wasi: WasiCtx,
    http_ctx: WasiHttpCtx,
    table: ResourceTable,
    /// What the call used of the bounds `bounds` counts.
    bounds: bounds::Usage,
    pub(crate) http: HttpPolicy,
    pub(crate) limiter: CallLimiter,
    pub(crate) stdout: CapturePipe,
    pub(crate) stderr: CapturePipe,
    /// What the call may still write to its grants and scratch directory.
    pub(crate) writes: Arc<WriteBudget>,
    /// The tools it may call from inside its run (none unless handed over).
    pub(crate) tools: tools::Nested,
}

impl CallState {
    /// Builds the state for a call with `grants`, a memory cap and a cap on
    /// captured output per stream. `scratch` is the host directory mounted
    /// read-write at the grants' scratch path (ignored if they have none);
    /// `writes` counts what the guest writes to its directories.
    pub fn new(
        grants: &Grants,
        scratch: Option<&Path>,
        memory_cap: u64,
        stdio_cap: u64,
        writes: Arc<WriteBudget>,
    ) -> Result<CallState> {
        let stdout = CapturePipe::new(stdio_cap);
        let stderr = CapturePipe::new(stdio_cap);
        let mut b = WasiCtxBuilder::new();
        b.stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .max_random_size(bounds::RANDOM_REQUEST);
        for grant in grants.fs.iter() {
            let perms = match grant.access {
                Access::ReadOnly => FsPerms::ReadOnly,
                Access::ReadWrite => FsPerms::ReadWrite,
            };
            b.preopened_dir(&grant.host, &grant.guest, perms)
                .map_err(anyhow::Error::from)
                .with_context(|| {
                    format!(
                        "cannot open granted directory `{}` (guest `{}`)",
                        grant.host.display(),
                        grant.guest
                    )
                })?;
        }
        if let (Some(guest), Some(host)) = (grants.scratch.as_deref(), scratch) {
            b.preopened_dir(host, guest, FsPerms::ReadWrite)
                .map_err(anyhow::Error::from)
                .with_context(|| {
                    format!(
                        "cannot open the scratch directory `{}` (guest `{guest}`)",
                        host.display()
                    )
                })?;
        }
        for name in grants.env.iter() {
            // Only the named variables, and only if the host has them.
            if let Ok(value) = std::env::var(name) {
                b.env(name, value);
            }
        }
        Ok(CallState {
            wasi: b.build(),
            http_ctx: {
                let mut ctx = WasiHttpCtx::new();
                ctx.set_field_size_limit(bounds::HEADER_MAP_BYTES);
                ctx
            },
            table: bounds::table(),
            bounds: bounds::Usage::default(),
            http: HttpPolicy::new(grants.http.clone(), grants.egress.clone()),
            limiter: CallLimiter::new(memory_cap),
            stdout,
            stderr,
            writes,
            tools: tools::Nested::default(),
        })
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http_ctx,
            table: &mut self.table,
            hooks: &mut self.http,
        }
    }
}
