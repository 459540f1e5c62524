"""CIFAR-10's fair fight at the decay of largest gap: the decay and the lrs come from a settled
sweep before the runs, λ = 1 runs nothing (cifar10_fair holds it), and a run trains in that decay."""

import dataclasses

import pytest

from stiefel_book.experiments import cifar10_fair as cd
from stiefel_book.experiments import get_config, run_experiment
from stiefel_book.results import write_results

from tiny import TINY

SHRUNK = {k: v for k, v in TINY.items() if k != "seeds"}


def _sweep(best: dict, decays=(1.0, 0.3, 0.05), lrs=(3e-4, 1e-3, 3e-3)) -> dict:
    """A core sweep whose cell ``(arm, λ)`` scores ``best[(arm, λ)] = (lr, score)`` at that lr, 0.4 elsewhere."""
    runs = {}
    for (arm, decay), (top, score) in best.items():
        for lr in lrs:
            history = [{"epoch": e, "test_acc": score if lr == top else 0.4} for e in range(1, 101)]
            runs[f"{arm}@wd={decay:g}@qklr={lr:g}/100"] = {"history": history}
    config = {"task": {"lr": 1e-3, "epochs": 100}, "seeds": [100], "weight_decays": list(decays)}
    return {"config": config, "runs": runs}


SETTLED = {
    ("baseline", 1.0): (1e-3, 0.505),
    ("stiefel", 1.0): (1e-3, 0.500),  # gap -0.5 pp
    ("baseline", 0.3): (1e-3, 0.470),
    ("stiefel", 0.3): (1e-3, 0.480),  # gap +1.0 pp: the largest
    ("baseline", 0.05): (1e-3, 0.460),
    ("stiefel", 0.05): (1e-3, 0.458),
}


def test_the_decay_of_largest_gap_waits_for_every_cell_and_takes_the_largest_absolute_gap(isolated):
    path = isolated / "results" / "cifar10_qk_lr-ci.json"
    config = get_config("cifar10_fair_decay", "ci")
    with pytest.raises(ValueError, match="not every cell of cifar10_qk_lr"):
        cd.resolve_decay(config)  # no sweep yet
    write_results(_sweep({**SETTLED, ("stiefel", 0.05): (3e-4, 0.47)}), path)  # best at the grid's edge
    with pytest.raises(ValueError, match="not every cell"):
        cd.resolve_decay(config)
    write_results(_sweep({**SETTLED, ("stiefel", 0.3): (3e-3, 0.48)}), path)  # edge, again
    assert cd.decay_choices(cd.load_results("cifar10_qk_lr", "ci")) is None
    write_results(_sweep(SETTLED), path)
    resolved = cd.resolve_decay(config)
    assert resolved.task.weight_decay == 0.3 and dict(resolved.qk_lrs) == {"baseline": 1e-3, "stiefel": 1e-3}
    assert dict(resolved.gaps) == pytest.approx({1.0: -0.005, 0.3: 0.01, 0.05: -0.002})


def test_at_lambda_1_there_is_nothing_to_run(isolated):
    lopsided = {**SETTLED, ("baseline", 1.0): (1e-3, 0.53)}  # gap -3 pp at λ = 1
    write_results(_sweep(lopsided), isolated / "results" / "cifar10_qk_lr-ci.json")
    with pytest.raises(ValueError, match="λ = 1, whose 12 judged starts cifar10_fair already holds"):
        cd.resolve_decay(get_config("cifar10_fair_decay", "ci"))


def test_a_run_trains_in_the_resolved_decay_and_records_it(isolated):
    write_results(_sweep(SETTLED), isolated / "results" / "cifar10_qk_lr-ci.json")
    base = cd.resolve_decay(get_config("cifar10_fair_decay", "ci"))
    config = dataclasses.replace(base, task=dataclasses.replace(base.task, **SHRUNK))
    out = run_experiment("cifar10_fair_decay", "ci", config=config, arms=["stiefel"], progress=False)
    assert out["config"]["task"]["weight_decay"] == 0.3 and out["runs"]["stiefel/0"]["qk_lr"] == 1e-3
