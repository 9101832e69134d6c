//! Every `bindgen!` of the host, in one place: the worlds of `wit/plugin.wit`.

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
