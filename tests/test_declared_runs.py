"""The runs of two families declared before them (book/protocol.yml): grokking_p97_primary (12 paired
seeds, 0-5 adopted from grokking_p97_fair) and routing_mqar_fresh (30 fresh seeds), each at the
W_Q, W_K lrs its sweep chose, on the seeds its declaration names."""

import shutil
from pathlib import Path

import pytest

from stiefel_book import protocol
from stiefel_book.experiments import EXPERIMENTS, get_config, load_results

RESULTS = Path(__file__).resolve().parents[1] / "book" / "results"


def test_p97_primary_adopts_the_same_runs_and_makes_the_new_seeds():
    entry = EXPERIMENTS["grokking_p97_primary"]
    config = entry.resolve(get_config("grokking_p97_primary", "full"))
    family = protocol.family("grokking_p97_primary")
    assert list(config.seeds) == list(family.judged_seeds) and config.arms == ("baseline", "stiefel")
    fair = load_results("grokking_p97_fair", "full")
    for arm in config.arms:
        outcome, source = entry.adopt(config, arm, 3)
        assert source == "grokking_p97_fair-full" and outcome == fair["runs"][f"{arm}/3"]
        assert entry.adopt(config, arm, 6) is None  # seeds 6-11 are new runs
    other = config.__class__(**{**config.__dict__, "qk_lrs": (("baseline", 1e-3), ("stiefel", 1e-3))})
    assert entry.adopt(other, "baseline", 0) is None  # another lr: not the same computation


def test_mqar_fresh_judges_on_its_declared_fresh_seeds_at_the_checked_lr(tmp_path):
    """routing_mqar_fresh (amended): MQAR's arms on 30 fresh seeds at MQAR's checked model lr, their rates
    read from mqar_checked_qk_lr; refused until that sweep has settled."""
    from stiefel_book.experiments import routing_sweep as routing

    config = get_config("mqar_fresh", "full")
    assert list(config.seeds) == list(protocol.family("routing_mqar_fresh").judged_seeds)
    assert not set(config.seeds) & (set(range(10)) | set(range(100, 105)))  # trial, judged and selection seeds
    assert config.lr == routing.MQAR_CHECKED_LR != routing.MQAR_PROFILES["full"].lr
    shutil.copy(RESULTS / "mqar_model_lr-full.json.gz", tmp_path)  # the check chose 1e-3; no sweep there yet
    with pytest.raises(ValueError, match="mqar_checked_qk_lr"):
        EXPERIMENTS["mqar_fresh"].resolve(config, tmp_path)
    resolved = dict(EXPERIMENTS["mqar_fresh"].resolve(config).qk_lrs)  # the committed sweep has settled
    swept = set(EXPERIMENTS["mqar_fresh"].arms) - {"frozen"}  # frozen frames train W_Q, W_K at no rate
    assert set(resolved) == swept and all(lr > 0 for lr in resolved.values()), resolved
