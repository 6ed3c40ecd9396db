"""Check that two run stores hold the same rows in every table, byte for byte.

A change meant to make the converter faster must not change what it stores: convert the same
inputs with the version before the change and with this one (into two log directories, under
the same run names), then compare the stores. Every table is compared row for row (documents
by their compressed bytes, so equal rows are equal documents), except the metadata that says
when the store was made (``created``); rows are sorted, so that only what is stored counts,
not the order SQLite returns them in.

    python bench/compare_stores.py BEFORE/run/plugins/ad_layer/run.sqlite AFTER/...run.sqlite
    python bench/compare_stores.py --logdirs BEFORE_LOGDIR AFTER_LOGDIR   # every run of both

Exit status 0 when every store is the same, 1 with a line per difference otherwise.
"""
from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

#: Metadata that differs between two conversions of the same inputs.
VOLATILE_META = ("created",)


def table_rows(store: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table of ``store``, sorted, without :data:`VOLATILE_META`."""
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        out = {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr)
               for t in tables}
    finally:
        conn.close()
    out["meta"] = [r for r in out.get("meta", []) if r[0] not in VOLATILE_META]
    return out


def differences(before: Path, after: Path) -> list[str]:
    """What differs between the stores ``before`` and ``after`` (empty: nothing)."""
    a, b = table_rows(before), table_rows(after)
    out: list[str] = []
    for table in sorted(set(a) | set(b)):
        if table not in a or table not in b:
            out.append(f"table {table} only in {'after' if table not in a else 'before'}")
            continue
        if a[table] == b[table]:
            continue
        gone = [r for r in a[table] if r not in set(b[table])]
        new = [r for r in b[table] if r not in set(a[table])]
        out.append(f"table {table}: {len(a[table])} rows before, {len(b[table])} after, "
                   f"{len(gone)} only before, {len(new)} only after"
                   + (f"; first only before: {repr(gone[0])[:200]}" if gone else ""))
    return out


def store_pairs(before: Path, after: Path) -> list[tuple[str, Path, Path]]:
    """The runs of log directory ``before`` with the store of the same run in ``after``."""
    pairs = []
    for store in sorted(before.glob("*/plugins/ad_layer/run.sqlite")):
        run = store.relative_to(before).parts[0]
        pairs.append((run, store, after / store.relative_to(before)))
    return pairs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--logdirs", action="store_true",
                    help="BEFORE and AFTER are log directories: compare every run of BEFORE")
    args = ap.parse_args()
    pairs = (store_pairs(args.before, args.after) if args.logdirs
             else [(args.before.name, args.before, args.after)])
    if not pairs:
        print(f"no run stores under {args.before}", file=sys.stderr)
        return 1
    failed = False
    for run, a, b in pairs:
        if not b.exists():
            print(f"{run}: no store at {b}")
            failed = True
            continue
        diff = differences(a, b)
        rows = sum(len(r) for r in table_rows(a).values())
        print(f"{run}: {'same' if not diff else 'DIFFERENT'} ({rows:,} rows)")
        for line in diff:
            print(f"  {line}")
        failed = failed or bool(diff)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
