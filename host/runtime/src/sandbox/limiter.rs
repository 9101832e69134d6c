//! Per-call resource limits: a memory cap that also records peak usage, so a
//! limit hit can be told apart from any other trap.

use wasmtime::ResourceLimiter;

/// Table elements a single call may hold. Generous: interpreters compiled to
/// Wasm keep large function tables.
const MAX_TABLE_ELEMENTS: usize = 1_000_000;

/// Enforces the manifest's memory cap over all the linear memories of one
/// store and keeps the peak for metering.
#[derive(Debug)]
pub struct CallLimiter {
    memory_cap: usize,
    /// Bytes currently held by all linear memories of the store.
    current: usize,
    /// Highest value `current` reached.
    peak: usize,
    /// Set when a growth was refused because of the cap.
    exceeded: bool,
}

impl CallLimiter {
    pub fn new(memory_cap: u64) -> CallLimiter {
        CallLimiter {
            memory_cap: usize::try_from(memory_cap).unwrap_or(usize::MAX),
            current: 0,
            peak: 0,
            exceeded: false,
        }
    }

    pub fn peak_bytes(&self) -> u64 {
        self.peak as u64
    }

    pub fn exceeded(&self) -> bool {
        self.exceeded
    }
}

impl ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let after = self.current.saturating_sub(current).saturating_add(desired);
        if after > self.memory_cap {
            self.exceeded = true;
            // Trap rather than return -1 from memory.grow: a guest allocator
            // would abort anyway, and a trap names the cause precisely.
            return Err(wasmtime::format_err!(
                "memory limit of {} bytes reached (asked for {} bytes in all)",
                self.memory_cap,
                after
            ));
        }
        if maximum.is_some_and(|max| desired > max) {
            return Ok(false);
        }
        self.current = after;
        self.peak = self.peak.max(after);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS && maximum.is_none_or(|max| desired <= max))
    }

    fn instances(&self) -> usize {
        64
    }

    fn tables(&self) -> usize {
        64
    }

    fn memories(&self) -> usize {
        16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_peak_across_memories_and_refuses_past_the_cap() {
        let mut l = CallLimiter::new(100);
        assert!(l.memory_growing(0, 40, None).unwrap());
        assert!(l.memory_growing(0, 50, None).unwrap());
        assert_eq!(l.peak_bytes(), 90);
        assert!(l.memory_growing(40, 60, None).is_err());
        assert!(l.exceeded());
        assert_eq!(l.peak_bytes(), 90);
    }
}
