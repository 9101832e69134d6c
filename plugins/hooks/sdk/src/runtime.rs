//! What a `no_std` component needs from its environment, on wasm32 only (native unit
//! tests use std's allocator and panic machinery).

#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

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
