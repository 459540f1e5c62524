"""nbval honours a marker only when the comment line is the marker alone: `# NBVAL_IGNORE_OUTPUT`.
A marker with text after it (`# NBVAL_IGNORE_OUTPUT: why`) is silently no marker at all, and
the cell's chaotic output is compared after all."""

import re

from stiefel_book.results import checkout_root

PACKAGE_ROOT = checkout_root()

MARKERS = {"NBVAL_IGNORE_OUTPUT", "NBVAL_CHECK_OUTPUT", "NBVAL_RAISES_EXCEPTION", "NBVAL_SKIP"}


def test_every_nbval_marker_stands_alone_on_its_line():
    bad = []
    for path in sorted((PACKAGE_ROOT / "twins").glob("*.md")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = re.match(r"\s*#\s*(NBVAL_\w+)(.*)$", line)
            if match and (match.group(1) not in MARKERS or match.group(2).strip()):
                bad.append(f"{path.name}:{number}: {line.strip()}")
    assert not bad, (
        "nbval ignores these markers (put the marker alone on its line, the reason on the next):\n" + "\n".join(bad)
    )
