"""Where data files come from: the project's data folder, this server's uploads, local paths.

A scenario names a data file (a trace, a length file for an empirical distribution) in one of
three ways:

- ``data:<path>``: a file shipped in the project's ``data/`` folder, e.g.
  ``data:traces/mooncake/conversation_trace.jsonl``. Large files are stored gzip-compressed and
  named without their ``.gz``. ``shared:<path>`` is the older name of the same folder, kept so
  old share links and scenario files still work.
- ``upload:<name>``: a trace uploaded to this server, stored under a content hash.
- a plain path: a file on the local disk. Only trusted callers (the command line, Python, a
  scenario file of one's own) may use it.

Scenarios from untrusted places (share links, files opened in the dashboard) may name only the
first two; `untrusted_problems` says which fields break that rule. A reference resolves to a
regular file inside its folder *after* following symbolic links, so an absolute path, ``..`` or a
link out of the folder is refused, and no file reads past ``bounds.MAX_TRACE_BYTES`` (after
decompression).
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import zlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from engine.core import bounds
from engine.core.errors import ScenarioError

DATA_PREFIX = "data:"
"""Names a file in the project's data folder."""
LEGACY_PREFIX = "shared:"
"""The older name of the data folder (share links made before the data moved into the project)."""
UPLOAD_PREFIX = "upload:"
"""Names a trace uploaded to this server."""
UPLOADS_ENV = "FENGONG_UPLOADS"
"""Environment variable naming the uploads folder (default: fengong-uploads in the temp folder)."""

_MAX_REF_CHARS = 512


def data_dir() -> Path:
    """The project's data folder (traces and reference measurements): ``data/`` in the source tree."""
    return Path(__file__).resolve().parents[2] / "data"


def uploads_dir() -> Path:
    """The folder where this server keeps uploaded traces (one per user in the temp folder by default)."""
    env = os.environ.get(UPLOADS_ENV)
    if env:
        return Path(env)
    return Path(tempfile.gettempdir()) / f"fengong-uploads-{getattr(os, 'getuid', lambda: 0)()}"


def _private_uploads() -> Path:
    """The uploads folder, created private (0700) if missing; ScenarioError unless it is a real
    folder of this user that nobody else can write (another local user could otherwise plant it,
    or a link in its place, and have `upload:` names read their files)."""
    folder = uploads_dir()
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        raise ScenarioError(
            f"uploads folder {folder}: cannot use it ({exc.strerror or type(exc).__name__})"
        ) from None
    uid = getattr(os, "getuid", None)
    if (
        stat.S_ISLNK(info.st_mode)
        or not stat.S_ISDIR(info.st_mode)
        or (uid is not None and info.st_uid != uid())
        or info.st_mode & 0o022
    ):
        raise ScenarioError(
            f"uploads folder {folder}: not a private folder of this user (a link, another owner, or writable "
            f"by others); set {UPLOADS_ENV} to a private folder"
        )
    return folder


def is_reference(path: str) -> bool:
    """Whether `path` names a file by reference (data, legacy shared or upload) rather than a local path."""
    return path.startswith((DATA_PREFIX, LEGACY_PREFIX, UPLOAD_PREFIX))


def _split(ref: str) -> tuple[Path, str]:
    """(root folder, relative part) of a reference."""
    for prefix in (DATA_PREFIX, LEGACY_PREFIX):
        if ref.startswith(prefix):
            return data_dir(), ref[len(prefix) :]
    return _private_uploads(), ref[len(UPLOAD_PREFIX) :]


def _check_relative(ref: str, rel: str) -> None:
    parts = PurePosixPath(rel).parts
    bad = (
        not rel
        or len(ref) > _MAX_REF_CHARS
        or rel.startswith(("/", "~"))
        or "\\" in rel
        or "\x00" in rel
        or ":" in rel
        or any(p in ("..", ".") for p in parts)
    )
    if bad:
        raise ScenarioError(
            f"{ref!r}: a data reference is a relative path inside its folder "
            "(no absolute path, '..', '~', backslash or colon)"
        )


def locate(path: str) -> Path:
    """The file a data path names; ScenarioError when it does not exist or leaves its folder."""
    if not is_reference(path):
        p = Path(path).expanduser()
        if not p.is_file():
            raise ScenarioError(f"{path}: no such file")
        return p
    root, rel = _split(path)
    _check_relative(path, rel)
    base = root.resolve()
    for candidate in (root / rel, root / f"{rel}.gz"):
        try:
            real = candidate.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if not real.is_relative_to(base):
            raise ScenarioError(f"{path!r}: leaves its folder (a link out of the data folder is refused)")
        if real.is_file():
            return real
    where = "uploaded traces" if path.startswith(UPLOAD_PREFIX) else "the project's data folder"
    raise ScenarioError(f"{path}: no such file in {where}")


def read_bytes(path: str) -> bytes:
    """The content of a data file (decompressed when stored as .gz), at most MAX_TRACE_BYTES."""
    p = locate(path)
    limit = bounds.MAX_TRACE_BYTES
    try:
        if p.suffix == ".gz":
            import gzip  # here: a run that reads no compressed data file does not load it

            with gzip.open(p, "rb") as fh:
                raw = fh.read(limit + 1)
        else:
            if p.stat().st_size > limit:
                raise ScenarioError(f"{path}: {p.stat().st_size:,} bytes; the limit is {limit:,}")
            raw = p.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise ScenarioError(f"{path}: cannot read ({type(exc).__name__})") from None
    if len(raw) > limit:
        raise ScenarioError(f"{path}: more than {limit:,} bytes; the limit is {limit:,}")
    return raw


def read_text(path: str) -> str:
    """A data file as UTF-8 text (a leading byte-order mark is dropped)."""
    try:
        return read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: not UTF-8 text") from None


UPLOAD_SUFFIXES = (".csv", ".jsonl", ".json")
"""What an uploaded trace's name may end in (each may be gzipped: ``.gz`` after it)."""


def unpack_upload(name: str, raw: bytes) -> tuple[str, bytes]:
    """An uploaded trace's name and bytes with a gzip layer taken off (as the shipped traces are stored;
    a user had only the agentic sample's .jsonl.gz to upload), unpacked to at most
    `bounds.MAX_TRACE_BYTES`: a small file that unpacks past it is refused, not unpacked whole."""
    if not name.endswith(".gz"):
        return name, raw
    inner = name[:-3]
    # its name says what it holds (said as a statement, it read as no rule: a review)
    if not inner.endswith(UPLOAD_SUFFIXES):
        kind = PurePosixPath(inner).suffix
        held = f"this one's name ends in {kind!r}" if kind else "this one's names none"
        raise ScenarioError(
            f"{name}: a gzipped trace's name says the format inside, .csv.gz, .jsonl.gz or .json.gz ({held})"
        )
    out, data, limit = bytearray(), raw, bounds.MAX_TRACE_BYTES
    while data:  # a gzip file may hold several members, one after another
        unzip = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += unzip.decompress(data, limit + 1 - len(out))
        except zlib.error:
            raise ScenarioError(f"{name}: not a gzip file, or a damaged one") from None
        if len(out) > limit or unzip.unconsumed_tail:
            raise ScenarioError(f"{name}: unpacks to more than {limit:,} bytes, the limit")
        if not unzip.eof:
            raise ScenarioError(f"{name}: cut off (its gzip stream ends early)")
        data = unzip.unused_data
    return inner, bytes(out)


def store_upload(raw: bytes, suffix: str) -> str:
    """Keep an uploaded trace under its content hash; the ``upload:`` reference that names it."""
    if suffix not in (".csv", ".jsonl"):
        raise ScenarioError(f"upload: files end in .csv or .jsonl (got {suffix!r})")
    if len(raw) > bounds.MAX_TRACE_BYTES:
        raise ScenarioError(f"upload: {len(raw):,} bytes; the limit is {bounds.MAX_TRACE_BYTES:,}")
    name = hashlib.sha256(raw).hexdigest()[:20] + suffix
    folder = _private_uploads()
    target = folder / name
    if not target.exists():
        tmp = folder / f".{name}.{os.getpid()}.part"
        tmp.write_bytes(raw)
        tmp.replace(target)
    return UPLOAD_PREFIX + name


def untrusted_problems(paths: Iterable[tuple[str, str]]) -> list[str]:
    """For (field, data path) pairs from an untrusted scenario: one message per path it may not use.

    Such a scenario may name only ``data:``/``shared:`` files and this server's ``upload:`` files,
    and only ones that exist: anything else would let a link make the server read (and echo
    parts of) an arbitrary local file.
    """
    out = []
    for field, path in paths:
        if not is_reference(path):
            out.append(
                f"{field}: {path[:80]!r} is a local path; a shared scenario may only name shipped "
                f"({DATA_PREFIX}...) or uploaded ({UPLOAD_PREFIX}...) files"
            )
            continue
        try:
            locate(path)
        except ScenarioError as exc:
            out.append(f"{field}: {exc}")
    return out
