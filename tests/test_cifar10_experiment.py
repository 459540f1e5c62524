"""The CIFAR-10 patches experiment on a tiny synthetic JPEG copy: pairing of the arms, frozen
frames, per-run results files that resume, the sweep's equal step budgets, and the paired
statistics read back from the results."""

import numpy as np
import pytest
import torch

from stiefel_book import claim_measures, results_files
from stiefel_book.experiments import cifar10 as cifar10_experiment
from stiefel_book.experiments import get_config, run_experiment
from stiefel_book.findings import cifar10 as cifar10_findings
from stiefel_book.stats import paired_comparison
from stiefel_book.tasks import cifar10

from tiny import tiny


def test_profiles_say_what_the_protocol_needs():
    full, ci = get_config("cifar10", "full"), get_config("cifar10", "ci")
    assert len(full.seeds) == 12 and full.train_size == 50_000 and full.test_size == 10_000
    assert len(ci.seeds) >= 2 and ci.train_size <= 5_000
    assert cifar10_experiment.ARMS == ("baseline", "stiefel", "fixed_step", "frozen")
    sweep = get_config("cifar10_sweep", "full")
    sizes = [round(sweep.train_size * f) for f in cifar10_experiment.SWEEP_FRACTIONS]
    assert len(sizes) >= 4 and max(sizes) == 50_000
    steps = {
        round(sweep.epochs / f) * (n // sweep.batch_size) for f, n in zip(cifar10_experiment.SWEEP_FRACTIONS, sizes)
    }
    assert steps == {780}  # every size of the sweep takes the same number of steps


def test_arms_share_initial_weights_and_data_order_within_a_start(isolated):
    config = tiny(epochs=1)
    models = {arm: cifar10.build_model(config, arm, 3) for arm in cifar10_experiment.ARMS}
    reference = models["baseline"].state_dict()
    for arm, model in models.items():
        assert all(torch.equal(reference[k], v) for k, v in model.state_dict().items()), arm
    assert not torch.equal(
        cifar10.build_model(config, "stiefel", 4).state_dict()["head.weight"], reference["head.weight"]
    )

    finals = {
        arm: cifar10_experiment.run(config, arm, 3, "cpu", progress=False)["final"] for arm in cifar10_experiment.ARMS
    }
    assert len({f["init_fingerprint"] for f in finals.values()}) == 1
    assert len({f["order_checksum"] for f in finals.values()}) == 1
    other = cifar10_experiment.run(config, "baseline", 4, "cpu", progress=False)["final"]
    assert other["init_fingerprint"] != finals["baseline"]["init_fingerprint"]
    assert other["order_checksum"] != finals["baseline"]["order_checksum"]


def test_the_data_order_is_drawn_from_the_start_alone(isolated, monkeypatch):
    """Record the batches each arm sees: identical across arms, different across starts."""
    seen = {}
    real = cifar10.PatchTransformer.forward

    def recording(self, images):
        if self.training:
            seen.setdefault(self._tag, []).append(images.sum((1, 2, 3)).clone())
        return real(self, images)

    monkeypatch.setattr(cifar10.PatchTransformer, "forward", recording)
    real_build = cifar10.build_model
    config = tiny(epochs=2)
    for arm, seed in (("baseline", 0), ("stiefel", 0), ("frozen", 0), ("stiefel", 1)):

        def build(cfg, a, s, tag=(arm, seed)):
            model = real_build(cfg, a, s)
            model._tag = tag
            return model

        monkeypatch.setattr(cifar10, "build_model", build)
        cifar10_experiment.run(config, arm, seed, "cpu", progress=False)
    batches = {tag: torch.stack(b) for tag, b in seen.items()}
    assert torch.equal(batches[("baseline", 0)], batches[("stiefel", 0)])
    assert torch.equal(batches[("baseline", 0)], batches[("frozen", 0)])
    assert not torch.equal(batches[("stiefel", 0)], batches[("stiefel", 1)])


def test_frozen_frames_never_move_and_the_others_do(isolated):
    config = tiny()
    histories = {
        arm: cifar10_experiment.run(config, arm, 0, "cpu", progress=False)["history"] for arm in cifar10_experiment.ARMS
    }
    keys = [k for k in histories["frozen"][0] if k.startswith(("step/", "dist/", "angle_mean/"))]
    assert len(keys) == 3 * 2 * config.depth  # W_Q and W_K of every block
    assert all(record[k] == 0.0 for record in histories["frozen"] for k in keys if not k.startswith("angle"))
    assert all(record[k] < 1e-4 for record in histories["frozen"] for k in keys)  # arccos(1 - eps) is not 0
    for arm in ("baseline", "stiefel", "fixed_step"):
        assert all(histories[arm][-1][k] > 0 for k in keys if k.startswith("step/")), arm
    for arm in ("stiefel", "fixed_step", "frozen"):  # frames stay frames
        assert max(histories[arm][-1][k] for k in histories[arm][-1] if k.startswith("orth_error/")) < 1e-5
    # the fixed step is degree one in the (small) gradient: it moves much less than the scale-free one
    assert histories["fixed_step"][-1]["step/blocks.0.W_Q"] < 0.1 * histories["stiefel"][-1]["step/blocks.0.W_Q"]


def test_results_are_written_per_run_and_an_interrupted_run_resumes(isolated, monkeypatch, interrupt):
    config = tiny(epochs=3)
    whole = cifar10_experiment.run(config, "stiefel", 1, "cpu", progress=False)
    real_fit = cifar10.fit

    with interrupt(cifar10, epoch=1):  # killed after the first checkpoint
        run_experiment("cifar10", "ci", arms=["baseline", "stiefel"], seeds=[0, 1], config=config, progress=False)
    path = isolated / "results" / "cifar10-ci.json.gz"
    assert not path.exists()  # the first run was interrupted before it finished
    checkpoint = isolated / "checkpoints" / "cifar10-ci" / "baseline-0.pt"
    assert checkpoint.exists()

    calls = []

    def counting_fit(*args, **kwargs):
        calls.append(kwargs["description"])
        if len(calls) == 3:
            raise KeyboardInterrupt  # stop inside the third run: two are on file
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(cifar10, "fit", counting_fit)
    with pytest.raises(KeyboardInterrupt):
        run_experiment("cifar10", "ci", arms=["baseline", "stiefel"], seeds=[0, 1], config=config, progress=False)
    saved = results_files.read(path)
    assert sorted(saved["runs"]) == ["baseline/0", "stiefel/0"]

    monkeypatch.setattr(cifar10, "fit", real_fit)
    results = run_experiment("cifar10", "ci", arms=["baseline", "stiefel"], seeds=[0, 1], config=config, progress=False)
    assert sorted(results["runs"]) == ["baseline/0", "baseline/1", "stiefel/0", "stiefel/1"]
    assert results["runs"]["stiefel/1"]["history"] == whole["history"]  # the rerun equals an uninterrupted run
    assert (
        results["runs"]["stiefel/0"]["provenance"]["wall_seconds"]
        == saved["runs"]["stiefel/0"]["provenance"]["wall_seconds"]
    )
    data = results["runs"]["baseline/0"]["data"]
    assert data["source_kind"] == "jpeg" and data["source_hash"].startswith("listing-sha256:")
    assert [r["epoch"] for r in results["runs"]["baseline/0"]["history"]] == [1, 2, 3]
    assert not any((isolated / "checkpoints").rglob("*.pt"))


def test_the_sweep_gives_every_size_the_same_steps(isolated):
    config = tiny("cifar10_sweep")
    results = run_experiment("cifar10_sweep", "ci", seeds=[0, 1], config=config, progress=False)
    assert sorted(results["runs"]) == sorted(f"{arm}/{s}" for arm in cifar10_experiment.SWEEP_ARM_NAMES for s in (0, 1))
    finals = {key: run["final"] for key, run in results["runs"].items()}
    assert {f["steps"] for f in finals.values()} == {20}
    assert [finals[f"stiefel@{p}%/0"]["train_size"] for p in (10, 20, 40, 100)] == [16, 32, 64, 160]
    assert finals["stiefel@10%/0"]["epochs"] == 20 and finals["stiefel@100%/0"]["epochs"] == 2
    assert finals["stiefel@10%/0"]["init_fingerprint"] == finals["baseline@100%/0"]["init_fingerprint"]
    rows = cifar10_findings.sweep_gains(results)
    assert [r["train_size"] for r in rows] == [16, 32, 64, 160]
    assert all(r["starts"] == [0, 1] and r["comparison"].n == 2 for r in rows)
    with pytest.raises(ValueError, match="unknown arm"):
        cifar10_experiment.run_sweep(config, "stiefel@30%", 0, "cpu")


def test_paired_statistics_come_out_of_the_results(isolated):
    config = tiny(epochs=1)
    results = run_experiment("cifar10", "ci", seeds=[0, 1], config=config, progress=False)
    starts, a, b, comparison = cifar10_findings.paired_gain(results)
    assert starts == [0, 1]
    expected = paired_comparison(a, b)
    assert comparison == expected or (np.isnan(comparison.t_statistic) and np.isnan(expected.t_statistic))
    assert comparison.wins + comparison.ties + comparison.losses == 2
    ratios = cifar10_findings.movement_ratios(results, "fixed_step")
    assert sorted(ratios) == ["blocks.0.W_K", "blocks.0.W_Q", "blocks.1.W_K", "blocks.1.W_Q"]
    assert all(len(r) == 2 and np.all(r > 1) for r in ratios.values())


def test_paired_statistics_on_known_numbers():
    """Finished starts only; accuracies in points; wins, t and the interval from SciPy."""

    def run(acc, step):
        return {"final": {"test_acc": acc}, "history": [{"step/blocks.0.W_Q": step}, {"step/blocks.0.W_Q": step}]}

    results = {
        "config": {"train_size": 100},
        "runs": {
            "stiefel/0": run(0.60, 0.01),
            "baseline/0": run(0.50, 0.02),
            "stiefel/1": run(0.58, 0.01),
            "baseline/1": run(0.51, 0.04),
            "stiefel/2": run(0.70, 0.01),
            "baseline/2": run(0.49, 0.03),
            "stiefel/3": run(0.90, 0.01),  # its baseline has not finished: not paired
        },
    }
    starts, a, b, comparison = cifar10_findings.paired_gain(results)
    assert starts == [0, 1, 2]
    np.testing.assert_allclose(a - b, [10.0, 7.0, 21.0])
    assert comparison.wins == 3 and comparison.mean_difference == pytest.approx(38 / 3)
    assert comparison.ci_low < 38 / 3 < comparison.ci_high
    assert comparison.t_statistic == pytest.approx((38 / 3) / (np.std([10, 7, 21], ddof=1) / np.sqrt(3)))
    np.testing.assert_allclose(cifar10_findings.movement_ratios(results, "stiefel")["blocks.0.W_Q"], [2.0, 4.0, 3.0])
    assert cifar10_findings.finished_starts(None, ("stiefel",)) == []
    _, _, _, none = cifar10_findings.paired_gain({"runs": {"stiefel/0": run(0.6, 0.1), "baseline/0": run(0.5, 0.1)}})
    assert none is None  # one pair is not enough for a t test


def test_unknown_arms_are_refused(isolated):
    with pytest.raises(ValueError, match="unknown arm"):
        cifar10.build_model(tiny(), "adam", 0)
    with pytest.raises(ValueError, match="train_size"):
        cifar10.train(tiny(), "stiefel", 0, "cpu", train_size=10_000)


def _fake(acc: float, step: float) -> dict:
    return {"final": {"test_acc": acc}, "history": [{"step/blocks.0.W_Q": step}]}


def test_the_claims_lines_give_the_gain_by_size_and_the_movement_ratio():
    gains = [0.089, 0.090, 0.091]  # around the preprint's +8.98 pp
    main = {"config": {"train_size": 100}, "runs": {}}
    for s, g in enumerate(gains):
        main["runs"].update(
            {
                f"baseline/{s}": _fake(0.50, 0.03),
                f"stiefel/{s}": _fake(0.50 + g, 0.03),
                f"fixed_step/{s}": _fake(0.503 + 0.001 * s, 0.001),
                f"frozen/{s}": _fake(0.50, 0.0),
            }
        )
    sweep = {"config": {"train_size": 50_000}, "runs": {}}
    for s in range(3):
        for f, g in zip(cifar10_experiment.SWEEP_FRACTIONS, (0.01, 0.02, 0.03, 0.05 + 0.001 * s)):
            pct = round(100 * f)
            sweep["runs"].update(
                {f"baseline@{pct}%/{s}": _fake(0.4, 0.03), f"stiefel@{pct}%/{s}": _fake(0.4 + g, 0.03)}
            )
    main["runs"]["baseline/0"]["data"] = {"source_kind": "jpeg"}
    line = claim_measures.cifar10_gain(main, sweep)
    assert "over 3 paired starts" in line and "50,000 +5.10" in line and "jpeg" in line and "Σ lr·λ" in line
    assert claim_measures.cifar10_movement(main).startswith("fixed step moves 30-30x less")
