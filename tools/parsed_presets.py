"""Write presets/parsed.json: the shipped catalog, calibration and scenario TOML files parsed ahead.

Run ``python tools/parsed_presets.py`` after changing a file of presets/hardware, presets/models,
presets/scenarios or presets/calibration.toml by hand (``calibrate --reference --write`` rewrites it with the files it
writes; ``--check`` only says whether the table is current);
tests/catalog/test_parsed.py fails while it is not. A stale table costs time, never a wrong entry:
a file whose text is not in it is parsed (`engine.catalog.parsed`).
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.catalog import parsed
from engine.catalog.entries import presets_dir


def main() -> int:
    """Write the table (or, with --check, exit 1 when the written one differs from today's)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that presets/parsed.json is current")
    args = ap.parse_args()
    presets = presets_dir()
    if args.check:
        current = (
            (presets / parsed.TABLE).read_text(encoding="utf-8") if (presets / parsed.TABLE).is_file() else ""
        )
        if current != parsed.table_text(parsed.shipped_files(presets)):
            print(f"{presets / parsed.TABLE} is stale: run python tools/parsed_presets.py")
            return 1
        return 0
    print(f"wrote {parsed.write_table(presets)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
