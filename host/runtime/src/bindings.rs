//! Every `bindgen!` of the host, in one place: the worlds of `wit/plugin.wit`
//! (0.1.0) and `wit/v0.2/plugin.wit` (0.2.0).

/// Bindings for components of the `tool-plugin` world.
pub mod tool {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "tool-plugin",
        exports: { default: async },
    });
}

/// Bindings for components of the `code-tool-plugin` world: the `tools`
/// import a tool that calls tools links against (`sandbox::tools`).
pub mod code {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "code-tool-plugin",
        imports: { default: async },
        exports: { default: async },
    });
}

/// Bindings for components of the 0.1.0 `hook-plugin` world.
pub mod hook {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "hook-plugin",
        exports: { default: async },
    });
}

/// Bindings for components of the 0.2.0 `hook-plugin` world (`wit/v0.2`),
/// whose request names the caller.
pub mod hook_v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit/v0.2",
        world: "hook-plugin",
        exports: { default: async },
    });
}

/// The name of the interface tool plugins export.
pub const TOOL_INTERFACE: &str = "glovebox:plugin/tool@0.1.0";
