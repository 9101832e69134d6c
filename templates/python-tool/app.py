"""`{{name}}`: a Glovebox tool plugin written in Python, with one tool,
`{{name}}.greet`, which greets someone by name.

componentize-py turns this module (`app`, with its class `Tool`) into a WebAssembly
component of the `tool-plugin` world of wit/plugin.wit. The module's top level runs
once, at build time, and is snapshotted into the component: import there what the tool
uses, and do per-call work in `call`. Each call runs in a fresh instance that sees only
what the manifest ({{name}}.toml) grants: here, nothing.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports.types import ToolError_InvalidInput, ToolSpec

GREET_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Who to greet."}},
    "required": ["name"],
    "additionalProperties": False,
}


class Tool(exports.Tool):
    def list_tools(self):
        return [
            ToolSpec(
                name="greet",
                description="Greets someone by name.",
                input_schema=json.dumps(GREET_SCHEMA),
                # What the call does, as a colon path: permission hooks match on it.
                action="read:greeting",
                destructive=False,
                idempotent=True,
            )
        ]

    def call(self, ctx, tool, input):
        if tool != "greet":
            raise Err(ToolError_InvalidInput(f"unknown tool `{tool}`: this plugin has `greet`"))
        # The host has checked the input against the schema already; what a schema
        # cannot say is checked here, with a message that names the field.
        name = json.loads(input)["name"].strip()
        if not name:
            raise Err(ToolError_InvalidInput("`name` is blank: give the name of someone to greet"))
        return json.dumps({"greeting": f"hello, {name}", "role": ctx.role})
