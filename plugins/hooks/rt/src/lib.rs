//! What a `no_std` hook component needs from its environment, on wasm32 only (native
//! unit tests use std's allocator and panic machinery): a global allocator, a panic
//! handler that traps (the host turns a trap into a deny: hooks fail closed),
//! `cabi_realloc`, and the memory routines `core` leaves to libc.
//!
//! A crate of its own, apart from `glovebox-hook-sdk`'s bindings, so that a hook built
//! against another version of the hook world (`wit/plugin.wit`, 0.1.0) links the same
//! runtime with bindings of its own. Link it with `use glovebox_hook_rt as _;`.

#![no_std]

#[cfg(target_arch = "wasm32")]
extern crate alloc;

#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: arena::Arena = arena::Arena::new();

/// The allocator of a hook: a bump arena in the module's own zeroed data,
/// then dlmalloc over `memory.grow` once the arena is full.
///
/// Why: the host runs every evaluation in a fresh instance and drops it
/// afterwards, so nothing a hook allocates outlives one evaluation and
/// freeing is moot. What costs is growing memory: a guest that grows its
/// memory leaves the host to make the grown pages inaccessible again when
/// the instance is recycled (an `mprotect`, and a TLB shootdown on every
/// core the host runs on), a cost comparable to the whole evaluation.
/// dlmalloc grows memory at its first allocation; the arena lives in the
/// initial memory (`.bss`, pages the host maps zeroed and resets only where
/// written), so an evaluation that fits in it never grows memory at all.
#[cfg(target_arch = "wasm32")]
mod arena {
    use core::alloc::{GlobalAlloc, Layout};
    use core::cell::{Cell, UnsafeCell};

    /// Room for the settings, the request and the decision of an ordinary
    /// evaluation many times over; a larger one spills into dlmalloc.
    const SIZE: usize = 256 * 1024;

    #[repr(C, align(16))]
    struct Space(UnsafeCell<[u8; SIZE]>);

    pub struct Arena {
        space: Space,
        /// Bytes of `space` handed out so far.
        used: Cell<usize>,
        spill: dlmalloc::GlobalDlmalloc,
    }

    // A component instance runs one thread.
    unsafe impl Sync for Arena {}

    impl Arena {
        pub const fn new() -> Arena {
            Arena {
                space: Space(UnsafeCell::new([0; SIZE])),
                used: Cell::new(0),
                spill: dlmalloc::GlobalDlmalloc,
            }
        }

        fn base(&self) -> usize {
            self.space.0.get() as usize
        }

        fn owns(&self, ptr: *mut u8) -> bool {
            let p = ptr as usize;
            p >= self.base() && p < self.base() + SIZE
        }

        /// A block from the arena, or null when it does not fit.
        fn bump(&self, layout: Layout) -> *mut u8 {
            let start = (self.base() + self.used.get()).next_multiple_of(layout.align());
            let Some(end) = start.checked_add(layout.size()) else {
                return core::ptr::null_mut();
            };
            if end > self.base() + SIZE {
                return core::ptr::null_mut();
            }
            self.used.set(end - self.base());
            start as *mut u8
        }
    }

    unsafe impl GlobalAlloc for Arena {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let ptr = self.bump(layout);
            if ptr.is_null() {
                unsafe { self.spill.alloc(layout) }
            } else {
                ptr
            }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            if !self.owns(ptr) {
                unsafe { self.spill.dealloc(ptr, layout) };
            } else if ptr as usize + layout.size() == self.base() + self.used.get() {
                // The last block handed out: give it back.
                self.used.set(ptr as usize - self.base());
            }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            if !self.owns(ptr) {
                return unsafe { self.spill.realloc(ptr, layout, new_size) };
            }
            let offset = ptr as usize - self.base();
            // The last block grows or shrinks in place when it fits.
            if offset + layout.size() == self.used.get() && offset + new_size <= SIZE {
                self.used.set(offset + new_size);
                return ptr;
            }
            if new_size <= layout.size() {
                return ptr;
            }
            let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
                return core::ptr::null_mut();
            };
            let new = unsafe { self.alloc(new_layout) };
            if !new.is_null() {
                unsafe { core::ptr::copy_nonoverlapping(ptr, new, layout.size()) };
            }
            new
        }
    }
}

/// A panic traps: no message, since a hook has no stdio. The host sees the trap and
/// denies the call (hooks fail closed). Allocation failure ends here too.
#[cfg(target_arch = "wasm32")]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

/// The canonical ABI's allocator, which the host calls to pass strings and lists in.
///
/// On wasm32-wasip2, Rust's `std` exports it and wit-bindgen leaves it to `std`; a
/// `no_std` component must bring its own. It allocates through the global allocator and
/// traps when memory runs out.
///
/// # Safety
///
/// Called by the host only, as the canonical ABI prescribes: `old_ptr`/`old_len`/`align`
/// describe a block this function returned before (or `old_len` is 0), and `align` is a
/// power of two.
#[cfg(target_arch = "wasm32")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cabi_realloc(
    old_ptr: *mut u8,
    old_len: usize,
    align: usize,
    new_len: usize,
) -> *mut u8 {
    use alloc::alloc::{Layout, alloc, realloc};

    let ptr = unsafe {
        if old_len == 0 {
            if new_len == 0 {
                return align as *mut u8;
            }
            alloc(Layout::from_size_align_unchecked(new_len, align))
        } else {
            realloc(
                old_ptr,
                Layout::from_size_align_unchecked(old_len, align),
                new_len,
            )
        }
    };
    if ptr.is_null() {
        core::arch::wasm32::unreachable();
    }
    ptr
}

// `memcmp`, `memcpy` & co.: on wasm32-wasip2 `core` leaves them to wasi-libc, which
// `std` links. A hook links that same `libc.a` (shipped with the target, in
// `self-contained/`), from which the linker takes only the pure memory routines the code
// calls: they import nothing.
#[cfg(target_arch = "wasm32")]
#[link(name = "c")]
unsafe extern "C" {}
