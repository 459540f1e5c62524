"""The decay map tuned decay by decay: the sweep grows each (arm, λ) cell apart, the judged map
reads each cell's lr from it (λ = 1: from grokking_qk_lr) before its runs, and a cell at the lr
the tuned map already ran is that map's run, adopted."""

import dataclasses

import pytest
import torch

from stiefel_book.experiments import decay_map_sweep as dms
from stiefel_book.experiments import get_config, run_experiment
from stiefel_book.results import results_path, write_results


def _short(config, epochs=40):
    return dataclasses.replace(config, task=dataclasses.replace(config.task, epochs=epochs, log_every=20))


def test_each_cell_starts_around_the_tasks_lr_and_a_run_trains_at_its_decay_and_lr(isolated):
    config = dms.SWEEP_PROFILES["full"]
    assert config.weight_decays == (0.0, 0.1, 0.3, 3.0) and config.seeds == (100, 101, 102, 103, 104)
    lr = config.task.lr
    first = dms.study(config).start_arms()
    assert "stiefel@wd=0.3@qklr=0.0003" in first and f"baseline@wd=3@qklr={lr:g}" in first
    assert len(first) == 4 * 2 * 4  # four decays, two arms, four rungs
    assert dms.study(config).pending_rungs(None, "baseline@wd=0") == (3e-4, 1e-3, 3e-3, 1e-2)  # the task's lr is 3e-3
    ci = _short(dms.SWEEP_PROFILES["ci"])
    run = dms.study(ci).run("stiefel@wd=0@qklr=0.001", 100, torch.device("cpu"), progress=False)
    assert run["final"]["epoch"] == 40 and "val_acc" in run["final"]
    with pytest.raises(ValueError, match="λ in"):
        dms.study(ci).run("stiefel@wd=0.3@qklr=0.001", 100, torch.device("cpu"), progress=False)  # not on ci


def _sweep_file(name, profile, task, scores: dict[str, dict[float, float]], seeds=(100,)):
    runs = {
        f"{cell}@qklr={lr:g}/{s}": {"history": [{"epoch": e, "val_acc": acc} for e in (20, 40)]}
        for cell, by_lr in scores.items()
        for lr, acc in by_lr.items()
        for s in seeds
    }
    config = {"task": dataclasses.asdict(task), "seeds": list(seeds)}
    results = {"experiment": name, "profile": profile, "config": config, "runs": runs}
    write_results(results, results_path(name, profile))


def test_the_judged_map_reads_each_decays_choice_and_adopts_the_tuned_maps_runs(isolated):
    base = _short(get_config("grokking_decay_map_per_decay", "ci"))
    lr = base.task.lr  # 3e-3
    with pytest.raises(ValueError, match="sweep grokking_decay_qk_lr --profile ci"):
        dms.resolve(base)
    hill = {0.9: 0.8, 1.0: 0.9, 1.1: 0.8}  # each cell's middle rung scores highest: an interior choice
    peaks = {"baseline@wd=0": (3e-4, 1e-3, 3e-3), "stiefel@wd=0": (3e-3, 1e-2, 3e-2)}
    _sweep_file("grokking_decay_qk_lr", "ci", base.task, {c: dict(zip(r, hill.values())) for c, r in peaks.items()})
    at_one = dict(zip((1e-3, 3e-3, 1e-2), hill.values()))
    _sweep_file("grokking_qk_lr", "ci", base.task, {"baseline": at_one, "stiefel": at_one})
    config = dms.resolve(base)
    assert dict(config.qk_lrs) == pytest.approx(
        {"baseline@wd=0": 1e-3, "stiefel@wd=0": 1e-2, "baseline@wd=1": lr, "stiefel@wd=1": lr}
    )
    # the tuned map ran AdamW at λ = 0 at 1e-3 (this cell's choice) and the Stiefel rule at the task's lr (not its)
    tuned = dataclasses.replace(
        get_config("grokking_decay_map_tuned", "ci"),
        task=base.task,
        qk_lrs=(("baseline", 1e-3), ("stiefel", lr), ("no_decay_qk", lr)),
    )
    the_tuned = run_experiment(
        "grokking_decay_map_tuned", "ci", config=tuned, arms=["baseline@wd=0", "stiefel@wd=0"], progress=False
    )
    cells = ["baseline@wd=0", "stiefel@wd=0"]
    out = run_experiment("grokking_decay_map_per_decay", "ci", config=config, arms=cells, progress=False)
    adopted = {key: (run["provenance"] or {}).get("adopted_from") for key, run in out["runs"].items()}
    assert adopted == {"baseline@wd=0/0": "grokking_decay_map_tuned-ci", "stiefel@wd=0/0": None}
    assert out["runs"]["baseline@wd=0/0"]["history"] == the_tuned["runs"]["baseline@wd=0/0"]["history"]
    assert out["runs"]["stiefel@wd=0/0"]["qk_lr"] == pytest.approx(1e-2)


def test_the_chapter_reads_the_per_decay_map_only_once_complete():
    from stiefel_book.findings import decay_map as fdm
    from stiefel_book.pages import regimes_rules

    def history(acc):
        return [{"epoch": e, "val_acc": acc} for e in (750, 1500)]

    task = get_config("grokking_decay_map_per_decay", "full").task
    seeds, decays = range(10), (0.0, 1.0)
    runs = {
        f"{arm}@wd={wd:g}/{s}": {"history": history(0.5 + 0.01 * s + (0.3 + 0.002 * s) * (arm == "stiefel"))}
        for arm in ("baseline", "stiefel")
        for wd in decays
        for s in seeds
    }
    per_decay = {"config": {"weight_decays": list(decays), "seeds": list(seeds)}, "runs": runs}
    rules = regimes_rules()
    cells = fdm.per_decay_cells(per_decay, task, rules)
    assert [(c.weight_decay, c.verdict) for c in cells] == [(0.0, "higher"), (1.0, "higher")]
    del runs["stiefel@wd=1/9"]
    assert fdm.per_decay_cells(per_decay, task, rules) is None  # a partial map is not read
