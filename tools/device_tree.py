"""What a device call sends, made small enough to travel: the results files the device job does
not read moved out of the checkout for the call, and back after it.

A device call sends the checkout's tracked and untracked, not ignored, files, at most 64 MiB;
``book/results`` alone holds more (the grokking and CIFAR-10 runs). The device job reads of it
only :func:`device_plan.results_read` (the p = 97 sweep's and judged runs' files): :func:`light`
moves every other tracked results file into ``.device-stash/`` (ignored, so it stays behind),
:func:`restore` moves them back.

    make device-light      # before the device call: moves them out, prints what would travel
    make device-restore    # after it: moves them back (refuses to overwrite a file that differs)
    python3 tools/device_tree.py size    # the bytes that would travel now
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

from device_plan import results_read

ROOT = Path(__file__).resolve().parents[1]
STASH = ".device-stash"  # in .gitignore: what is moved here does not travel
RESULTS = "book/results"
LIMIT = 64 * 2**20  # what a device call sends at most

__all__ = ["STASH", "LIMIT", "kept", "travelling", "travelling_bytes", "movable", "light", "restore"]


def kept() -> set[str]:
    """The results files the job reads (both profiles: the dry run's too), which stay."""
    return set(results_read("full")) | set(results_read("ci"))


def _git_files(root: Path, *options: str) -> list[str]:
    listing = subprocess.run(["git", "ls-files", "-z", *options], cwd=root, capture_output=True, check=True).stdout
    return [name for name in listing.decode().split("\0") if name]


def travelling(root: Path = ROOT) -> list[str]:
    """The files a device call sends: tracked ones present in the tree, and untracked ones git
    does not ignore (a link as a link)."""
    names = _git_files(root) + _git_files(root, "--others", "--exclude-standard")
    return [name for name in dict.fromkeys(names) if os.path.lexists(root / name)]


def travelling_bytes(root: Path = ROOT) -> int:
    return sum(os.lstat(root / name).st_size for name in travelling(root))


def movable(root: Path = ROOT) -> list[str]:
    """The tracked results files the job does not read, present in the tree."""
    keep = kept()
    return [
        name
        for name in _git_files(root, RESULTS)
        if Path(name).name not in keep and (root / name).is_file() and not (root / name).is_symlink()
    ]


def light(root: Path = ROOT) -> list[str]:
    """Move :func:`movable` into the stash (refused while the stash holds files from before)."""
    stash = root / STASH
    if stash.exists() and any(p.is_file() for p in stash.rglob("*")):
        raise SystemExit(f"{stash} already holds moved files: `make device-restore` first")
    names = movable(root)
    for name in names:
        (stash / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(root / name, stash / name)
    return names


def restore(root: Path = ROOT) -> list[str]:
    """Move the stash's files back; one whose place holds a different file stays in the stash
    (refused, named), one whose place holds the same bytes is dropped from the stash."""
    stash = root / STASH
    if not stash.exists():
        return []
    back, clashes = [], []
    for path in sorted(p for p in stash.rglob("*") if p.is_file()):
        name = path.relative_to(stash).as_posix()
        target = root / name
        if target.exists():
            if filecmp.cmp(path, target, shallow=False):
                path.unlink()
            else:
                clashes.append(name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(path, target)
        back.append(name)
    if clashes:
        raise SystemExit(f"kept in {stash}, their places hold other files: {', '.join(clashes)}")
    shutil.rmtree(stash)
    return back


def _size_line(root: Path) -> str:
    size = travelling_bytes(root)
    verdict = "fits" if size <= LIMIT else "is over"
    return f"a device call would send {size:,} bytes ({size / 2**20:.1f} MiB): it {verdict} the 64 MiB limit"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("light", "restore", "size"))
    args = parser.parse_args(argv)
    if args.command == "light":
        moved = light(ROOT)
        here = ", ".join(sorted(n for n in kept() if (ROOT / RESULTS / n).exists())) or "none yet"
        print(f"moved {len(moved)} results files the device job does not read into {STASH}/; in {RESULTS}: {here}")
        print("after the device call: make device-restore")
    elif args.command == "restore":
        print(f"moved {len(restore(ROOT))} results files back from {STASH}/")
    print(_size_line(ROOT))
    return 0 if args.command != "light" or travelling_bytes(ROOT) <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
