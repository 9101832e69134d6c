//! Faults injected on purpose, to test that a panic in host glue ends only the
//! call it happens in. Active only with the `fault-injection` feature, which
//! release builds do not enable.

#[cfg(feature = "fault-injection")]
static PANIC_TOOLS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Makes every later call of `tool` (`plugin.tool`) panic inside the host.
#[cfg(feature = "fault-injection")]
pub fn panic_on_tool(tool: &str) {
    PANIC_TOOLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(tool.to_string());
}

/// Panics if `tool` was given to [`panic_on_tool`]: called by the host's call glue.
#[cfg(feature = "fault-injection")]
#[doc(hidden)]
pub fn maybe_panic(tool: &str) {
    let hit = PANIC_TOOLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .any(|t| t == tool);
    if hit {
        panic!("injected fault: host glue panicked while calling `{tool}`");
    }
}

#[cfg(not(feature = "fault-injection"))]
#[doc(hidden)]
pub fn maybe_panic(_tool: &str) {}
