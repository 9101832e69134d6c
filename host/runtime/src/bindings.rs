//! Every `bindgen!` of the host, in one place: the two worlds of `wit/plugin.wit`.

/// Bindings for components of the `tool-plugin` world.
pub mod tool {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "tool-plugin",
        exports: { default: async },
    });
}

/// Bindings for components of the `hook-plugin` world.
pub mod hook {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "hook-plugin",
        exports: { default: async },
    });
}

/// The name of the interface tool plugins export.
pub const TOOL_INTERFACE: &str = "glovebox:plugin/tool@0.1.0";
