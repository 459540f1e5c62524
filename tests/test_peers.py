"""The Stiefel rule's relatives: each arm holds W_Q, W_K as its library wants them, starts from
the same weights as every other arm, is trained by what it says; the lr sweep's choice."""

import dataclasses

import geoopt
import pytest
import torch

from stiefel_book.arms.relatives import FOREIGN_ARMS, prepare_projections, projection_names, relative_optimizer
from stiefel_book.experiments import get_config, peers, run_experiment
from stiefel_book.findings.peers import chosen_lr, sweep_rows
from stiefel_book.models import ModularTransformer
from stiefel_book.tasks import grokking
from stiefel_core.manifold import orthonormality_error

from tiny import TINY as TINY_CIFAR_TASK

TINY = dict(
    p=7, train_fraction=0.5, d_model=16, n_heads=2, d_mlp=32, epochs=30, log_every=10, seeds=(0,), cpu_threads=1
)
CPU = torch.device("cpu")


def effective(model):
    """Every weight the model computes with, W_Q and W_K as the attention uses them."""
    out = {
        n: p.detach()
        for n, p in model.named_parameters()
        if "parametrizations" not in n and n not in ("attn.W_Q", "attn.W_K")
    }
    out.update({f"attn.{w}": getattr(model.attn, w).detach() for w in ("W_Q", "W_K")})
    return out


def test_every_peer_arm_starts_from_the_same_weights():
    config = grokking.GrokkingConfig(**TINY)
    reference = effective(grokking.build_model(config, "baseline", 3, 9))
    for arm in peers.PEER_ARMS:
        weights = effective(grokking.build_model(config, arm, 3, 9))
        assert weights.keys() == reference.keys(), arm
        for name, W in weights.items():
            torch.testing.assert_close(
                W, reference[name], rtol=0, atol=1e-6, msg=f"{arm}: {name}"
            )  # orthogonal_param: float32 rounding
    other = effective(grokking.build_model(config, "muon", 4, 9))
    assert (other["attn.W_Q"] - reference["attn.W_Q"]).abs().max() > 0.1  # another seed, another start
    assert orthonormality_error(reference["attn.W_Q"]).max() < 1e-5  # orthonormal frames at init, as the Stiefel arm


def test_each_relative_is_trained_by_what_it_says():
    for arm in FOREIGN_ARMS:
        model = ModularTransformer(9, 7, 16, 2, 32, stiefel=False)
        prepare_projections(model.attn, arm)
        opt = relative_optimizer(model, arm, lr=1e-3, qk_lr=2e-2, weight_decay=1.0, betas=(0.9, 0.98))
        adamw, inner = opt.optimizers
        qk = set(projection_names(model))
        assert {id(p) for g in inner.param_groups for p in g["params"]} == {
            id(p) for n, p in model.named_parameters() if n in qk
        }
        assert all(g["weight_decay"] == 1.0 and g["lr"] == 1e-3 for g in adamw.param_groups)
        assert all(g["lr"] == 2e-2 for g in inner.param_groups)
        if arm.startswith("muon"):
            assert isinstance(inner, torch.optim.Muon) and len(qk) == 2 * 2  # one 2-D matrix per head
            assert all(p.ndim == 2 for g in inner.param_groups for p in g["params"])
            assert inner.param_groups[0]["weight_decay"] == (1.0 if arm == "muon" else 0.0)
        elif arm == "geoopt_radam":
            assert isinstance(inner, geoopt.optim.RiemannianAdam)
            assert all(isinstance(p.manifold, geoopt.Stiefel) for g in inner.param_groups for p in g["params"])
        else:
            assert isinstance(inner, torch.optim.AdamW) and inner.param_groups[0]["weight_decay"] == 0.0
    with pytest.raises(ValueError, match="stiefel=False"):
        prepare_projections(ModularTransformer(9, 7, 16, 2, 32).attn, "muon")
    with pytest.raises(ValueError, match="not a relative"):
        prepare_projections(ModularTransformer(9, 7, 16, 2, 32, stiefel=False).attn, "stiefel")


def test_constrained_relatives_stay_orthonormal_and_muon_does_not():
    config = grokking.GrokkingConfig(**TINY)
    final = {arm: grokking.run(config, arm, 0, CPU, progress=False, qk_lr=1e-2)["final"] for arm in FOREIGN_ARMS}
    for arm in ("geoopt_radam", "orthogonal_param"):
        assert final[arm]["ortho/W_Q"] < 1e-4 and final[arm]["ortho/W_K"] < 1e-4, arm
    assert final["muon"]["ortho/W_Q"] > 1e-2  # it orthogonalises the update, not the weight
    assert final["muon"]["norm/attn.W_Q"] < final["muon_no_decay"]["norm/attn.W_Q"]  # decay acts on it
    assert len({f["val_loss"] for f in final.values()}) == len(FOREIGN_ARMS)  # four different runs
    assert all(final[arm]["angle_mean/W_Q"] > 0 for arm in FOREIGN_ARMS)  # every arm moved its frames


def _sweep(scores: dict[tuple[float, int], float]) -> dict:
    runs = {
        f"muon@flr={lr:g}/{seed}": {"history": [{"val_acc": v}, {"val_acc": v}]} for (lr, seed), v in scores.items()
    }
    return {"config": {"arms": ["muon", "stiefel"], "frame_lrs": [1e-3, 1e-2], "seeds": [100, 101]}, "runs": runs}


def test_chosen_lr_is_the_best_mean_score_and_refuses_an_incomplete_sweep():
    sweep = _sweep({(1e-3, 100): 0.5, (1e-3, 101): 0.9, (1e-2, 100): 0.8, (1e-2, 101): 0.7})
    assert chosen_lr(sweep, "muon") == 1e-2  # 0.75 beats 0.70
    tie = _sweep({(1e-3, 100): 0.5, (1e-3, 101): 0.5, (1e-2, 100): 0.5, (1e-2, 101): 0.5})
    assert chosen_lr(tie, "muon") == 1e-3  # ties go to the smaller lr
    with pytest.raises(ValueError, match="incomplete"):
        chosen_lr(_sweep({(1e-3, 100): 0.5, (1e-2, 100): 0.5, (1e-2, 101): 0.5}), "muon")
    with pytest.raises(ValueError, match="no arm"):
        chosen_lr(sweep, "baseline")
    rows = sweep_rows(sweep)
    assert rows[0]["chosen"] == 1e-2 and rows[0]["edge"] and rows[1]["chosen"] is None


def test_grokking_peers_runs_each_arm_at_the_lr_its_sweep_chose(tmp_path, monkeypatch):
    monkeypatch.setenv("STIEFEL_CHECKPOINTS", str(tmp_path / "ck"))
    task = grokking.GrokkingConfig(**TINY)
    sweep_config = dataclasses.replace(
        get_config("grokking_peers_lr", "ci"), task=task, arms=("stiefel", "muon"), qk_lrs=(1e-3, 1e-2)
    )
    sweep = run_experiment("grokking_peers_lr", "ci", config=sweep_config, directory=tmp_path, progress=False)
    assert len(sweep["runs"]) == 4
    from stiefel_book import results as results_module

    monkeypatch.setattr(
        peers, "load_results", lambda name, profile: results_module.load_results(name, profile, tmp_path)
    )
    config = dataclasses.replace(get_config("grokking_peers", "ci"), task=task, sweep_profile="ci")
    out = run_experiment(
        "grokking_peers", "ci", config=config, arms=["muon", "baseline"], directory=tmp_path, progress=False
    )
    assert out["runs"]["muon/0"]["frame_lr"] == chosen_lr(sweep, "muon")
    assert "frame_lr" not in out["runs"]["baseline/0"]
    with pytest.raises(ValueError, match="no arm"):  # an arm the sweep did not cover gets no lr
        run_experiment("grokking_peers", "ci", config=config, arms=["geoopt_radam"], directory=tmp_path, progress=False)


def test_cifar10_peers_take_their_grokking_lr_multiple(isolated):
    from stiefel_book.results import write_results
    from stiefel_book.tasks import cifar10

    arms = ["stiefel", "muon", "geoopt_radam", "orthogonal_param"]
    runs = {
        f"{arm}@flr={lr:g}/{s}": {"history": [{"val_acc": 0.5 + (lr == 1e-2) * 0.1}]}
        for arm in arms
        for lr in (3e-3, 1e-2)
        for s in (100,)
    }
    sweep = {"config": {"arms": arms, "frame_lrs": [3e-3, 1e-2], "seeds": [100], "task": {"lr": 3e-3}}, "runs": runs}
    write_results(sweep, isolated / "results" / "grokking_peers_lr-full.json")
    shrunk = {k: v for k, v in TINY_CIFAR_TASK.items() if k != "seeds"}  # the task's own: one start per run
    task = dataclasses.replace(get_config("cifar10_peers", "ci").task, **shrunk)
    config = dataclasses.replace(get_config("cifar10_peers", "ci"), task=task)
    out = run_experiment("cifar10_peers", "ci", config=config, arms=["baseline", *arms[1:]], progress=False)
    for arm in arms[1:]:
        assert out["runs"][f"{arm}/0"]["frame_lr"] == pytest.approx(task.lr * 1e-2 / 3e-3)
    assert not any(
        k.startswith("step/") for k in out["runs"]["muon/0"]["final"]
    )  # not measurable through a parametrization
    assert any(k.startswith("step/") for k in out["runs"]["geoopt_radam/0"]["final"])
    finals = {key.split("/")[0]: run["final"] for key, run in out["runs"].items()}
    assert len({f["order_checksum"] for f in finals.values()}) == 1  # one start, one data order
    assert (
        finals["geoopt_radam"]["init_fingerprint"] == finals["baseline"]["init_fingerprint"]
    )  # the same weights, the same names
    losses = {key: run["final"]["test_loss"] for key, run in out["runs"].items()}
    assert len(set(losses.values())) == len(losses)  # every arm trains differently
    model = cifar10.build_model(task, "orthogonal_param", 0)
    reference = cifar10.build_model(task, "baseline", 0)
    torch.testing.assert_close(model.blocks[1].attn.W_K, reference.blocks[1].attn.W_K, rtol=0, atol=1e-6)


def _history(acc_end: float, reach_at: int | None, epochs=(0, 500, 1000, 1500)):
    return [
        {
            "epoch": e,
            "val_acc": acc_end if reach_at is not None and e >= reach_at else 0.5,
            "angle_mean/W_Q": e / 100,
            "qk_change_mean/attn": e / 1000,
            "norm/attn.W_Q": 8.0,
            "ortho/W_Q": 1e-6,
        }
        for e in epochs
    ]


def test_peer_findings_read_how_far_each_arm_moves_its_frames():
    from stiefel_book.findings import peers as findings

    # the Stiefel rule reaches 100 % at epoch 500; Muon 95 % at 1,000; per_entry never (censored); the rest tie with the
    # rule
    plan = {"stiefel": (1.0, 500), "baseline": (0.9, 1000), "muon": (0.95, 1000), "per_entry": (0.5, None)}
    runs = {}
    for arm in peers.PEER_ARMS:
        for s in range(4):
            end, at = plan.get(arm, (1.0, 500))
            runs[f"{arm}/{s}"] = {"history": _history(end - 0.01 * s * (arm == "muon"), at)}
    results = {"config": {"task": dataclasses.asdict(get_config("grokking_peers", "full").task)}, "runs": runs}
    movement = {r["arm"]: r for r in findings.movement_rows(results)}
    assert movement["stiefel"]["angle"] == 15.0 and movement["muon"]["ortho"] == 1e-6 and movement["muon"]["n"] == 4


def test_the_sweep_gives_every_arm_four_lrs_and_geoopt_its_sum_of_squares_scale():
    config = get_config("grokking_peers_lr", "full")
    names = peers.sweep_arm_names(config)
    assert len(names) == len(config.arms) * len(config.qk_lrs) and len(set(names)) == len(names)
    d_head = config.task.d_model // config.task.n_heads
    assert dict(config.lr_scales)["geoopt_radam"] == (config.task.d_model * d_head) ** 0.5
    assert "geoopt_radam@flr=0.032" in names and "stiefel@flr=0.001" in names
    assert set(config.seeds).isdisjoint(
        get_config("grokking_peers", "full").seeds
    )  # lrs not chosen on the judged seeds
    with pytest.raises(ValueError, match="not on this profile's grid"):
        peers.run_sweep(config, "geoopt_radam@flr=0.001", 100, CPU, progress=False)


def test_the_claim_reads_the_relatives_at_cifar10_rates_once_each_has_a_test():
    from stiefel_book.claim_measures import peers as family_claim
    from stiefel_book.findings.peers import PEERS

    def row(arm: str, n: int, p: float, verdict: str = "inconclusive") -> dict:
        return {
            "arm": arm,
            "reference": "stiefel",
            "n": n,
            "mean_pp": 0.5,
            "ci_pp": (-0.5, 1.5),
            "p": p,
            "verdict": verdict,
        }

    old = [row(arm, 3, 0.2) for arm in PEERS]
    early = [row(arm, 2, float("nan")) for arm in PEERS]  # two starts: too few for a test
    assert "grokking lr" in family_claim([], old, early) and "cifar10_fair" not in family_claim([], old, early)
    tuned = [row(arm, 8 if arm == "muon" else 10, 0.01, "higher") for arm in PEERS]
    claim = family_claim([], old, tuned, judged=12)
    assert "CIFAR-10-tuned" in claim and "peers_cifar10" not in claim
    assert "8 of 12" in claim and "interim" in claim and "higher 5, lower 0" in claim
    assert "8 of 12" not in family_claim([], old, [{**r, "n": 12} for r in tuned], judged=12)
