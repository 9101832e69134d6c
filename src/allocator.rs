//! The one setting of the system allocator the host changes: glibc's mmap
//! threshold, fixed at 128 KiB.
//!
//! Why: glibc raises its mmap threshold each time a mapped block is freed,
//! up to 32 MiB. After the first multi-megabyte buffer is freed (a job's
//! output, a `job_wait` answer holding eight of them), blocks of that size
//! come from the per-thread heaps instead, up to eight heaps a core, and
//! what is freed there stays in the process: a flood of jobs with 2 MB
//! outputs held 815 MiB for about 130 MiB in use (`docs/benchmarks.md`,
//! "Growth bounded"). Set explicitly, the threshold no longer moves: a block
//! of 128 KiB or more is mapped on its own and goes back to the system when
//! it is freed. Smaller blocks, the host's everyday ones, are untouched.
//!
//! An operator's own setting wins: with `GLIBC_TUNABLES` or
//! `MALLOC_MMAP_THRESHOLD_` in the environment nothing is changed. Other C
//! libraries (musl) and other systems have no such threshold: nothing to do.
//!
//! The binary's one `unsafe` (the crate root denies it everywhere else):
//! `mallopt` only changes a parameter of the allocator, and it is called
//! first thing in `main`, before any thread exists.

/// What [`tune`] did, for the log once there is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tuning {
    /// The threshold is fixed at [`MMAP_THRESHOLD`] bytes.
    Fixed,
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

/// Whether the environment (as `var` reads it) already tunes glibc's malloc.
fn operator_tunes(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> bool {
    var("MALLOC_MMAP_THRESHOLD_").is_some()
        || var("GLIBC_TUNABLES").is_some_and(|t| t.to_string_lossy().contains("glibc.malloc."))
}

/// Fixes the mmap threshold, unless the environment tunes malloc itself.
pub fn tune() -> Tuning {
    if operator_tunes(|name| std::env::var_os(name)) {
        return Tuning::Operator;
    }
    set_threshold()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn set_threshold() -> Tuning {
    // SAFETY: `mallopt` takes two integers and changes an allocator
    // parameter; no memory is handed over. Called before any thread starts.
    let set = unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) };
    if set == 1 {
        Tuning::Fixed
    } else {
        Tuning::Refused
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_threshold() -> Tuning {
    Tuning::NotGlibc
}

/// Says in the log what [`tune`] did (a refusal is worth a warning: the
/// host then keeps what big buffers it frees, see the module docs).
pub fn report(tuning: Tuning) {
    match tuning {
        Tuning::Fixed => {
            tracing::debug!(bytes = MMAP_THRESHOLD, "malloc: mmap threshold fixed")
        }
        Tuning::Operator => {
            tracing::debug!("malloc: tuned by the environment, left as it is")
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        Tuning::NotGlibc => {}
        Tuning::Refused => tracing::warn!(
            bytes = MMAP_THRESHOLD,
            "malloc: glibc refused the mmap threshold; freed multi-megabyte buffers may stay in the process (set GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072 in the service's environment)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, OsString)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn an_operators_malloc_setting_is_left_alone_and_others_are_not() {
        assert!(!operator_tunes(env(&[])));
        assert!(operator_tunes(env(&[("MALLOC_MMAP_THRESHOLD_", "65536")])));
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
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn the_threshold_is_set_on_glibc() {
        assert_eq!(set_threshold(), Tuning::Fixed);
    }
}
