#!/bin/sh
# Builds the component build/{{name}}.wasm with componentize-py. The first run makes
# a virtualenv in .venv (with `python3`, or $PYTHON) and installs componentize-py
# {{componentize_py}} (the version Glovebox is tested with) and pytest into it.
set -eu
cd "$(dirname "$0")"
COMPONENTIZE_PY={{componentize_py}}
if [ ! -x .venv/bin/python ]; then
    PYTHON="${PYTHON:-python3}"
    if ! command -v "$PYTHON" >/dev/null 2>&1; then
        echo "error: $PYTHON not found: install Python 3 with its venv module (Debian/Ubuntu: apt-get install python3 python3-venv), or set PYTHON=/path/to/python3" >&2
        exit 1
    fi
    "$PYTHON" -m venv .venv
fi
if [ "$(.venv/bin/componentize-py --version 2>/dev/null || true)" != "componentize-py $COMPONENTIZE_PY" ] \
    || [ ! -x .venv/bin/pytest ]; then
    .venv/bin/python -m pip install --disable-pip-version-check --quiet \
        "componentize-py==$COMPONENTIZE_PY" pytest
fi
mkdir -p build
# Only this directory is searched for modules: no PYTHONPATH of the caller's leaks in.
unset PYTHONPATH PYTHONHOME
.venv/bin/componentize-py -d wit -w tool-plugin componentize app -p . -o build/{{name}}.wasm
echo "built build/{{name}}.wasm"
