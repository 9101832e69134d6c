"""`code-python`: runs Python code an agent wrote, in a fresh CPython per call.

Built with componentize-py against the world in wit/world.wit: the `tool-plugin` world of
wit/plugin.wit plus wasi:http/outgoing-handler, for `fetch` (glovebox.py). The
module's top level runs once, at build time, and is snapshotted into the component:
everything imported here costs nothing per call. Each call then runs in a fresh
instance of that snapshot, so nothing the code does survives it except files written
under /scratch (when the operator grants that directory).
"""

import ast
import functools
import gc
import importlib
import io
import json
import linecache
import os
import random
import sys
import traceback

# The standard library modules generated code commonly uses, imported here so the
# snapshot has them loaded: a component made by componentize-py has no standard library
# files at run time, so a module not imported at build time cannot be imported by the
# code at all. Left out on purpose: what cannot work in the sandbox (subprocess, socket,
# select, asyncio, ctypes, threads that run) and what only makes the snapshot bigger.
PRELOADED = """
    abc argparse array base64 binascii bisect calendar cmath codecs collections
    collections.abc colorsys configparser contextlib copy csv dataclasses datetime decimal
    difflib enum fnmatch fractions functools getopt glob graphlib gzip hashlib heapq hmac
    html html.parser inspect ipaddress itertools keyword locale logging math numbers
    operator pathlib pickle pprint queue re reprlib secrets shlex shutil sqlite3 statistics
    string struct tarfile tempfile textwrap time timeit tomllib types typing unicodedata
    urllib.parse uuid warnings weakref xml.dom.minidom xml.etree.ElementTree zipfile zlib
    _strptime
""".split()
for _name in PRELOADED:
    importlib.import_module(_name)
del _name

from componentize_py_types import Err
from wit_world import exports

# With wasi:http in the world (wit/world.wit), the plugin's `types` interface is
# qualified: wasi:http has a `types` too.
from wit_world.imports import glovebox_plugin_types as types

# `fetch`, over wasi:http: imported here so it is in the snapshot; a global of every call.
import glovebox

# The tracebacks name the code after this; the runner's own frames are trimmed.
FILENAME = "<code>"
# At most this many bytes of stdout and of stderr are kept; the rest is counted and dropped.
STREAM_LIMIT = 256 * 1024
# Where the host mounts the session's scratch directory, when the operator grants one.
SCRATCH = "/scratch"
# A global of the code: HTTP to the hosts granted in the plugin's manifest, `[[http]]`.
FETCH = glovebox.fetch
# A global of the code: the session's other tools (`tools.call`, `tools.list`).
TOOLS = glovebox.tools
# Frames of these files at the end of a traceback say nothing the message does not.
HELPER_FILES = (FETCH.__code__.co_filename, type(TOOLS).call.__code__.co_filename)

DESCRIPTION = (
    "Runs Python code in a fresh CPython 3 interpreter and returns what it printed and "
    "the value of its last expression (as in a notebook). Standard library only (json, "
    "re, math, statistics, datetime, collections, itertools, csv, sqlite3, decimal, "
    "pathlib, ...; no third-party packages). HTTP only through the global "
    "`fetch(url, method='GET', headers=None, body=None)` (also `from glovebox import "
    "fetch`), which returns a response with `status`, `headers`, `content`, `text()` and "
    "`json()` and reaches only the hosts the operator granted to this tool (others raise "
    "PermissionError). Other tools of the session through the global `tools`: "
    "`tools.call('plugin.tool', {...})` returns the tool's result and raises ToolDenied "
    "(`.reason`, `.alternatives`), ApprovalRequired (`.approval_id`) or another ToolError "
    "when it returns none; `tools.list()` says what may be called, with schemas; each "
    "call is judged and logged as a call of the session (only when the operator allows "
    "this tool calls, `limits.nested_calls`). No sockets, no environment variables, no "
    "subprocesses. Files only "
    "under /scratch, the working directory when the session has one: it is the only "
    "state kept between calls, since every call starts a new interpreter, so keep state "
    "in files there."
)

INPUT_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "Python source to run as a script. If it ends with an "
                "expression, its value is returned as `value` (as in a notebook).",
            },
            "stdin": {
                "type": "string",
                "description": "Text the code reads from sys.stdin (default: empty).",
            },
            "args": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Command-line arguments: sys.argv is "
                '["<code>", *args].',
            },
        },
        "required": ["code"],
        "additionalProperties": False,
    }
)


class Capture(io.TextIOBase):
    """A text stream that keeps the first `limit` bytes written to it and counts the rest."""

    def __init__(self, limit):
        self.parts = []
        self.room = limit
        self.dropped = 0
        self.buffer = _BinaryCapture(self)

    def writable(self):
        return True

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "replace"

    def isatty(self):
        return False

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        n = len(s)
        if n > self.room:  # over the limit (a character is at least one byte)
            self._cut(s)
            return n
        size = n if s.isascii() else len(s.encode("utf-8", "surrogatepass"))
        if size > self.room:
            self._cut(s)
            return n
        self.parts.append(s)
        self.room -= size
        return n

    def _cut(self, s):
        """Keeps what fits of `s`, drops the rest and everything written after it."""
        kept = ""
        if self.room > 0:
            kept = s[: self.room].encode("utf-8", "surrogatepass")[: self.room]
            kept = kept.decode("utf-8", "ignore")
            self.parts.append(kept)
        self.room = 0
        self.dropped += len(s) - len(kept)

    def _write_bytes(self, b):
        if self.room <= 0:
            self.dropped += len(b)
        else:
            self.write(bytes(b).decode("utf-8", "replace"))

    def text(self):
        return "".join(self.parts)


class _BinaryCapture(io.RawIOBase):
    """`sys.stdout.buffer`: bytes written here are decoded into the text capture."""

    def __init__(self, text):
        self._text = text

    def writable(self):
        return True

    def write(self, b):
        self._text._write_bytes(b)
        return len(b)


def _seed_random_on_first_use():
    """Makes `random`'s functions seed the shared generator from WASI's randomness first.

    The snapshot holds one generator state for every call, so each call must reseed;
    doing it on first use keeps that cost (a host call) off code that draws no numbers.
    `random.Random()` and `SystemRandom()` instances seed themselves at call time.
    """
    shared = random._inst
    originals = {
        name: getattr(random, name)
        for name in dir(random)
        if not name.startswith("_")
        and getattr(getattr(random, name), "__self__", None) is shared
    }

    def seed_once():
        shared.seed()  # from os.urandom, which is WASI's random
        for name, function in originals.items():
            setattr(random, name, function)
        seeded[0] = True

    seeded = [False]

    def wrap(function):
        @functools.wraps(function)
        def first_use(*args, **kwargs):
            if not seeded[0]:
                seed_once()
            return function(*args, **kwargs)

        return first_use

    for name, function in originals.items():
        setattr(random, name, wrap(function))


_seed_random_on_first_use()


def _invalid(message):
    return Err(types.ToolError_InvalidInput(message))


def parse_input(text):
    try:
        data = json.loads(text)
    except ValueError as e:
        raise _invalid(f"input is not JSON: {e}")
    if not isinstance(data, dict):
        raise _invalid("input must be a JSON object with a `code` string")
    unknown = sorted(set(data) - {"code", "stdin", "args"})
    if unknown:
        raise _invalid(
            f"unknown field `{unknown[0]}`: the input has `code`, `stdin` and `args`"
        )
    code = data.get("code")
    if not isinstance(code, str):
        raise _invalid("`code` is required and must be a string of Python source")
    stdin = data.get("stdin", "")
    if not isinstance(stdin, str):
        raise _invalid("`stdin` must be a string")
    args = data.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise _invalid("`args` must be a list of strings")
    return code, stdin, args


def compile_code(code):
    """The code as (body, last expression or None): a notebook cell."""
    tree = ast.parse(code, FILENAME, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
        last = compile(last, FILENAME, "eval")
    return compile(tree, FILENAME, "exec"), last


def format_error(exc):
    """The traceback of `exc`, from the first frame of the user's code to its last frame
    outside `fetch` and `tools` (whose own frames say nothing the message does not)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != FILENAME:
        tb = tb.tb_next
    files = []
    frame = tb
    while frame is not None:
        files.append(frame.tb_frame.f_code.co_filename)
        frame = frame.tb_next
    keep = len(files)
    while keep > 1 and files[keep - 1] in HELPER_FILES:
        keep -= 1
    return "".join(traceback.format_exception(type(exc), exc, tb, limit=keep or None))


def to_json(value):
    """`value` itself when JSON can represent it, else its repr()."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except Exception:
        pass
    try:
        return repr(value)
    except Exception as e:
        return f"<unrepresentable {type(value).__name__}: {e!r}>"


def run(code, stdin, args):
    out = Capture(STREAM_LIMIT)
    err = Capture(STREAM_LIMIT)
    result = {}
    try:
        os.chdir(SCRATCH)  # one host call; none when nothing is mounted there
    except OSError:
        pass
    # Tracebacks show the user's lines.
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(True), FILENAME)
    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv
    sys.stdin = io.StringIO(stdin)
    sys.stdout, sys.stderr = out, err
    sys.argv = [FILENAME, *args]
    try:
        body, last = compile_code(code)
        scope = {
            "__name__": "__main__",
            "__builtins__": __builtins__,
            "fetch": FETCH,
            "tools": TOOLS,
        }
        exec(body, scope)
        if last is not None:
            value = eval(last, scope)
            if value is not None:
                result["value"] = to_json(value)
    except SystemExit as e:
        status = e.code
        if status is None or status == 0:
            pass
        elif isinstance(status, int):
            result["error"] = f"exit status {status}"
        else:
            err.write(f"{status}\n")
            result["error"] = "exit status 1"
    except BaseException as e:
        result["error"] = format_error(e)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
    output = {"stdout": captured("stdout", out), "stderr": captured("stderr", err)}
    if out.dropped:
        output["stdout_truncated"] = True
    if err.dropped:
        output["stderr_truncated"] = True
    output.update(result)
    return output


def captured(name, capture):
    """The text kept of a stream, with a last line saying how much was dropped, if any."""
    text = capture.text()
    if capture.dropped:
        if not text.endswith("\n"):
            text += "\n"
        text += (
            f"[{name} truncated: {capture.dropped} more characters were printed and "
            f"dropped; at most {STREAM_LIMIT // 1024} KiB are kept]\n"
        )
    return text


class Tool(exports.Tool):
    def list_tools(self):
        return [
            types.ToolSpec(
                name="run",
                description=DESCRIPTION,
                input_schema=INPUT_SCHEMA,
                action="execute:code:python",
                destructive=False,
                idempotent=False,
            )
        ]

    def call(self, ctx, tool, input):
        if tool != "run":
            raise _invalid(f"unknown tool `{tool}`: this plugin has `run`")
        code, stdin, args = parse_input(input)
        output = run(code, stdin, args)
        try:
            return json.dumps(output)
        except ValueError:  # a value JSON cannot hold after all (e.g. a cycle)
            output["value"] = to_json(repr(output.get("value")))
            return json.dumps(output)


def _warm_up():
    """Runs the per-call path once at build time, so the snapshot holds its caches."""
    out = Capture(STREAM_LIMIT)
    saved = sys.stdout
    sys.stdout = out
    try:
        parse_input('{"code": "x = sum(range(10))\\nprint(x)\\nx", "args": []}')
        body, last = compile_code("x = sum(range(10))\nprint(x)\nx")
        scope = {"__name__": "__main__", "__builtins__": __builtins__}
        exec(body, scope)
        json.dumps({"stdout": out.text(), "value": to_json(eval(last, scope))})
        try:
            exec(compile_code("1 / 0")[0], scope)
        except ZeroDivisionError as e:
            format_error(e)
    finally:
        sys.stdout = saved


_warm_up()
# Everything made so far lives as long as the instance: the collector need not scan it
# again, and not touching it keeps the snapshot's pages shared.
gc.collect()
gc.freeze()
