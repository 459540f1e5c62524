"""Drop one arm's runs from results files, to make them again: where a fault of the library made
them (each use is recorded in ``book/protocol.yml`` before the new runs). A run's arm is its key's
part before ``@`` and ``/`` (``manifold_muon@qklr=0.01/100`` is ``manifold_muon``'s). The file is
rewritten atomically, under the lock the runs take; the dropped keys are printed. The file's
per-arm settings of the dropped arm (its resolved W_Q, W_K lr) then describe no run, so the runs made
again may be made at the arm's new choice (``stiefel_book.results_reading.shared_config``).

    python tools/drop_runs.py manifold_muon book/results/charlm_long_qk_lr-full.json.gz ...
"""

from __future__ import annotations

import sys
from pathlib import Path

from stiefel_book.results import locked, write_results
from stiefel_book.results_files import read
from stiefel_book.results_reading import split_key


def drop(path: Path, arm: str) -> list[str]:
    """Remove ``arm``'s runs from the results file ``path``; returns their keys (none: file unchanged)."""
    with locked(path):
        results = read(path)
        gone = sorted(k for k in results["runs"] if split_key(k)[0].split("@")[0] == arm)
        if gone:
            results["runs"] = {k: v for k, v in results["runs"].items() if k not in gone}
            write_results(results, path)
    return gone


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    arm, paths = argv[0], [Path(p) for p in argv[1:]]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        print(f"error: no such results file: {', '.join(missing)}", file=sys.stderr)
        return 1
    for path in paths:
        gone = drop(path, arm)
        print(f"{path}: dropped {len(gone)} runs of {arm}" + (f" ({gone[0]} ... {gone[-1]})" if gone else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
