#!/usr/bin/env python3
"""Every figure stated once: bench/results.md (written by `bash bench/run.sh`) holds the measured table;
README.md's Performance table is rows of it, cell for cell, and no doc states a ratio (`1.07×`) that the file
does not hold. Investigations (a section headed `Investigation…`, each naming the build and command it
measured) keep their own figures: they are history of how a number was found, not a current figure.

    figures_test.py ROOT"""
import re
import sys
from pathlib import Path

from verdict import verdict

RATIO = re.compile(r"(?<![\d.])\d+\.\d+×")


def table_rows(text):
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not re.match(r"^\|[-| ]+\|$", line):
            rows.append(tuple(cell.strip() for cell in line.strip().strip("|").split("|")))
    return rows


def outside_investigations(text):
    kept, skipping, level = [], False, 0
    for line in text.splitlines():
        heading = re.match(r"^(#+) (.*)", line)
        if heading:
            depth = len(heading.group(1))
            if skipping and depth <= level:
                skipping = False
            if not skipping and heading.group(2).startswith("Investigation"):
                skipping, level = True, depth
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def main():
    root = Path(sys.argv[1])
    results_path = root / "bench" / "results.md"
    if not results_path.exists():
        print("FAILED: no bench/results.md: run `bash bench/run.sh`, which writes it")
        return 1
    results = results_path.read_text()
    measured = set(table_rows(results)[1:])
    known_ratios = set(RATIO.findall(results))
    failures, rows = [], []
    readme = (root / "README.md").read_text()
    performance = re.search(r"^## Performance\n(.*?)(?=^## )", readme, flags=re.S | re.M)
    if not performance:
        failures.append("README.md has no Performance section")
    else:
        rows = table_rows(performance.group(1))
        if len(rows) < 4:
            failures.append(f"README.md's Performance table has {len(rows)} rows")
        for row in rows[1:]:
            if row not in measured:
                failures.append(f"README.md's row '{row[0]}' is not bench/results.md's (cell for cell)")
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for ratio in sorted(set(RATIO.findall(outside_investigations(path.read_text()))) - known_ratios):
            failures.append(f"{path.relative_to(root)} states {ratio}, which bench/results.md does not hold")
    return verdict(failures, f"README's {len(rows) - 1} rows are bench/results.md's; every ratio stated is "
                             "measured there")


if __name__ == "__main__":
    sys.exit(main())
