"""Convert plain results files (``NAME.json``) to gzip JSON (``NAME.json.gz``) in place.

    python tools/compact_results.py            # book/results/ and pending_results/ (where present)
    python tools/compact_results.py --check    # exit 1 if a plain results file remains
    python tools/compact_results.py FOLDER...  # other folders

Each file is read, written as gzip by :func:`stiefel_book.results_files.write` (deterministic
bytes), read back and compared with what was read (as canonical JSON, so a NaN compares equal to
itself) before the plain file is removed; a file that does not load back equal is left as it was
and the tool exits 1. A tool of the checkout."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from stiefel_book import results_files

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = (ROOT / "book" / "results", ROOT / "pending_results")

__all__ = ["plain_files", "convert", "main"]


def plain_files(folders) -> list[Path]:
    """The plain ``.json`` results files of ``folders`` (those that exist), sorted."""
    return sorted(p for folder in folders if Path(folder).is_dir() for p in Path(folder).glob("*.json"))


def _canonical(results: dict) -> str:
    return json.dumps(results, indent=1, sort_keys=True)


def convert(plain: Path) -> Path:
    """``plain`` as ``NAME.json.gz``, read back from disk and found equal; the plain file removed.
    A ``.json.gz`` already beside it is refused (:class:`results_files.TwoFormsError`) before
    anything is written; a file that does not load back equal (``ValueError``) is put back as it was."""
    results_files.find(plain.parent, results_files.stem(plain))  # both forms: refused
    original = plain.read_bytes()
    results = results_files.read(plain)
    written = results_files.write(results, plain)  # atomic; removes the plain file
    if _canonical(results_files.read(written)) != _canonical(results):
        plain.write_bytes(original)
        written.unlink()
        raise ValueError(f"{plain} did not load back equal from gzip: left as it was")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, help="default: book/results and pending_results")
    parser.add_argument("--check", action="store_true", help="convert nothing; exit 1 if a plain file remains")
    args = parser.parse_args(argv)
    folders = args.folders or FOLDERS
    plain = plain_files(folders)
    if args.check:
        for path in plain:
            print(f"plain results file: {path} (python tools/compact_results.py converts it)")
        return 1 if plain else 0
    failed = 0
    for path in plain:
        before = os.path.getsize(path)
        try:
            written = convert(path)
        except (results_files.ResultsFileError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            failed += 1
            continue
        print(f"{path.name}: {before:,} -> {os.path.getsize(written):,} bytes ({written.name}, loads back equal)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
