"""The on-disk cache: keyed by its inputs' bytes, never trusting a bad entry, one computation at a time."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.core import diskcache


@pytest.fixture
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(diskcache.ENV_VAR, str(folder))
    return folder


class Counter:
    """A cheap computation that counts its calls."""

    def __init__(self, value: object) -> None:
        self.value, self.calls = value, 0

    def __call__(self) -> object:
        self.calls += 1
        return self.value


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_digest_follows_every_file_and_extra_string(tmp_path: Path) -> None:
    src = tree(tmp_path / "src", {"a.py": "x = 1\n", "pkg/b.py": "y = 2\n"})
    data = tree(tmp_path / "data", {"ref.csv": "id,value\nH1,3.5\n"})
    base = diskcache.digest([src, data], ["numpy 2.0"])
    assert diskcache.digest([src, data], ["numpy 2.0"]) == base
    (data / "ref.csv").write_text("id,value\nH1,3.6\n")  # one figure of a reference file
    assert diskcache.digest([src, data], ["numpy 2.0"]) != base
    (data / "ref.csv").write_text("id,value\nH1,3.5\n")
    assert diskcache.digest([src, data], ["numpy 2.0"]) == base
    (src / "pkg" / "b.py").write_text("y = 3\n")  # a source file
    assert diskcache.digest([src, data], ["numpy 2.0"]) != base
    (src / "pkg" / "b.py").write_text("y = 2\n")
    (src / "pkg" / "c.py").write_text("")  # a new, empty file
    assert diskcache.digest([src, data], ["numpy 2.0"]) != base
    (src / "pkg" / "c.py").unlink()
    assert diskcache.digest([src, data], ["numpy 2.1"]) != base  # a library's version
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\x00")  # bytecode is not an input
    assert diskcache.digest([src, data], ["numpy 2.0"]) == base


def test_the_digest_does_not_depend_on_where_the_tree_is(tmp_path: Path) -> None:
    """A checkout elsewhere (a worktree, an installed copy) with the same files shares the entries."""
    files = {"a.py": "x = 1\n", "pkg/b.py": "y = 2\n"}
    one, two = tree(tmp_path / "one", files), tree(tmp_path / "two", files)
    assert diskcache.digest([one]) == diskcache.digest([two])
    (two / "a.py").rename(two / "pkg" / "a.py")  # same bytes, another name
    assert diskcache.digest([one]) != diskcache.digest([two])


def test_an_entry_is_computed_once_then_read(where: Path) -> None:
    compute = Counter({"median": 0.12})
    assert diskcache.cached("report", "k1", compute) == {"median": 0.12}
    assert diskcache.cached("report", "k1", compute) == {"median": 0.12}
    assert compute.calls == 1
    assert diskcache.cached("report", "k2", compute) == {"median": 0.12}  # another key: computed
    assert compute.calls == 2
    assert diskcache.cached("report", "k1", compute, fresh=True) == {"median": 0.12}  # --no-cache
    assert compute.calls == 3
    assert (where.stat().st_mode & 0o777) == 0o700


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[:-5],  # cut short
        lambda raw: raw[:-1] + bytes([raw[-1] ^ 1]),  # one bit of the pickle flipped
        lambda raw: b"",  # empty
        lambda raw: b"not a digest\n" + raw.split(b"\n", 1)[1],  # its digest lost
    ],
)
def test_a_damaged_entry_is_computed_again_and_rewritten(
    where: Path, damage: Callable[[bytes], bytes]
) -> None:
    diskcache.cached("report", "k1", Counter([1.0, 2.0]))
    (entry,) = where.glob("report-*.pickle")
    entry.write_bytes(damage(entry.read_bytes()))
    again = Counter([1.0, 2.5])
    assert diskcache.cached("report", "k1", again) == [1.0, 2.5]
    assert again.calls == 1
    assert diskcache.cached("report", "k1", Counter(None)) == [1.0, 2.5]  # the rewritten entry


def test_a_sound_digest_over_a_pickle_that_cannot_load_is_computed_again(where: Path) -> None:
    import hashlib

    diskcache.cached("report", "k1", Counter(1))
    (entry,) = where.glob("report-*.pickle")
    body = b"\x80\x05cno_such_module\nThing\n."  # a pickle of a class that no longer exists
    entry.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    assert diskcache.cached("report", "k1", Counter(2)) == 2


def test_a_folder_others_can_write_is_not_used(where: Path) -> None:
    where.mkdir(mode=0o700)
    where.chmod(0o777)
    compute = Counter(1)
    diskcache.cached("report", "k1", compute)
    diskcache.cached("report", "k1", compute)
    assert compute.calls == 2
    assert list(where.iterdir()) == []


def test_older_entries_of_a_name_are_dropped(where: Path) -> None:
    for i in range(diskcache.KEEP + 2):
        diskcache.cached("report", f"k{i}", Counter(i))
        entry = where / f"report-k{i}.pickle"
        os.utime(entry, (1_000_000 + i, 1_000_000 + i))  # written in this order
    diskcache.cached("other", "k0", Counter(0))
    kept = sorted(p.name for p in where.glob("report-*.pickle"))
    assert kept == [f"report-k{i}.pickle" for i in range(2, diskcache.KEEP + 2)]
    assert (where / "other-k0.pickle").is_file()


def test_a_second_caller_waits_for_the_first_and_reads_its_value(where: Path) -> None:
    """The lock: while one caller computes, another asking for the same entry waits, then reads
    the first one's value without computing (two threads here; two processes lock the same way)."""
    started, release = threading.Event(), threading.Event()
    results: dict[str, object] = {}
    second = Counter("second's")

    def slow() -> str:
        started.set()
        release.wait(10)
        return "first's"

    def ask(who: str, compute: Callable[[], object]) -> None:
        results[who] = diskcache.cached("report", "k1", compute)

    one = threading.Thread(target=ask, args=("one", slow))
    one.start()
    assert started.wait(10)
    two = threading.Thread(target=ask, args=("two", second))
    two.start()
    time.sleep(0.3)
    assert two.is_alive()  # waiting on the lock, not computing
    release.set()
    one.join(10)
    two.join(10)
    assert results == {"one": "first's", "two": "first's"}
    assert second.calls == 0


def test_the_default_folder_is_the_users_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(diskcache.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if os.name == "posix" and os.uname().sysname == "Linux":
        assert diskcache.folder() == tmp_path / "fengong"
    monkeypatch.setenv(diskcache.ENV_VAR, str(tmp_path / "mine"))
    assert diskcache.folder() == tmp_path / "mine"
