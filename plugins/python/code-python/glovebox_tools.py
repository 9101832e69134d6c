"""`tools`: the code calls the session's other tools by name ("code mode"), over the
`glovebox:plugin/tools` import.

Each call is a real call of the session that runs the code: the host admits it, checks
its input against the tool's schema, lets the session's hooks judge it (so the code can
do nothing its agent could not), budgets it and logs it with a link to this run. It
fails with an exception the code can catch:

    from glovebox import tools, ToolDenied       # or just `tools`: a global of the code
    text = tools.call("files.read", {"path": "/data/notes.txt"})
    try:
        tools.call("files.delete", {"path": "/data/notes.txt"})
    except ToolDenied as e:
        print(e.reason, e.alternatives)
    [t["name"] for t in tools.list()]           # what this session may call, with schemas

`call` returns the tool's JSON result as Python values. A failure raises `ToolError`
(or the subclass for its kind): `ToolDenied` (a hook or the operator refused; `reason`
and `alternatives`), `ApprovalRequired` (a human must approve first; `approval_id`: the
call does not run now), `BudgetExceeded` (the session's budget stopped it),
`ToolLimitExceeded` (this run's `limits.nested_calls`, or a runner calling a runner),
`ToolInputError` (unknown tool, or input that does not fit its schema), and
`ToolFailed` (the tool ran and failed, timed out or trapped). Each has `kind` (the
host's name for it), `message` and `tool`.
"""

import json

from componentize_py_types import Err
from wit_world.imports import tools as _host

__all__ = [
    "tools",
    "ToolError",
    "ToolDenied",
    "ApprovalRequired",
    "BudgetExceeded",
    "ToolLimitExceeded",
    "ToolInputError",
    "ToolFailed",
]


class ToolError(Exception):
    """A call through `tools.call` returned no result."""

    def __init__(self, tool, kind, message, alternatives=(), approval_id=None):
        super().__init__(message)
        self.tool = tool
        self.kind = kind
        self.message = message
        self.alternatives = list(alternatives)
        self.approval_id = approval_id

    @property
    def reason(self):
        return self.message


class ToolDenied(ToolError, PermissionError):
    """A hook (or the operator's rules) refused the call: `reason`, `alternatives`."""


class ApprovalRequired(ToolError):
    """A human must approve the call first (`approval_id`); it did not run."""


class BudgetExceeded(ToolDenied):
    """The session's budget refused the call; the session is paused."""


class ToolLimitExceeded(ToolError):
    """This run may make no more calls, or not this one (`limits.nested_calls`,
    `limits.nested_depth`)."""


class ToolInputError(ToolError, ValueError):
    """No such tool here, or its input does not fit the tool's schema."""


class ToolFailed(ToolError):
    """The tool ran and failed (or timed out, ran out of memory, trapped)."""


_KINDS = {
    "denied": ToolDenied,
    "budget": BudgetExceeded,
    "awaiting_approval": ApprovalRequired,
    "nested_limit": ToolLimitExceeded,
    "unknown_tool": ToolInputError,
    "ambiguous_tool": ToolInputError,
    "not_offered": ToolInputError,
    "invalid_input": ToolInputError,
}


class Tools:
    """The session's tools, as the code calls them: `tools.call(name, input)`,
    `tools.list()`."""

    def call(self, name, input=None):
        """Calls tool `name` (`plugin.tool`) with `input` (a dict, or JSON text) and
        returns its result as Python values; raises a `ToolError` when it returns none."""
        if not isinstance(name, str):
            raise TypeError(f"tools.call(): the tool name must be a str, not {type(name).__name__}")
        if input is None:
            text = "{}"
        elif isinstance(input, str):
            text = input
        else:
            try:
                text = json.dumps(input, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ToolInputError(
                    name, "invalid_input", f"tools.call('{name}'): the input is not JSON: {e}"
                ) from None
        try:
            result = _host.call(name, text)
        except Err as e:
            failure = e.value
            cls = _KINDS.get(failure.kind, ToolFailed)
            raise cls(
                name, failure.kind, failure.message, failure.alternatives, failure.approval_id
            ) from None
        return json.loads(result)

    def list(self):
        """The tools this session may call now: dicts with `name`, `description`,
        `input_schema` (a dict), `read_only` and `destructive`."""
        return [
            {
                "name": t.name,
                "description": t.description,
                "input_schema": json.loads(t.input_schema),
                "read_only": t.read_only,
                "destructive": t.destructive,
            }
            for t in _host.list_tools()
        ]

    def __repr__(self):
        return "<glovebox tools: tools.call(name, input), tools.list()>"


tools = Tools()
