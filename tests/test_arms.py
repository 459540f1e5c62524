"""The arm registry: every run key of every committed results file reads as an arm and its settings
and is written back unchanged (old files read the same); each arm names a factory that exists."""

import gzip
import json
from pathlib import Path

import pytest

from stiefel_book.arms import ARMS, arm, key, parse

RESULTS = Path(__file__).parents[1] / "book" / "results"


def _stored_arms() -> set[str]:
    names = set()
    for path in sorted(RESULTS.glob("*.json.gz")):
        names |= {k.rpartition("/")[0] for k in json.loads(gzip.decompress(path.read_bytes()))["runs"]}
    return names


def test_every_stored_run_key_reads_as_an_arm_and_is_written_back_unchanged():
    stored = _stored_arms()
    assert len(stored) > 100
    for name in stored:
        base, settings = parse(name)
        assert base.name in ARMS and base.label
        if "@flr=" not in name:  # grokking_peers_lr stored the W_Q, W_K rate as "flr": read as qk_lr
            assert key(base.name, **settings) == name


def test_the_rate_has_one_name_in_code_and_its_stored_spelling_in_keys():
    assert parse("stiefel@wd=0.3@qklr=0.003")[1] == {"weight_decay": 0.3, "qk_lr": 0.003}
    assert parse("muon@flr=0.01")[1] == {"qk_lr": 0.01}
    assert key("stiefel", weight_decay=0.3, qk_lr=0.003) == "stiefel@wd=0.3@qklr=0.003"


def test_bad_keys_are_refused_in_one_line():
    for bad, word in (("nosuch@wd=1", "no arm"), ("stiefel@xx=1", "not a setting"), ("stiefel@wd=big", "number")):
        with pytest.raises(ValueError, match=word):
            parse(bad)


def test_each_training_arm_names_a_factory_that_exists_and_frozen_frames_none():
    for a in ARMS.values():
        if a.trains_qk:
            assert callable(a.optimizer_factory())
    assert not arm("frozen").trains_qk
    with pytest.raises(ValueError, match="no optimizer factory"):
        arm("frozen").optimizer_factory()
