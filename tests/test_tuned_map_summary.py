"""The decay map at tuned lrs (findings.decay_map.tuned_cells): read only once complete (the regimes
chapter then states it first, with the map at the task's one rate beside it: nbval guards its words)."""

from types import SimpleNamespace

from stiefel_book.findings import decay_map

DECAYS, SEEDS, ARMS = (0.0, 1.0), range(10), ("baseline", "stiefel", "frozen", "no_decay_qk")
TASK = SimpleNamespace(lr=3e-3, warmup_epochs=10)
RULE = SimpleNamespace(margin=2.0, alpha=0.05, count_past=0.9)  # a declared family's rule (protocol.Family)
RULES = dict.fromkeys(("decay_map", "decay_map_tuned", "controls_p31"), RULE)


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
