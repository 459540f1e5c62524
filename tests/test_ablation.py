"""The ablation: one switch per variant, paired arms on both tasks, merging with the cifar10
results only when the two are truly paired, and the table's arithmetic."""

import dataclasses

import numpy as np
import pytest
import torch

from stiefel_book import protocol
from stiefel_book.arms.variants import ABLATION_ARMS, COMPONENTS, VARIANTS
from stiefel_book.experiments import ablation, get_config, grokking, run_experiment
from stiefel_book.findings import ablation as ablation_findings
from stiefel_book.stats import paired_comparison
from stiefel_core.manifold import orthonormality_error
from stiefel_core.optim import StiefelAdam

from tiny import TINY

DEFAULTS = {"step_rule": "scale_free", "second_moment": "frame", "projector": "tangent", "trust_radius": 0.5}


def stiefel_group(opt):
    inner = getattr(opt, "optimizers", [opt])
    return next(o for o in inner if isinstance(o, StiefelAdam)).param_groups[0]


@pytest.mark.parametrize("arm", list(VARIANTS))
def test_each_variant_changes_exactly_one_switch(arm):
    from stiefel_book.tasks import cifar10

    config = get_config("cifar10", "ci", d_model=16, n_heads=2)
    group = stiefel_group(cifar10.build_optimizer(cifar10.build_model(config, arm, 0), config, arm))
    changed = {k for k, v in DEFAULTS.items() if group[k] != v}
    assert changed == set(VARIANTS[arm])
    assert set(COMPONENTS.values()) == set(VARIANTS) - {"stiefel"}


def test_cifar10_ablation_pairs_every_arm_and_the_variants_differ(isolated):
    config = get_config("cifar10_ablation", "ci", **TINY)
    results = run_experiment("cifar10_ablation", "ci", config=config, progress=False)
    assert set(results["runs"]) == {f"{arm}/{s}" for arm in ABLATION_ARMS for s in (0, 1)}
    for s in (0, 1):
        finals = [results["runs"][f"{arm}/{s}"]["final"] for arm in ABLATION_ARMS]
        assert len({f["init_fingerprint"] for f in finals}) == 1 and len({f["order_checksum"] for f in finals}) == 1
    acc = {arm: results["runs"][f"{arm}/0"]["final"]["test_loss"] for arm in ABLATION_ARMS}
    for arm in ("baseline", "fixed_step", "no_projector", "per_entry"):
        assert acc[arm] != acc["stiefel"], arm  # each switch changes the run
    family = protocol.family("ablation_cifar10")
    rows = ablation_findings.family_rows(results, "test_acc", family)
    assert [r["variant"] for r in rows] == ["baseline", "fixed_step", "no_projector", "per_entry", "no_trust_region"]
    assert all(r["n"] == 2 for r in rows)
    assert [r["removes"] for r in rows][1:] == list(COMPONENTS)
    with pytest.raises(ValueError, match="unknown arm"):
        ablation.run_cifar10(config, "frozen", 0, "cpu", progress=False)


def _file(config, runs):
    return {"config": config, "runs": runs}


def _run(acc, fingerprint="f", order=1):
    return {"final": {"test_acc": acc, "init_fingerprint": fingerprint, "order_checksum": order}}


def test_merging_takes_missing_arms_only_from_a_paired_reference():
    config = {"lr": 1e-3, "seeds": [0, 1]}
    variants = {f"{arm}/{s}": _run(0.5) for arm in ("no_projector", "per_entry", "no_trust_region") for s in (0, 1)}
    reference = _file(
        {**config, "seeds": list(range(12))},
        {f"{arm}/{s}": _run(0.6) for arm in ("baseline", "stiefel", "fixed_step", "frozen") for s in (0, 1)},
    )
    merged = ablation_findings.merged_results(_file(config, variants), reference)
    assert set(merged["runs"]) == {f"{arm}/{s}" for arm in ABLATION_ARMS for s in (0, 1)}  # no frozen
    with pytest.raises(ValueError, match="different configurations"):
        ablation_findings.merged_results(_file({**config, "lr": 3e-3}, variants), reference)
    reference["runs"]["stiefel/1"] = _run(0.6, fingerprint="other")
    with pytest.raises(ValueError, match="start 1: the merged runs began from different weights"):
        ablation_findings.merged_results(_file(config, variants), reference)


def test_shares_apportion_only_a_significant_gain():
    base = np.array([50.0, 51.0, 49.0, 50.5])
    full = base + np.array([4.0, 4.2, 3.8, 4.1])
    fixed = base + np.array([0.1, 0.0, -0.1, 0.2])  # without the scale-free step, almost no gain
    rows = [
        {"arm": "baseline", "removes": "whole", "full_minus_arm": paired_comparison(full, base)},
        {"arm": "fixed_step", "removes": "scale-free step", "full_minus_arm": paired_comparison(full, fixed)},
    ]
    share = ablation_findings.shares(rows)
    assert share["scale-free step"] == pytest.approx((full - fixed).mean() / (full - base).mean())
    assert 0.9 < share["scale-free step"] < 1.0
    rows[0]["full_minus_arm"] = paired_comparison(base + np.array([0.3, -0.2, 0.1, -0.3]), base)
    assert ablation_findings.shares(rows) is None


def test_grokking_variants_keep_their_frames_on_the_manifold():
    config = dataclasses.replace(
        get_config("grokking_ablation", "ci"), p=7, d_model=16, n_heads=2, d_mlp=32, epochs=30, log_every=10
    )
    finals = {}
    for arm in ABLATION_ARMS:
        out = ablation.run_grokking(config, arm, 0, torch.device("cpu"), progress=False)
        finals[arm] = out["final"]["val_loss"]
        assert {"val_acc", "train_acc"} <= set(out["final"])
    assert len(set(finals.values())) >= 4  # the runs really differ
    full, ci = get_config("grokking_ablation", "full"), get_config("grokking_ablation", "ci")
    assert full.p == grokking.PROFILES["ci"].p and len(full.seeds) >= 5 and ci.epochs < full.epochs
    model_arms = [a for a in ABLATION_ARMS if a != "baseline"]
    for arm in model_arms:  # a few steps of every rule stay orthonormal
        torch.manual_seed(0)
        from stiefel_book.models import ModularTransformer
        from stiefel_core.combined import configure_optimizer

        model = ModularTransformer(8, 7, 16, 2, 32)
        opt = configure_optimizer(model, lr=1e-2, weight_decay=1.0, **{"trust_radius": 0.5, **VARIANTS[arm]})
        tokens = torch.randint(0, 7, (32, 3))
        for _ in range(5):
            model(tokens).square().mean().backward()
            opt.step()
            opt.zero_grad()
        assert orthonormality_error(model.attn.W_Q.detach().double()).max() < 1e-5, arm


def test_no_verdict_from_two_starts_even_when_their_differences_agree():
    """Two equal differences give a zero-width interval; the family must not call that significant."""
    family = protocol.family("ablation_cifar10")

    def results(n):  # the full rule 0.2 pp ahead of every other arm in every start: a zero-width interval
        runs = {
            f"{arm}/{s}": {"final": {"test_acc": 0.5 + 0.01 * s + (0.002 if arm == "stiefel" else 0.0)}}
            for arm in ABLATION_ARMS
            for s in range(n)
        }
        return {"runs": runs, "config": {}}

    two = ablation_findings.family_rows(results(2), "test_acc", family)
    assert {r["verdict"] for r in two} == {"inconclusive"} and all(r["n"] == 2 for r in two)
    three = ablation_findings.family_rows(results(3), "test_acc", family)
    assert {r["verdict"] for r in three} == {"higher"}
