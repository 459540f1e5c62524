"""The study engine reproduces what the six sweep modules computed before it, on the committed
results files: every arm's scores, pending rungs and choice (on each file, on each file thinned
by one run in seven, and on each file cut to its first grid), each first grid, and every judged
experiment's resolved rates. The reference was recorded by the old modules (tests/data/make_study_snapshot.py)."""

import gzip
import json
from pathlib import Path

import pytest

from stiefel_book.arms.routing_arms import OPTIONAL_ARMS
from stiefel_book.experiments.runner import EXPERIMENTS, get_config
from stiefel_book.results import load_results

RESULTS = Path(__file__).parents[1] / "book" / "results"
SNAPSHOT = json.loads(gzip.decompress((Path(__file__).parent / "data" / "study_snapshot.json.gz").read_bytes()))


def studies(sweep: str) -> dict:
    """``{profile: the Study}`` of ``sweep``, from the ported modules."""
    from stiefel_book.experiments import cifar10_fair, decay_map_sweep, fair_fight, p97_fair

    home = {
        "grokking_qk_lr": (fair_fight.study, fair_fight.SWEEP_PROFILES),
        "grokking_p97_qk_lr": (p97_fair.study, p97_fair.SWEEP_PROFILES),
        "cifar10_qk_lr": (cifar10_fair.study, cifar10_fair.SWEEP_PROFILES),
        "cifar10_peers_qk_lr": (cifar10_fair.peer_study, cifar10_fair.PEER_SWEEP_PROFILES),
        "grokking_decay_qk_lr": (decay_map_sweep.study, decay_map_sweep.SWEEP_PROFILES),
    }
    if sweep in home:
        make, profiles = home[sweep]
        return {name: make(config) for name, config in profiles.items()}
    from stiefel_book.experiments import routing_sweep

    arms = routing_sweep.SWEPT_ARMS  # the old modules' arms (manifold Muon is swept only when named)
    return {name: routing_sweep.study(sweep, c, arms=arms) for name, c in routing_sweep.SWEEPS[sweep][0].items()}


def _keys(d):
    return {repr(float(k)): v for k, v in d.items()}


def _pick(c):
    return c and {"lr": c["lr"], "score": c["score"], "interior": c["interior"], "scores": _keys(c["scores"])}


def _partial(results, keep):
    return {**results, "runs": {k: v for k, v in results["runs"].items() if keep(k)}}


@pytest.mark.parametrize("sweep", sorted(k for k in SNAPSHOT if k != "judged"))
def test_the_engine_scores_grows_and_chooses_as_the_old_modules_did_on_the_committed_files(sweep):
    study = studies(sweep)
    full = study["full"]
    results = load_results(sweep, "full", RESULTS)
    expected = SNAPSHOT[sweep]["arms"]
    # thinned over the runs of the arms the old modules swept: an arm swept later, only when named (manifold Muon),
    # neither shifts which runs are left out nor is read
    keys = sorted(k for k in results["runs"] if k.rpartition("/")[0].split("@")[0] not in OPTIONAL_ARMS)
    first = set(full.start_arms(with_frozen=True))
    files = {
        None: results,
        "__thinned": _partial(results, lambda k: k in keys and keys.index(k) % 7 != 3),
        "__start_only": _partial(results, lambda k: k.rpartition("/")[0] in first),
    }
    for part, file in files.items():
        want = expected[part] if part else {a: v for a, v in expected.items() if not a.startswith("__")}
        assert set(want) <= set(full.arms)  # the routing sweeps also name manifold Muon, swept when named
        for arm in sorted(want):
            assert _keys(full.scores(file, arm)) == want[arm]["scores"], (part, arm)
            assert list(full.pending_rungs(file, arm)) == want[arm]["pending"], (part, arm)
            old = want[arm]["chosen"]
            assert _pick(full.chosen(file, arm)) == old.get("ok"), (part, arm)  # old "settled" raised where None
    for profile, names in SNAPSHOT[sweep]["start"].items():
        assert list(study[profile].start_arms(with_frozen=names[-1] == "frozen")) == names
    if sweep == "grokking_p97_qk_lr":
        assert study["full"].pending(results) == SNAPSHOT[sweep]["pending_arms"]
        for profile, names in SNAPSHOT[sweep]["pending_arms_none"].items():
            assert study[profile].pending(None) == names


@pytest.mark.parametrize("name", sorted(SNAPSHOT["judged"]))
def test_each_judged_experiment_resolves_the_rates_the_old_modules_resolved(name):
    want = SNAPSHOT["judged"][name]
    config = EXPERIMENTS[name].resolve(get_config(name, "full"), RESULTS)
    config = config.task if name == "induction_decay_map" else config
    got = {"qk_lrs": [list(x) for x in config.qk_lrs]}
    if hasattr(config, "gaps"):
        got.update(gaps=[list(x) for x in config.gaps], weight_decay=config.task.weight_decay)
    assert got == want["ok"]


def test_the_cifar10_decay_choices_are_the_old_ones():
    from stiefel_book.experiments import cifar10_fair

    picks = cifar10_fair.decay_choices(load_results("cifar10_qk_lr", "full", RESULTS))
    got = {repr(k): {a: _pick(v) for a, v in d.items()} for k, d in picks.items()}
    assert got == SNAPSHOT["cifar10_qk_lr"]["decay_choices"]["ok"]
