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

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::manifest::{
    Access, CallerFsGrant, FsGrant, GrantCaller, HttpGrant, PluginManifest, Secrets,
};
use capture::CapturePipe;
use egress::Egress;
use http::HttpPolicy;
use limiter::CallLimiter;
use quota::WriteBudget;

/// The grants of one plugin, prepared once at load so each call only copies them.
#[derive(Clone)]
pub struct Grants {
    fs: Arc<[FsGrant]>,
    /// The directory grants that depend on the caller, resolved per call
    /// ([`Grants::for_caller`]).
    per_caller: Arc<[CallerFsGrant]>,
    /// Who the call is for: what `only` on an `[[http]]` grant reads.
    caller: Arc<GrantCaller>,
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
            per_caller: manifest.per_caller.clone().into(),
            caller: Arc::default(),
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
            per_caller: Arc::new([]),
            caller: Arc::default(),
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

    /// These grants as `caller` holds them: each directory grant that
    /// depends on the caller resolved to the caller's directory (made on
    /// first use, mode 0700, below its template's base) or left out when its
    /// `only` is not for the caller; and `only` on the `[[http]]` grants read
    /// for the caller. `Err` says why the call cannot have its directory
    /// (a placeholder with no value, or a value no directory may be named).
    pub fn for_caller(&self, caller: GrantCaller) -> Result<Grants, String> {
        if self.per_caller.is_empty() && self.http.iter().all(|g| g.only.is_everyone()) {
            return Ok(self.clone());
        }
        let mut fs = self.fs.to_vec();
        for grant in self.per_caller.iter() {
            if !grant.only.admits(&caller) {
                continue;
            }
            let host = caller_dir(grant, &caller)?;
            fs.push(FsGrant {
                host,
                guest: grant.guest.clone(),
                access: grant.access,
            });
        }
        Ok(Grants {
            fs: fs.into(),
            caller: Arc::new(caller),
            ..self.clone()
        })
    }

    /// Whether these grants mount a scratch directory.
    pub fn wants_scratch(&self) -> bool {
        self.scratch.is_some()
    }
}

/// `caller`'s directory of `grant`: its template filled, made when missing
/// (mode 0700), and still below the template's base once resolved (a
/// symbolic link put in its place by anyone is refused, not followed out).
fn caller_dir(grant: &CallerFsGrant, caller: &GrantCaller) -> Result<PathBuf, String> {
    let at = format!("`fs[{}].host` (`{}`)", grant.index, grant.host.written);
    let path = grant
        .host
        .fill(caller)
        .map_err(|why| format!("the plugin's directory grant {at} names the caller, and {why}"))?;
    if !grant.host.is_per_caller() {
        return Ok(path);
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(&path).map_err(|e| {
        format!(
            "cannot make {}, the caller's directory of {at}: {e}",
            path.display()
        )
    })?;
    let resolved = std::fs::canonicalize(&path).map_err(|e| {
        format!(
            "cannot resolve {}, the caller's directory of {at}: {e}",
            path.display()
        )
    })?;
    // The base is canonical and the names below it plain, so the path
    // resolves to itself unless a link is on it.
    if resolved != path || !resolved.is_dir() {
        return Err(format!(
            "{}, the caller's directory of {at}, resolves to {}: a symbolic link is in its way; remove it",
            path.display(),
            resolved.display(),
        ));
    }
    Ok(resolved)
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
            http: HttpPolicy::new(
                grants.http.clone(),
                grants.caller.clone(),
                grants.egress.clone(),
            ),
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
