"""Importing httpx without the optional extras it pulls in when they happen to be installed.

`relay/client.py` imports this module first, so any process that talks to a relay gets httpx
this way.

httpx imports its command-line client (rich, pygments) and httpcore its trio backend
whenever those packages exist, which costs a one-shot `companion sync` about 50 ms of its
start-up for features the engine never uses. `import_httpx` hides them during the import (and
only then: later imports of trio or rich in the process work as usual).
"""

from __future__ import annotations

import importlib
import sys

OPTIONAL = ("trio", "rich", "pygments")


def import_httpx() -> None:
    if "httpx" in sys.modules:
        return
    hidden = [name for name in OPTIONAL if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # "import trio" -> ImportError
    try:
        importlib.import_module("httpx")
        importlib.import_module("httpcore")  # httpx imports it when the first client is made
    finally:
        for name in hidden:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


import_httpx()
