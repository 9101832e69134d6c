//! The two settings of the system allocator the host changes: glibc's mmap
//! threshold, fixed at 128 KiB, and its number of heaps, one per core.
//!
//! Why the threshold: glibc raises it each time a mapped block is freed, up
//! to 32 MiB. After the first multi-megabyte buffer is freed (a job's
//! output, a `job_wait` answer holding eight of them), blocks of that size
//! come from the per-thread heaps instead, and what is freed there stays in
//! the process: a flood of jobs with 2 MB outputs held 815 MiB for about
//! 130 MiB in use (`docs/benchmarks.md`, "Growth bounded"). Set explicitly,
//! the threshold no longer moves: a block of 128 KiB or more is mapped on
//! its own and goes back to the system when it is freed. Smaller blocks,
//! the host's everyday ones, are untouched.
//!
//! Why the heaps: glibc gives threads up to eight heaps a core, and a small
//! block freed in one heap is reused only by that heap. The host's threads
//! (the runtime's workers, the blocking pool that runs the store's writes,
//! sled's own) allocate and free the store's cached pages all day, so the
//! holes spread over every heap: 100,000 short sessions left 67 MiB above
//! the idle server with glibc's default, 58 MiB with two heaps on two cores
//! (the `session_churn` bench, same build). One heap a core still gives each
//! thread running at one moment a heap of its own, and bounds where the
//! holes can be.
//!
//! An operator's own setting wins: with a `glibc.malloc.` tunable in
//! `GLIBC_TUNABLES` or any `MALLOC_*` variable in the environment nothing is
//! changed. Other C libraries (musl) and other systems have neither
//! setting: nothing to do.
//!
//! The binary's one `unsafe` (the crate root denies it everywhere else):
//! `mallopt` only changes parameters of the allocator, and it is called
//! first thing in `main`, before any thread exists.

/// What [`tune`] did, for the log once there is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tuning {
    /// The threshold is fixed at [`MMAP_THRESHOLD`] bytes, and the heaps
    /// are this many.
    Fixed { arenas: i32 },
    /// The environment sets the allocator: left as the operator said.
    Operator,
    /// Not glibc: nothing to set.
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    NotGlibc,
    /// glibc refused the value.
    Refused,
}

/// Blocks this size and larger are mapped on their own (glibc's initial
/// threshold, which it would otherwise raise).
pub const MMAP_THRESHOLD: i32 = 128 * 1024;

/// How many heaps for `cores` cores: one each, and at least two (so the
/// runtime's workers and the store's writers need not queue on one lock).
fn arenas_for(cores: usize) -> i32 {
    i32::try_from(cores).unwrap_or(i32::MAX).max(2)
}

/// Whether the environment (`vars`, as `std::env::vars_os` gives them)
/// already tunes glibc's malloc.
fn operator_tunes(
    mut vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> bool {
    vars.any(|(name, value)| {
        let name = name.to_string_lossy();
        name.starts_with("MALLOC_")
            || (name == "GLIBC_TUNABLES" && value.to_string_lossy().contains("glibc.malloc."))
    })
}

/// Fixes the mmap threshold and the heaps, unless the environment tunes
/// malloc itself.
pub fn tune() -> Tuning {
    if operator_tunes(std::env::vars_os()) {
        return Tuning::Operator;
    }
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    set(arenas_for(cores))
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn set(arenas: i32) -> Tuning {
    // SAFETY: `mallopt` takes two integers and changes an allocator
    // parameter; no memory is handed over. Called before any thread starts.
    let apply = |param, value| unsafe { libc::mallopt(param, value) } == 1;
    if apply(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) && apply(libc::M_ARENA_MAX, arenas) {
        Tuning::Fixed { arenas }
    } else {
        Tuning::Refused
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set(_arenas: i32) -> Tuning {
    Tuning::NotGlibc
}

/// Says in the log what [`tune`] did (a refusal is worth a warning: the
/// host then keeps what big buffers it frees, see the module docs).
pub fn report(tuning: Tuning) {
    match tuning {
        Tuning::Fixed { arenas } => {
            tracing::debug!(
                bytes = MMAP_THRESHOLD,
                arenas,
                "malloc: mmap threshold fixed, one heap a core"
            )
        }
        Tuning::Operator => {
            tracing::debug!("malloc: tuned by the environment, left as it is")
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        Tuning::NotGlibc => {}
        Tuning::Refused => tracing::warn!(
            bytes = MMAP_THRESHOLD,
            "malloc: glibc refused the mmap threshold or the heap count; freed memory may stay in the process (set GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072:glibc.malloc.arena_max=2 in the service's environment)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env(pairs: &[(&str, &str)]) -> impl Iterator<Item = (OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn an_operators_malloc_setting_is_left_alone_and_others_are_not() {
        assert!(!operator_tunes(env(&[("PATH", "/usr/bin")])));
        assert!(operator_tunes(env(&[("MALLOC_MMAP_THRESHOLD_", "65536")])));
        assert!(operator_tunes(env(&[("MALLOC_ARENA_MAX", "4")])));
        assert!(operator_tunes(env(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.arena_max=2"
        )])));
        // Tunables of something else are not a malloc setting.
        assert!(!operator_tunes(env(&[(
            "GLIBC_TUNABLES",
            "glibc.rtld.optional_static_tls=2048"
        )])));
    }

    #[test]
    fn one_heap_a_core_and_never_fewer_than_two() {
        assert_eq!(arenas_for(1), 2);
        assert_eq!(arenas_for(2), 2);
        assert_eq!(arenas_for(16), 16);
    }

    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn both_settings_are_taken_on_glibc() {
        assert_eq!(set(2), Tuning::Fixed { arenas: 2 });
    }
}
