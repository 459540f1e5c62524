"""Issue 49's 2x2 on the routing tasks: manifold Muon's W_Q, W_K sweep grows only its own ladder,
from the rungs declared for it, and settles; the judged 2x2 runs read every corner's rate from the
sweep (refusing, with the command, until manifold Muon's has settled) on fresh seeds; the family's
declared power is what the statistics compute from the judged routing runs. At ci scale."""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from test_routing_resolve import SETTLED, write_sweep

from stiefel_book import protocol, results_files
from stiefel_book.__main__ import main
from stiefel_book.experiments import routing_judged, routing_sweep, run_experiment
from stiefel_book.experiments.routing_sweep import SWEPT_ARMS, SweepError, resolver
from stiefel_book.results import load_results

RESULTS = Path(__file__).resolve().parents[1] / "book" / "results"


def test_a_ci_sweep_of_manifold_muon_grows_only_its_ladder_and_resolves(tmp_path):
    write_sweep(tmp_path, "mqar_qk_lr")  # the other arms settled at 3e-3
    before = set(load_results("mqar_qk_lr", "ci", tmp_path)["runs"])
    folders = ["--results", str(tmp_path), "--checkpoints", str(tmp_path / "ck")]
    argv = ["sweep", "mqar_qk_lr", "--profile", "ci", "--arms", "manifold_muon", "--no-progress"]
    assert main([*folders, *argv]) == 0
    runs = load_results("mqar_qk_lr", "ci", tmp_path)["runs"]
    grown = set(runs) - before
    assert grown and all(key.startswith("manifold_muon@qklr=") for key in grown)
    tried = {float(key.split("=")[1].split("/")[0]) for key in grown}
    assert {3e-3, 1e-2} <= tried  # ci's first grid: one rung under the declared 1e-2, and 1e-2
    assert all(runs[key]["qk_lr"] == float(key.split("=")[1].split("/")[0]) for key in grown)
    choice = routing_sweep.chosen(load_results("mqar_qk_lr", "ci", tmp_path), "manifold_muon")
    assert choice["interior"]
    from stiefel_book.experiments.runner import get_config

    at_task_lr = dataclasses.replace(
        get_config("mqar_2x2", "ci"), lr=routing_sweep.MQAR_PROFILES["ci"].lr
    )  # the sweep's
    resolved = resolver("mqar_qk_lr", routing_judged.ARMS_2X2)(at_task_lr, tmp_path)
    assert dict(resolved.qk_lrs) == {"baseline": 3e-3, "muon": 3e-3, "stiefel": 3e-3, "manifold_muon": choice["lr"]}
    main([*folders, *argv])  # settled: a second call runs nothing
    assert set(load_results("mqar_qk_lr", "ci", tmp_path)["runs"]) == set(runs)


def test_manifold_muons_start_and_ties_are_its_own_rung_not_the_tasks_lr():
    config = routing_sweep.SWEEPS["induction_qk_lr"][0]["full"]
    assert routing_sweep.study("", config).start_rungs("manifold_muon") == (1e-3, 3e-3, 1e-2, 3e-2)
    assert routing_sweep.study("", config).start_rungs("stiefel") == (3e-4, 1e-3, 3e-3, 1e-2)
    tied = {"config": {"metric": "val_acc", "seeds": [100], "task": {"lr": 3e-3, "steps": 10}}, "runs": {}}
    for lr in (1e-3, 3e-3, 1e-2, 3e-2):  # a flat ladder: the tie goes to the rung nearest the arm's own
        for arm in ("manifold_muon", "stiefel"):
            tied["runs"][f"{arm}@qklr={lr:g}/100"] = {"history": [{"epoch": 10, "val_acc": 1.0}]}
    assert routing_sweep.chosen(tied, "manifold_muon")["lr"] == 1e-2
    assert routing_sweep.chosen(tied, "stiefel")["lr"] == 3e-3


def test_the_2x2_waits_for_manifold_muons_sweep_then_trains_each_corner_at_its_rate(tmp_path):
    write_sweep(tmp_path, "induction_qk_lr")  # manifold Muon not swept yet
    with pytest.raises(SweepError, match=r"\['manifold_muon'\].*--profile ci --arms manifold_muon`"):
        run_experiment("induction_2x2", "ci", directory=tmp_path, progress=False)
    scores = {arm: SETTLED for arm in SWEPT_ARMS} | {"manifold_muon": {3e-3: 0.2, 1e-2: 0.9, 3e-2: 0.5}}
    write_sweep(tmp_path, "induction_qk_lr", scores=scores)
    results = run_experiment("induction_2x2", "ci", directory=tmp_path, checkpoints=tmp_path / "ck", progress=False)
    assert set(results["runs"]) == {f"{arm}/50" for arm in routing_judged.ARMS_2X2}
    lrs = {key.split("/")[0]: run["qk_lr"] for key, run in results["runs"].items()}
    assert lrs == {"baseline": 3e-3, "muon": 3e-3, "stiefel": 3e-3, "manifold_muon": 1e-2}
    assert all(math.isfinite(run["final"]["val_loss"]) for run in results["runs"].values())


def test_the_2x2_judges_on_the_declared_fresh_seeds():
    family = protocol.family("routing_2x2")
    used = set(protocol.family("routing_mqar").judged_seeds) | set(protocol.family("routing_mqar_fresh").judged_seeds)
    used |= set(protocol.family("routing_mqar").selection_seeds) | {200, 201, 202} | set(range(5))
    for profiles in (routing_judged.MQAR_2X2_PROFILES, routing_judged.INDUCTION_2X2_PROFILES):
        assert profiles["full"].seeds == family.judged_seeds
    assert not set(family.judged_seeds) & used
    assert {s.split("-")[0] for s in family.results} == {"mqar_2x2", "induction_2x2"}


def test_the_2x2s_declared_power_is_what_the_stats_compute_from_the_judged_routing_runs():
    from stiefel_book.stats import power

    runs = results_files.read(results_files.find(RESULTS, "induction-full"))["runs"]
    d = [runs[f"stiefel/{s}"]["final"]["val_loss"] - runs[f"baseline/{s}"]["final"]["val_loss"] for s in range(10)]
    sd = float(np.std(d, ddof=1))
    declared = protocol.family("routing_2x2").power
    assert declared["value"] == pytest.approx(power.smallest_detectable_effect(10, sd / math.sqrt(2), m=6), abs=0.006)
    assert declared["equivalence_margin"] == pytest.approx(
        power.smallest_equivalence_margin(10, sd / math.sqrt(2), m=6), abs=0.006
    )


# --- the family's reading (findings.two_by_two), on hand-made results ---------------------------


def made(task: str, effects: dict[str, float], seeds=range(50, 60), noise: float = 0.0) -> dict:
    """A 2x2 results dict of ``task`` whose arms' final endpoint is a seed's base plus ``effects``
    (arm -> shift, in the metric's own scale), plus a small seed-dependent wobble times ``noise``."""
    metric = {"mqar": "val_acc", "charlm": "val_bpc"}.get(task, "val_loss")
    rng = np.random.default_rng(0)
    runs = {}
    for s in seeds:
        base = 0.5 + 0.1 * rng.standard_normal()
        for arm in routing_judged.ARMS_2X2:
            value = base + effects.get(arm, 0.0) + noise * rng.standard_normal()
            runs[f"{arm}/{s}"] = {"final": {metric: value}, "history": []}
    return {"runs": runs}


def test_the_2x2_reads_two_main_effects_and_their_interaction_holm_over_six():
    from stiefel_book.findings import two_by_two

    # induction: frames lower the loss by 0.3 under Adam's direction and by 0.1 under Muon's; Muon's direction alone 0
    induction = made("induction", {"stiefel": -0.3, "manifold_muon": -0.1}, noise=0.01)
    rows = two_by_two.read({"mqar": None, "induction": induction})
    assert [(r.task, r.contrast) for r in rows] == [
        (t, c) for t in ("mqar", "induction") for c in ("constraint", "direction", "interaction")
    ]
    got = {(r.task, r.contrast): r for r in rows}
    assert got["induction", "constraint"].estimate == pytest.approx(-0.2, abs=0.01)
    assert got["induction", "direction"].estimate == pytest.approx(0.1, abs=0.01)
    assert got["induction", "interaction"].estimate == pytest.approx(0.2, abs=0.02)
    assert got["induction", "constraint"].verdict == "lower" and not got["induction", "constraint"].higher_is_better
    assert got["induction", "interaction"].verdict == "higher"
    for r in rows:
        assert r.p_corrected >= r.p_raw or math.isnan(r.p_raw)
    assert all(r.verdict == "inconclusive" and r.n == 0 and r.p_corrected == 1 for r in rows if r.task == "mqar")
    assert got["mqar", "constraint"].unit == "pp" and got["mqar", "constraint"].margin == 2.0


def test_the_character_models_2x2_is_a_family_of_three_read_on_its_judged_seeds_alone():
    from stiefel_book.findings import two_by_two

    # Muon's direction lowers bits per character by 0.05 under both constraints; frames change nothing
    charlm = made("charlm", {"muon": -0.05, "manifold_muon": -0.05}, seeds=range(10), noise=0.002)
    charlm["runs"]["frozen/0"] = {"final": {"val_bpc": 9.0}, "history": []}  # another arm of charlm_long: ignored
    charlm["runs"]["stiefel/100"] = {"final": {"val_bpc": 9.0}, "history": []}  # a selection seed: ignored
    for arm in ("baseline", "muon", "manifold_muon"):
        charlm["runs"][f"{arm}/100"] = {"final": {"val_bpc": 0.5}, "history": []}
    rows = two_by_two.read({"charlm": charlm}, family="charlm_2x2")
    assert [(r.task, r.contrast) for r in rows] == [("charlm", c) for c in ("constraint", "direction", "interaction")]
    got = {r.contrast: r for r in rows}
    assert all(r.n == 10 and r.unit == "bits per character" and r.margin == 0.02 for r in rows)
    assert got["direction"].estimate == pytest.approx(-0.05, abs=0.005) and got["direction"].verdict == "lower"
    assert got["constraint"].verdict == "equivalent" and abs(got["constraint"].estimate) < 0.005
    with pytest.raises(ValueError, match="charlm_2x2 reads"):
        two_by_two.read({"mqar": None, "induction": None}, family="charlm_2x2")
    with pytest.raises(ValueError, match="unknown 2x2 family"):
        two_by_two.read({"charlm": charlm}, family="charlm_3x3")


def test_a_contrast_uses_only_seeds_with_every_arm_and_scales_to_the_unit():
    from stiefel_book.findings import two_by_two

    mqar = made("mqar", {"stiefel": 0.2}, seeds=range(50, 54))
    del mqar["runs"]["muon/53"]
    values = two_by_two.contrast_values(mqar, two_by_two.CONTRASTS["constraint"], "val_acc", 100)
    assert values == pytest.approx([10.0, 10.0, 10.0])  # (20 + 0) / 2 pp, seed 53 dropped
    with pytest.raises(ValueError, match="induction"):
        two_by_two.read({"mqar": mqar})


def test_the_2x2_says_which_judged_runs_it_still_lacks():
    from stiefel_book.findings import two_by_two

    mqar = made("mqar", {}, seeds=range(50, 60))
    for seed in (57, 58, 59):
        del mqar["runs"][f"manifold_muon/{seed}"]
    mqar["runs"]["manifold_muon/100"] = {"final": {"val_acc": 1.0}, "history": []}  # a selection seed: no help
    induction = made("induction", {}, seeds=range(50, 60))
    assert two_by_two.missing({"mqar": mqar, "induction": induction}) == {"mqar": {"manifold_muon": [57, 58, 59]}}
    assert two_by_two.missing({"mqar": None, "induction": induction})["mqar"] == {
        arm: list(range(50, 60)) for arm in routing_judged.ARMS_2X2
    }
    charlm = made("charlm", {}, seeds=range(10))
    charlm["runs"]["frozen/0"] = {"final": {"val_bpc": 9.0}, "history": []}  # another arm of the file: ignored
    assert two_by_two.missing({"charlm": charlm}, family="charlm_2x2") == {}
    with pytest.raises(ValueError, match="results lacks"):
        two_by_two.missing({"mqar": mqar})
