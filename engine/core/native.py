"""The compiled hot path: the simulation's modules built by mypyc, used only where they are current.

`tools/build_native.py` (run by `make`) compiles the modules in `COMPILED` with mypyc into
`build/native/`, beside the sources and never over them, and writes `manifest.json` there: the
interpreter the build is for and each compiled source's SHA-256, size and modification time.
`engine.serving` and `engine.costmodel` call `extend` before any of their modules loads: where the
manifest matches this interpreter and the sources (their sizes and times, else their digests),
the build's folder goes first on the package's path, so the compiled modules load and every
other module loads from source. Anything else (no build, an edited source, another Python,
`FENGONG_PURE=1`) runs the pure-Python modules, which give the same results (docs/performance.md,
"The compiled hot path, shipped"). A stale build can never run in place of an edited source.

Standard library only: it runs at import, before numpy or pydantic.
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache
from pathlib import Path

_SERVING = "host instance batching outage fleet kv handoffs link cache sim front_door rows ledger"
COMPILED = (
    *(f"engine.serving.{m}" for m in _SERVING.split()),
    "engine.costmodel.step",
    "engine.costmodel.iteration",
)
"""The modules compiled together (one group: one shared library, so all of them or none)."""

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "native"
MANIFEST = BUILD / "manifest.json"
PURE_ENV = "FENGONG_PURE"
GROUP = "fengong_native"
"""The group's name: its shared library is the top-level module `fengong_native__mypyc`."""


def source_of(module: str) -> Path:
    """The `.py` file of a module named in `COMPILED`."""
    return ROOT.joinpath(*module.split(".")).with_suffix(".py")


def digests() -> dict[str, str]:
    """Each compiled module's source SHA-256, as the manifest records them."""
    import hashlib  # OpenSSL's import costs milliseconds: only where the sizes and times differ

    return {m: hashlib.sha256(source_of(m).read_bytes()).hexdigest() for m in COMPILED}


def stats() -> dict[str, list[int]]:
    """Each compiled module's source size and modification time (ns), as the manifest records them."""
    out = {}
    for m in COMPILED:
        st = source_of(m).stat()
        out[m] = [st.st_size, st.st_mtime_ns]
    return out


def extensions() -> list[Path]:
    """The files a build must hold: each compiled module's extension and the group's library."""
    from importlib.machinery import EXTENSION_SUFFIXES  # loaded with the interpreter already

    suffix = EXTENSION_SUFFIXES[0]
    return [BUILD.joinpath(*m.split(".")).with_name(m.rsplit(".", 1)[1] + suffix) for m in COMPILED] + [
        BUILD / f"{GROUP}__mypyc{suffix}"
    ]


def interpreter() -> str:
    """The interpreter a build is for (extension modules are built for one)."""
    return f"{sys.implementation.cache_tag} {sys.platform}"


@cache
def state() -> str:
    """'compiled', or why the pure-Python modules run ('pure: ...'); decided once a process."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return f"pure: {PURE_ENV} is set"
    try:
        manifest = json.loads(MANIFEST.read_text())
    except FileNotFoundError:
        return "pure: no compiled build (make builds one)"
    except (OSError, ValueError) as exc:
        return f"pure: unreadable build manifest ({exc})"
    if not isinstance(manifest, dict) or manifest.get("interpreter") != interpreter():
        return "pure: the compiled build is for another interpreter (make rebuilds it)"
    if manifest.get("stats") != stats() and manifest.get("modules") != digests():
        return "pure: a compiled module's source changed since the build (make rebuilds it)"
    if not all(path.is_file() for path in extensions()):
        return "pure: the compiled build is incomplete (make rebuilds it)"
    return "compiled"


def active() -> bool:
    """Whether this process runs the compiled modules."""
    return state() == "compiled"


def extend(package: str, path: list[str]) -> None:
    """Put the build's folder for `package` first on its `__path__` where the build is current."""
    if not active():
        return
    folder = str(BUILD.joinpath(*package.split(".")))
    if folder not in path:
        path.insert(0, folder)
    if str(BUILD) not in sys.path:  # the group's shared library is a top-level module
        sys.path.append(str(BUILD))
