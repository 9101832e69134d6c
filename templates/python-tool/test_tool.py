"""Builds the component (./build.sh) and calls its tool through the real `glovebox`
binary, with the grants of {{name}}.toml: what an agent's call would get.
The binary is $GLOVEBOX when set, else `glovebox` on PATH."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def call():
    """`glovebox call TOOL --input INPUT --json` with the project's config: the exit
    code and the JSON document it prints."""
    binary = os.environ.get("GLOVEBOX") or shutil.which("glovebox")
    if not binary:
        pytest.fail(
            "the `glovebox` binary was not found on PATH: install it, "
            "or set GLOVEBOX=/path/to/glovebox",
            pytrace=False,
        )
    subprocess.run(["sh", str(PROJECT / "build.sh")], check=True)

    def run(tool, tool_input):
        done = subprocess.run(
            [binary, "--config", str(PROJECT / "glovebox.toml"), "call", tool,
             "--input", json.dumps(tool_input), "--json"],
            capture_output=True,
            text=True,
        )
        try:
            doc = json.loads(done.stdout)
        except json.JSONDecodeError:
            pytest.fail(f"`glovebox call {tool}` printed no JSON; its stderr:\n{done.stderr}")
        return done.returncode, doc

    return run


def test_greets_by_name(call):
    code, doc = call("{{name}}.greet", {"name": "Ada"})
    assert code == 0, doc
    assert doc["output"]["greeting"] == "hello, Ada"


def test_refuses_a_blank_name(call):
    code, doc = call("{{name}}.greet", {"name": "  "})
    assert code == 4, doc  # exit code 4: invalid input
    assert doc["error"]["kind"] == "invalid_input"
    assert "`name` is blank" in doc["error"]["message"]


def test_the_host_checks_the_schema_first(call):
    # `name` is required by the tool's input schema: the host refuses the call
    # before the tool runs.
    code, doc = call("{{name}}.greet", {})
    assert code == 4, doc
    assert doc["error"]["kind"] == "invalid_input"
