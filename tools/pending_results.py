"""``tools/background_runs.sh``'s results files: seed a runs folder, stash what the book lacks.

    python tools/pending_results.py seed DIR/results    # pending_results/, then book/results/*-full
    python tools/pending_results.py stash DIR/results   # its files holding runs the book lacks

Both read a results file in either form (``NAME.json.gz`` or an older ``NAME.json``) through
:mod:`stiefel_book.results_files`, so a folder never ends up holding both forms of one name.
A tool of the checkout."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from stiefel_book import results_files

ROOT = Path(__file__).resolve().parents[1]
BOOK, PENDING = ROOT / "book" / "results", ROOT / "pending_results"

__all__ = ["names", "seed", "stash", "main"]


def names(folder: Path, pattern: str = "*") -> list[str]:
    """The results files' names (``grokking-full``) in ``folder`` matching ``pattern``, either form."""
    if not folder.is_dir():
        return []
    found = {
        results_files.stem(p)
        for suffix in (results_files.GZ, results_files.PLAIN)
        for p in folder.glob(pattern + suffix)
    }
    return sorted(found)


def seed(into: Path, book: Path = BOOK, pending: Path = PENDING) -> list[str]:
    """Copy into ``into`` every results file of ``pending``, then every ``*-full`` of ``book``,
    whose name ``into`` does not hold yet in either form (never overwriting). Returns the copied."""
    into.mkdir(parents=True, exist_ok=True)
    copied = []
    for folder, pattern in ((pending, "*"), (book, "*-full")):
        for name in names(folder, pattern):
            if results_files.find(into, name) is None:
                source = results_files.find(folder, name)
                shutil.copyfile(source, into / source.name)
                copied.append(source.name)
    return copied


def stash(source: Path, book: Path = BOOK, pending: Path = PENDING) -> list[str]:
    """Write into ``pending`` (gzip) each results file of ``source`` holding runs that neither the
    book's file of that name nor an earlier stash holds. Returns the names stashed."""
    stashed = []
    for name in names(source):
        results = results_files.read(results_files.find(source, name))
        new = set(results["runs"])
        for folder in (book, pending):
            kept = results_files.find(folder, name) if folder.is_dir() else None
            if kept is not None:
                new -= set(results_files.read(kept)["runs"])
        if new:
            results_files.write(results, pending / f"{name}{results_files.GZ}")
            stashed.append(name)
    return stashed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("seed", "stash"))
    parser.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    try:
        done = seed(args.folder) if args.command == "seed" else stash(args.folder)
    except results_files.ResultsFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for name in done:
        print(f"{'seeded' if args.command == 'seed' else 'stashed'} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
