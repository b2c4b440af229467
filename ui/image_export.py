"""Whether charts can be exported as images here, and what to do when they cannot.

Plotly renders PNG and SVG through kaleido 1.x, which drives a headless Chrome or Chromium that
it finds through choreographer: its own download (the ``kaleido_get_chrome`` command), then the
``BROWSER_PATH`` environment variable, then Chrome, Chromium, Edge or Brave on ``PATH`` and in
their usual install folders. Without one, ``to_image`` fails inside the download button's thread,
where Streamlit only logs it. `problem()` asks the same lookup once per process, so the export
menu can say before anyone clicks that images need a browser, and how to install one on this
platform; HTML and CSV exports need none.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import sys
from pathlib import Path

FIX_DEBIAN = "sudo apt-get install chromium"
FIX_FEDORA = "sudo dnf install chromium"
FIX_MACOS = "brew install --cask google-chrome"


def browser_path() -> str | None:
    """The browser kaleido would start for an image, or None when it would find none (looked up once)."""
    return _find_browser()


@functools.cache
def _find_browser() -> str | None:
    try:
        from choreographer.browsers.chromium import Chromium
    except ImportError:  # no kaleido (and so no choreographer): `problem` says to install it
        return None
    try:
        path = Chromium.find_browser(skip_local=False)
    except Exception:  # a lookup that breaks must not hide the export menu; kaleido will say
        return "unknown"
    return path if path and Path(path).is_file() else None


@functools.cache
def _has_kaleido() -> bool:
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False
    return True


def _os_release() -> dict[str, str]:
    """/etc/os-release as a dict (empty where there is none)."""
    try:
        text = Path("/etc/os-release").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {k.strip(): v.strip().strip('"').lower() for k, v in pairs}


def _get_chrome_command() -> str | None:
    """kaleido's own installer command, when this Python environment has it."""
    for name in ("kaleido_get_chrome", "plotly_get_chrome"):
        if shutil.which(name) or (Path(sys.executable).parent / name).exists():
            return name
    return None


def install_hint(system: str | None = None, os_release: dict[str, str] | None = None) -> str:
    """The one-line fix for this platform, as Markdown: the package manager's, else kaleido's."""
    system = system or platform.system()
    getter = _get_chrome_command()
    if system == "Linux":
        info = _os_release() if os_release is None else os_release
        family = {info.get("ID", ""), *info.get("ID_LIKE", "").split()}
        if family & {"debian", "ubuntu"}:
            fix = f"`{FIX_DEBIAN}`"
        elif family & {"fedora", "rhel", "centos"}:
            fix = f"`{FIX_FEDORA}`"
        else:
            fix = ""
    elif system == "Darwin":
        fix = f"`{FIX_MACOS}`"
    else:
        fix = "install Google Chrome"
    if getter:
        fix = f"{fix} or `{getter}`" if fix else f"`{getter}`"
    return fix or "install Chrome or Chromium"


def problem() -> str | None:
    """Why PNG and SVG exports cannot work on this server (Markdown), or None when they can."""
    if not _has_kaleido():
        return "PNG and SVG need the kaleido package, which is not installed: `pip install kaleido`."
    if browser_path() is not None:
        return None
    where = ""
    if os.environ.get("BROWSER_PATH"):
        where = " (`BROWSER_PATH` names no browser)"
    return (
        f"PNG and SVG need Chrome or Chromium, and this server has none{where}. "
        f"Install one with {install_hint()}, then restart Fengong. HTML and CSV work without it."
    )


def forget() -> None:
    """Look for the browser again on the next call (after an export found it missing)."""
    _find_browser.cache_clear()
