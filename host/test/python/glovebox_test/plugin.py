"""The pytest side: the ``glovebox`` fixture, a factory of :class:`PluginTest`.

    def test_reads(glovebox):
        files = glovebox("files.toml", role="workagent")
        result = files.call("files.read", {"path": "/data/a.txt"})
        assert result.passed, result.problem
        assert result.output["content"] == "hello\\n"
"""

from __future__ import annotations

import pytest

from glovebox_test import PluginTest


@pytest.fixture
def glovebox():
    """Returns ``PluginTest``: call it with the plugin's path (and ``role``,
    ``hooks``, ``binary``) to run cases on it."""
    return PluginTest
