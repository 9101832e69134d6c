//! What one call can make the host hold, bounded per call (threat 40).
//!
//! A guest's linear memory is capped by the limiter, but a guest can also ask
//! the host to keep things for it on the host's side: resource-table entries
//! (pollables, streams, descriptors, HTTP requests and header maps), open host
//! file descriptors, random bytes, header values. Each is bounded here, per call,
//! with numbers small enough that every call slot at its bounds together stays far
//! below the host's memory and descriptor limits, and large enough that no real
//! tool meets them:
//!
//! - [`RESOURCES`] entries in the call's resource table (wasmtime's default is a
//!   million), which also bounds how many header maps of at most
//!   [`HEADER_MAP_BYTES`] each a call can hold: 16 MiB in all;
//! - [`HEADER_MAP_BYTES`] in one header map the guest builds;
//! - [`DESCRIPTORS`] files and directories the guest opened and still holds;
//! - [`RANDOM_REQUEST`] random bytes in one request and [`RANDOM_PER_CALL`] in all.
//!
//! A call past one of them is stopped with [`Exceeded`], which the call turns into
//! a typed error (`host_limit`) naming the bound: the host keeps serving. The same
//! bound on the resource table holds for permission hooks.

use std::collections::HashSet;

use anyhow::Result;
use wasmtime::component::{Linker, Resource, ResourceTable, ResourceTableError};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, HostDescriptor, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::bindings::random::{insecure, random};
use wasmtime_wasi_http::FieldMapError;

use super::CallState;
use super::quota::ENTRY_BYTES;

/// Resource-table entries a call may hold at once.
pub const RESOURCES: usize = 1024;
/// Files and directories a call may hold open at once (each is a host descriptor).
pub const DESCRIPTORS: usize = 256;
/// Random bytes in one `get-random-bytes` (or insecure) request.
pub const RANDOM_REQUEST: u64 = 1 << 20;
/// Random bytes a call may ask for in all.
pub const RANDOM_PER_CALL: u64 = 16 << 20;
/// Bytes of names and values in one header map a guest builds (wasmtime's
/// default is 128 KiB).
pub const HEADER_MAP_BYTES: usize = 16 << 10;

/// The `wasi:filesystem/types` and `wasi:random` instances `wasmtime_wasi::p2` links.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";
const RANDOM: &str = "wasi:random/random@0.2.12";
const INSECURE: &str = "wasi:random/insecure@0.2.12";

/// Which bound a call passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Resources,
    Descriptors,
    RandomRequest,
    RandomPerCall,
    HeaderMap,
}

impl Bound {
    /// What the bound counts, for messages: "... more than {limit} {what}".
    pub fn what(self) -> &'static str {
        match self {
            Bound::Resources => {
                "resource-table entries (pollables, streams, descriptors, HTTP requests and header maps) at once"
            }
            Bound::Descriptors => "open files and directories at once",
            Bound::RandomRequest => "random bytes in one request",
            Bound::RandomPerCall => "random bytes in all",
            Bound::HeaderMap => "bytes of names and values in one header map",
        }
    }

    pub fn limit(self) -> u64 {
        match self {
            Bound::Resources => RESOURCES as u64,
            Bound::Descriptors => DESCRIPTORS as u64,
            Bound::RandomRequest => RANDOM_REQUEST,
            Bound::RandomPerCall => RANDOM_PER_CALL,
            Bound::HeaderMap => HEADER_MAP_BYTES as u64,
        }
    }
}

/// The error a call is stopped with when it passes a bound.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the guest asked the host to hold more than {} {}", .0.limit(), .0.what())]
pub struct Exceeded(pub Bound);

/// Which bound `err` (a guest run's error) reports passing, if any.
pub fn exceeded(err: &wasmtime::Error) -> Option<Bound> {
    err.chain().find_map(|e| {
        if let Some(Exceeded(bound)) = e.downcast_ref::<Exceeded>() {
            Some(*bound)
        } else if let Some(ResourceTableError::Full) = e.downcast_ref::<ResourceTableError>() {
            Some(Bound::Resources)
        } else if let Some(FieldMapError::TotalSizeTooBig | FieldMapError::TooManyFields) =
            e.downcast_ref::<FieldMapError>()
        {
            Some(Bound::HeaderMap)
        } else {
            None
        }
    })
}

/// A resource table bounded to [`RESOURCES`] entries.
pub fn table() -> ResourceTable {
    let mut table = ResourceTable::new();
    table.set_max_capacity(RESOURCES);
    table
}

/// What a call has used of the bounds that are counted rather than capped by
/// wasmtime.
#[derive(Default)]
pub struct Usage {
    random: u64,
    /// Table slots of the descriptors the guest opened (some may have been
    /// dropped since: see [`Usage::open_descriptors`]).
    opened: HashSet<u32>,
}

impl Usage {
    fn take_random(&mut self, len: u64) -> Result<(), Exceeded> {
        if len > RANDOM_REQUEST {
            return Err(Exceeded(Bound::RandomRequest));
        }
        self.random = self.random.saturating_add(len);
        if self.random > RANDOM_PER_CALL {
            return Err(Exceeded(Bound::RandomPerCall));
        }
        Ok(())
    }

    /// How many of the descriptors the guest opened it still holds: a slot that
    /// no longer holds a descriptor was dropped (and forgotten here).
    fn open_descriptors(&mut self, table: &ResourceTable) -> usize {
        self.opened
            .retain(|&rep| table.get::<Descriptor>(&Resource::new_borrow(rep)).is_ok());
        self.opened.len()
    }
}

/// Replaces `open-at` and the random-bytes functions in `linker` (which already
/// has WASI) with counted ones.
pub fn add_to_linker(linker: &mut Linker<CallState>) -> Result<()> {
    linker.allow_shadowing(true);
    let defined = shadow(linker);
    linker.allow_shadowing(false);
    defined
}

fn shadow(linker: &mut Linker<CallState>) -> Result<()> {
    linker.instance(FILESYSTEM_TYPES)?.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store,
         (fd, path_flags, path, open_flags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            Box::new(async move {
                let state = store.data_mut();
                if state.bounds.open_descriptors(&state.table) >= DESCRIPTORS {
                    return Err(Exceeded(Bound::Descriptors).into());
                }
                // A file this open creates takes a block of the call's write
                // budget (see `quota`): one that exists already does not.
                let budget = state.writes.clone();
                let mut view = state.filesystem();
                let creates = open_flags.contains(OpenFlags::CREATE)
                    && HostDescriptor::stat_at(
                        &mut view,
                        Resource::new_borrow(fd.rep()),
                        path_flags,
                        path.clone(),
                    )
                    .await
                    .is_err();
                if creates && !budget.take(ENTRY_BYTES) {
                    return Ok((Err(ErrorCode::InsufficientSpace),));
                }
                match HostDescriptor::open_at(&mut view, fd, path_flags, path, open_flags, flags)
                    .await
                {
                    Ok(opened) => {
                        store.data_mut().bounds.opened.insert(opened.rep());
                        Ok((Ok(opened),))
                    }
                    Err(e) => {
                        if creates {
                            budget.give_back(ENTRY_BYTES);
                        }
                        Ok((Err(e.downcast()?),))
                    }
                }
            })
        },
    )?;
    for (instance, name) in [
        (RANDOM, "get-random-bytes"),
        (INSECURE, "get-insecure-random-bytes"),
    ] {
        let secure = instance == RANDOM;
        linker
            .instance(instance)?
            .func_wrap(name, move |mut store, (len,): (u64,)| {
                let state = store.data_mut();
                state.bounds.take_random(len)?;
                let ctx = state.wasi.random();
                let bytes = if secure {
                    random::Host::get_random_bytes(ctx, len)?
                } else {
                    insecure::Host::get_insecure_random_bytes(ctx, len)?
                };
                Ok((bytes,))
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threat_40_random_bytes_are_bounded_per_request_and_per_call() {
        let mut usage = Usage::default();
        assert!(matches!(
            usage.take_random(RANDOM_REQUEST + 1),
            Err(Exceeded(Bound::RandomRequest))
        ));
        for _ in 0..(RANDOM_PER_CALL / RANDOM_REQUEST) {
            usage.take_random(RANDOM_REQUEST).unwrap();
        }
        assert!(matches!(
            usage.take_random(1),
            Err(Exceeded(Bound::RandomPerCall))
        ));
    }
}
