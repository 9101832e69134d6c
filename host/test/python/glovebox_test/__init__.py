"""Test a Glovebox plugin from pytest, in the real host.

Each call runs ``glovebox plugin test PLUGIN --cases FILE --json``: the
binary loads the plugin exactly as an operator's host does (its manifest's
grants and limits, the sandbox, the hooks) and answers one JSON object per
case. This module writes the case file and reads the answers; the
``glovebox`` fixture (``glovebox_test.plugin``) hands a test a runner.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

__all__ = ["CaseResult", "GloveboxError", "PluginTest"]


class GloveboxError(Exception):
    """The case file or the plugin is wrong (``plugin test`` exits 2): the
    message is the binary's, naming the case or the grant and the fix."""


@dataclass
class CaseResult:
    """How one case went: the JSON object ``plugin test --json`` printed."""

    case: int
    name: str
    tool: str
    passed: bool
    wall_ms: float
    problem: Optional[str] = None
    output: Any = None
    error: Optional[dict] = None

    @property
    def kind(self) -> Optional[str]:
        """The error's kind (``denied``, ``timeout``, ...), when the call failed."""
        return self.error["kind"] if self.error else None


@dataclass
class PluginTest:
    """Runs cases on one plugin (a manifest ``.toml`` or a component ``.wasm``).

    ``role`` makes the calls in a session of that role; ``hooks`` puts
    permission hooks in front, each ``{"component": path, "settings": {...}}``.
    The binary is ``binary``, else ``$GLOVEBOX_BIN``, else ``glovebox`` on the PATH.
    """

    plugin: str
    role: Optional[str] = None
    hooks: list = field(default_factory=list)
    binary: Optional[str] = None

    def run(self, cases: list) -> list:
        """Runs ``cases`` (dicts with ``tool``, ``input``, and ``expect`` or
        ``error``) and returns a :class:`CaseResult` each, in order."""
        doc: dict = {"case": cases}
        if self.role:
            doc["role"] = self.role
        if self.hooks:
            doc["hook"] = [
                {**hook, "component": str(Path(hook["component"]).resolve())}
                for hook in self.hooks
            ]
        with tempfile.TemporaryDirectory(prefix="glovebox-test-") as tmp:
            path = Path(tmp) / "cases.json"
            path.write_text(json.dumps(doc))
            binary = self.binary or os.environ.get("GLOVEBOX_BIN", "glovebox")
            done = subprocess.run(
                [binary, "plugin", "test", str(self.plugin), "--cases", str(path), "--json"],
                capture_output=True,
                text=True,
            )
        if done.returncode not in (0, 1):
            raise GloveboxError(done.stderr.strip() or f"glovebox exited {done.returncode}")
        return [CaseResult(**json.loads(line)) for line in done.stdout.splitlines() if line]

    def call(self, tool: str, input: Optional[dict] = None, **expected: Any) -> CaseResult:
        """One case: ``tool`` with ``input``; ``expect={...}`` (an output
        fragment) or ``error="kind"`` says what it must give (default: success)."""
        case = {"tool": tool, "input": input or {}, **expected}
        return self.run([case])[0]
