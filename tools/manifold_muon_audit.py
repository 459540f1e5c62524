"""Did ManifoldMuon's float32 fault (fixed in 3ed9cd8) touch the runs made before the fix? Re-runs
one judged run per setting with the fixed library, and at every step also computes the direction
as the library before the fix did (read from git), recording how far that direction was from the
tangent space, its spectral norm, and how far it was from the fixed one. Written to
``tools/manifold_muon_audit.json``; a tool of the checkout (it needs the git history).

    python tools/manifold_muon_audit.py induction_2x2 mqar_2x2 charlm_long
    python tools/manifold_muon_audit.py induction_lr_sensitivity:manifold_muon@lr=0.1   # one arm of a grid
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

import stiefel_core.manifold_muon as mm
from stiefel_book.experiments import get_config, run_experiment
from stiefel_book.results import results_dir

OUT = Path(__file__).with_suffix(".json")
BEFORE = "3ed9cd8^"  # the library before the fix


def old_dual_direction():
    source = subprocess.run(
        ["git", "show", f"{BEFORE}:stiefel_core/manifold_muon.py"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parent,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_manifold_muon.py"
    path.write_text(source.replace("from .", "from stiefel_core."))
    spec = importlib.util.spec_from_file_location("old_manifold_muon", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dual_direction


def audit(name: str, arm: str, seed: int) -> dict:
    old, new, worst = old_dual_direction(), mm.dual_direction, {"tangent": 0.0, "norm": 0.0, "change": 0.0}
    steps = []

    def both(W, M, **options):
        A, taken = new(W, M, **options)
        B, _ = old(W, M, **options)
        tangent = torch.linalg.matrix_norm(W.mT @ B + B.mT @ W).max().item()
        norm = torch.linalg.matrix_norm(B.double(), ord=2).max().item()
        change = (torch.linalg.matrix_norm(B - A, ord=2)).max().item()  # the steps differ by lr x this
        steps.append(change)
        for key, value in (("tangent", tangent), ("norm", norm), ("change", change)):
            worst[key] = max(worst[key], value)
        return A, taken

    mm.dual_direction = both
    before = os.environ.get("STIEFEL_RESULTS")
    try:
        folder = Path(tempfile.mkdtemp())  # the sweeps the runs read (pending ones first), not this file
        pending = Path(__file__).parents[1] / "pending_results"
        for f in [*pending.glob("*-full.json*"), *results_dir().glob("*-full.json*")]:
            if not f.name.startswith(f"{name}-full.") and not (folder / f.name).exists():
                shutil.copy(f, folder / f.name)
        os.environ["STIEFEL_RESULTS"] = str(folder)  # where a grid's added arm reads its sweep
        run_experiment(
            name, "full", arms=[arm], seeds=[seed], directory=folder, progress=False, checkpoints=folder / "ckpt"
        )
    finally:
        mm.dual_direction = new
        if before is None:
            os.environ.pop("STIEFEL_RESULTS", None)
        else:
            os.environ["STIEFEL_RESULTS"] = before
    large = [i for i, c in enumerate(steps) if c > 1e-3]
    return {
        "seed": seed,
        "solves": len(steps),
        "worst": worst,
        "solves_changed_over_1e-3": len(large),
        "first_changed_solve": large[0] if large else None,
    }


if __name__ == "__main__":
    names = sys.argv[1:] or ["induction_2x2", "mqar_2x2", "charlm_long"]
    found = json.loads(OUT.read_text()) if OUT.exists() else {}
    for entry in names:
        name, _, arm = entry.partition(":")
        seed = min(get_config(name, "full").seeds)
        found[entry] = audit(name, arm or "manifold_muon", seed)
        print(entry, found[entry], flush=True)
        OUT.write_text(json.dumps(found, indent=1) + "\n")
