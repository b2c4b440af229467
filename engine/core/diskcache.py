"""A computation kept on disk between processes (the validation report and its simulator reruns).

`cached(name, key, compute)` returns what `compute()` returns, read from `folder()` when an entry
of that name and key is there, else computed and written. `key` is the caller's digest of
everything the result depends on (`digest`: the bytes of every file under some folders, and
strings such as library versions), so a changed input is a new entry, never a stale one.

One process computes an entry at a time: a caller holds the entry's lock file (`fcntl.flock`)
while it reads or computes, so a second caller (another test process, a `validate` run in a
second terminal) waits and then reads what the first wrote instead of computing it again.

An entry is the SHA-256 of its pickle, a newline, then the pickle. One that does not match its
digest, cannot be read or cannot be unpickled is computed again and rewritten: never trusted.
Only a private folder of this user is used (not a link, not another user's, not writable by
others: a planted pickle would run code when read); where there is none, or it cannot be made,
the result is computed every time, as without a cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

ENV_VAR = "FENGONG_CACHE_DIR"
"""Environment variable naming the cache folder (default: the platform's user cache folder's fengong)."""

KEEP = 4
"""Entries kept per name: writing one removes the older others (inputs that changed since)."""


def folder() -> Path:
    """The cache folder: `ENV_VAR`, else fengong in the user's cache folder (XDG_CACHE_HOME or ~/.cache,
    ~/Library/Caches on macOS, LOCALAPPDATA on Windows)."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "fengong"


def digest(roots: Iterable[Path], extra: Iterable[str] = ()) -> str:
    """SHA-256 over every file under each of `roots` (a root may be one file; its path relative to
    the root, then its bytes; __pycache__ left out) and the strings of `extra`. A missing root
    counts as empty."""
    h = hashlib.sha256()
    for root in roots:
        h.update(b"\x00root\x00")
        files = [root] if root.is_file() else sorted(root.rglob("*")) if root.is_dir() else []
        for f in files:
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(f.relative_to(root).as_posix().encode() + b"\x00")
                h.update(hashlib.sha256(f.read_bytes()).digest())
    for s in extra:
        h.update(b"\x00extra\x00" + s.encode())
    return h.hexdigest()


def _private(path: Path) -> bool:
    """Whether `path` is (now) a folder of this user nobody else can write, made if missing."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return False
    uid = getattr(os, "getuid", None)
    return (
        stat.S_ISDIR(info.st_mode)
        and (uid is None or info.st_uid == uid())
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Holds an exclusive lock on the file `path` (made if missing); none on Windows."""
    if sys.platform == "win32":
        yield
        return
    import fcntl  # here: not on Windows

    with open(path, "ab") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _read(path: Path) -> tuple[bool, object]:
    """(True, the value) of a sound entry; (False, None) for a missing, unreadable or corrupt one."""
    try:
        raw = path.read_bytes()
    except OSError:
        return False, None
    head, _, body = raw.partition(b"\n")
    if head != hashlib.sha256(body).hexdigest().encode():
        return False, None
    try:
        return True, pickle.loads(body)
    except Exception:  # a pickle of classes since renamed or moved: computed again
        return False, None


def _write(path: Path, value: object) -> None:
    """Writes the entry whole (a temporary file renamed over it), then drops the older entries of
    its name beyond `KEEP`; a full or read-only disk leaves it unwritten."""
    body = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        part.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        part.replace(path)
    except OSError:
        part.unlink(missing_ok=True)
        return
    name = path.name.rsplit("-", 1)[0]
    entries = sorted(path.parent.glob(f"{name}-*.pickle"), key=_mtime, reverse=True)
    for old in entries[KEEP:]:
        old.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    """When `path` was last written (0 if another process removed it meanwhile)."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def cached(name: str, key: str, compute: Callable[[], T], *, fresh: bool = False) -> T:
    """`compute()`, kept in `folder()` as the entry `name`-`key`; `fresh` computes it again
    whatever is kept, and keeps the new value."""
    where = folder()
    if not _private(where):
        return compute()
    path = where / f"{name}-{key[:32]}.pickle"
    with _locked(path.with_suffix(".lock")):
        if not fresh:
            ok, value = _read(path)
            if ok:
                return value  # type: ignore[return-value]  # what `compute` returned for this key
        result = compute()
        _write(path, result)
        return result
