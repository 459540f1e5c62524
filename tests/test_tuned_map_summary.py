"""The decay map at tuned lrs in the book's sentences (findings.summary): read only once complete,
and then stated first, with the map at the task's one rate beside it."""

from types import SimpleNamespace

from stiefel_book.findings import decay_map, summary
from stiefel_book.findings.decay_map import Rule

DECAYS, SEEDS, ARMS = (0.0, 1.0), range(10), ("baseline", "stiefel", "frozen", "no_decay_qk")
TASK = SimpleNamespace(lr=3e-3, warmup_epochs=10)
RULES = {name: Rule(2.0) for name in ("decay_map", "decay_map_tuned", "controls_p31")}


def _map(gain_at: dict[float, float], runs_missing: int = 0) -> dict:
    """A map whose Stiefel runs beat every other arm by ``gain_at[λ]`` (fraction) on every seed."""
    runs = {}
    for wd in DECAYS:
        for arm in ARMS:
            for s in SEEDS:
                val = 0.5 + (gain_at[wd] if arm == "stiefel" else 0.0) + 0.01 * (s % 3)
                runs[f"{arm}@wd={wd:g}/{s}"] = {"history": [{"epoch": 1500, "val_acc": val}]}
    for key in list(runs)[:runs_missing]:
        del runs[key]
    config = {"weight_decays": list(DECAYS), "seeds": list(SEEDS), "qk_lrs": [["baseline", 1e-3]]}
    return {"config": config, "runs": runs}


def test_a_partial_tuned_map_is_not_read_and_a_complete_one_is():
    assert decay_map.tuned_cells(None, TASK, RULES) is None
    assert decay_map.tuned_cells(_map({0.0: 0.1, 1.0: 0.0}, runs_missing=1), TASK, RULES) is None
    cells = decay_map.tuned_cells(_map({0.0: 0.1, 1.0: 0.0}), TASK, RULES)
    assert [(c.weight_decay, c.verdict) for c in cells] == [(0.0, "higher"), (1.0, "equivalent")]


def test_the_takeaways_state_the_tuned_map_first_and_the_untuned_beside_it():
    untuned, tuned = _map({0.0: 0.1, 1.0: 0.1}), _map({0.0: 0.1, 1.0: 0.0})
    lines = summary.regimes_takeaways({"runs": {}}, untuned, TASK, None, RULES, [], tuned_map=tuned)
    assert lines[0].startswith("**The map at tuned rates**") and "equivalent at 1 (λ = 1)" in lines[0]
    assert "one rate" in lines[1] and "higher at 2 (λ = 0, 1)" in lines[1]
    assert summary.regimes_takeaways({"runs": {}}, untuned, TASK, None, RULES, [])[0].startswith("**The map**:")


def test_the_map_tuned_at_each_decay_is_stated_beside_the_others_once_complete():
    rules = {**RULES, "decay_map_per_decay": Rule(2.0)}
    untuned, tuned = _map({0.0: 0.1, 1.0: 0.1}), _map({0.0: 0.1, 1.0: 0.0})
    per_decay = _map({0.0: -0.1, 1.0: 0.0})  # two arms suffice: only Stiefel − AdamW is read
    per_decay["runs"] = {k: v for k, v in per_decay["runs"].items() if k.startswith(("baseline@", "stiefel@"))}
    lines = summary.regimes_takeaways({"runs": {}}, untuned, TASK, None, rules, [], tuned, per_decay)
    assert "each decay" in lines[1] and "lower at 1 (λ = 0)" in lines[1]
    partial = {**per_decay, "runs": dict(list(per_decay["runs"].items())[1:])}
    assert not any(
        "each decay" in line
        for line in summary.regimes_takeaways({"runs": {}}, untuned, TASK, None, rules, [], tuned, partial)
    )
