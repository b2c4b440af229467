"""The shipped TOML parsed ahead (presets/parsed.json): current, the same as parsing, never in the way."""

from __future__ import annotations

import tomllib
from pathlib import Path

from engine.catalog import parsed
from engine.catalog.entries import load_catalog, presets_dir


def test_the_table_is_current() -> None:
    """presets/parsed.json is what tools/parsed_presets.py writes today (else run it)."""
    presets = presets_dir()
    written = (presets / parsed.TABLE).read_text(encoding="utf-8")
    assert written == parsed.table_text(parsed.shipped_files(presets)), "run python tools/parsed_presets.py"


def test_every_shipped_file_is_held_as_tomllib_parses_it() -> None:
    """Each catalog entry and the calibration table: found, and equal to its parse type for type."""
    presets = presets_dir()
    files = parsed.shipped_files(presets)
    assert len(files) > 40 and presets / "calibration.toml" in files
    for path in files:
        text = path.read_text(encoding="utf-8")
        found = parsed.lookup(text, presets)
        assert found is not None, path
        assert parsed._same(found, tomllib.loads(text)), path


def test_same_tells_types_apart() -> None:
    """1, 1.0 and True are three values; key order counts; NaN is never held."""
    assert parsed._same({"a": [1, 1.5, "x", True]}, {"a": [1, 1.5, "x", True]})
    assert not parsed._same(1, 1.0)
    assert not parsed._same(1, True)
    assert not parsed._same({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not parsed._same(float("nan"), float("nan"))


def test_each_hit_is_a_fresh_copy() -> None:
    """A caller that changes what it got cannot change what the next one gets."""
    presets = presets_dir()
    text = (presets / "hardware" / "h200.toml").read_text(encoding="utf-8")
    first = parsed.lookup(text, presets)
    assert first is not None
    first["id"] = "changed"
    again = parsed.lookup(text, presets)
    assert again is not None and again["id"] == "h200"


def test_an_edited_entry_is_parsed_not_looked_up(tmp_path: Path) -> None:
    """A text the table does not hold (a user's copy with one number changed) is parsed: the catalog
    says what the file says."""
    source = presets_dir() / "hardware" / "h200.toml"
    text = source.read_text(encoding="utf-8")
    spec = tomllib.loads(text)
    old = spec["usd_per_hour"]
    edited = text.replace(f"usd_per_hour = {old!r}", f"usd_per_hour = {old + 1.25!r}", 1)
    assert edited != text
    assert parsed.lookup(edited, presets_dir()) is None
    (tmp_path / "hardware").mkdir()
    (tmp_path / "models").mkdir()
    (tmp_path / "hardware" / "h200.toml").write_text(edited, encoding="utf-8")
    cat = load_catalog((tmp_path,))
    assert cat.hardware["h200"].usd_per_hour == old + 1.25


def test_no_table_or_a_damaged_one_means_parsing(tmp_path: Path) -> None:
    """Without the table, or with one that is not JSON, every lookup misses (and nothing raises)."""
    text = (presets_dir() / "hardware" / "h200.toml").read_text(encoding="utf-8")
    assert parsed.lookup(text, tmp_path) is None
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / parsed.TABLE).write_text("{not json", encoding="utf-8")
    assert parsed.lookup(text, damaged) is None


def test_the_table_leaves_out_what_json_cannot_carry(tmp_path: Path) -> None:
    """A file with a date (or an infinity) stays out of the table: it is parsed each time."""
    (tmp_path / "dated.toml").write_text("when = 2024-01-02\n", encoding="utf-8")
    (tmp_path / "endless.toml").write_text("x = inf\n", encoding="utf-8")
    (tmp_path / "plain.toml").write_text("x = 1.5\n", encoding="utf-8")
    table = parsed.table_text(sorted(tmp_path.glob("*.toml")))
    assert table.count("\n") == 3  # the braces and one file
    assert parsed.digest("x = 1.5\n") in table
