"""The training loop's resume, the results files, and the command line."""

import dataclasses
import re

import pytest
import torch

import stiefel_book.experiments as experiments
from stiefel_book import results_files
from stiefel_book.__main__ import main
from stiefel_book.experiments import get_config, run_experiment
from stiefel_book.tasks import grokking
from stiefel_book.tasks.metrics import principal_angles
from stiefel_book.train import fit
from stiefel_core.manifold import random_frame

TINY = dict(
    p=7, train_fraction=0.5, d_model=16, n_heads=2, d_mlp=32, epochs=30, log_every=10, checkpoint_every=10, seeds=(0, 1)
)


def test_the_two_arms_start_from_the_same_weights():
    config = get_config("grokking", "ci", **{**TINY, "epochs": 1, "log_every": 1})
    a = grokking.run(config, "baseline", 3, torch.device("cpu"), progress=False)["history"][0]
    b = grokking.run(config, "stiefel", 3, torch.device("cpu"), progress=False)["history"][0]
    assert a["norm/embed.weight"] == b["norm/embed.weight"]


def test_results_are_written_per_run_and_a_rerun_skips_finished_runs(isolated, monkeypatch):
    config = get_config("grokking", "ci", **TINY)
    results = run_experiment("grokking", "ci", config=config, progress=False)
    assert sorted(results["runs"]) == ["baseline/0", "baseline/1", "stiefel/0", "stiefel/1"]
    run = results["runs"]["stiefel/0"]
    assert [r["epoch"] for r in run["history"]] == [10, 20, 30]
    assert {"git_commit", "torch", "device", "date", "wall_seconds"} <= set(run["provenance"])
    assert 0 < run["history"][-1]["angle_max/W_Q"] <= 90 and run["history"][-1]["step/W_K"] > 0  # the frames moved

    calls = []
    monkeypatch.setitem(
        experiments.EXPERIMENTS,
        "grokking",
        dataclasses.replace(experiments.EXPERIMENTS["grokking"], run=lambda *a: calls.append(a)),
    )
    run_experiment("grokking", "ci", config=config, progress=False)
    assert calls == []
    with pytest.raises(ValueError, match="another configuration"):
        run_experiment("grokking", "ci", config=dataclasses.replace(config, lr=0.5), progress=False)


def test_provenance_names_the_imported_code_and_the_resume_point(isolated, monkeypatch, interrupt):
    """A sweep outlives commits: its runs record the commit the process had when it started, not
    HEAD at the time; a resumed run records the epoch it resumed from (its wall time is that segment's)."""
    from stiefel_book import results as results_module

    imported = results_module.code_commit()
    monkeypatch.setattr(results_module, "git_commit", lambda: "a-later-commit")
    config = get_config("grokking", "ci", **{**TINY, "seeds": (0,)})
    checkpoint = isolated / "checkpoints" / "grokking-ci" / "stiefel-0.pt"
    with interrupt(grokking, epoch=15):
        run_experiment("grokking", "ci", config=config, arms=["stiefel"], progress=False)
    assert checkpoint.exists()
    trained_before = torch.load(checkpoint, weights_only=True)["elapsed"]
    assert trained_before > 0
    run = run_experiment("grokking", "ci", config=config, arms=["stiefel"], progress=False)["runs"]["stiefel/0"]
    assert run["provenance"]["git_commit"] == imported != "a-later-commit"
    assert run["provenance"]["resumed_from_epoch"] == 10
    assert run["provenance"]["wall_seconds"] >= round(trained_before, 1)  # both segments, not only the last


def test_a_copy_without_git_reports_the_commit_its_caller_states(tmp_path, monkeypatch):
    """A lent GPU machine runs a copy of the checkout without ``.git``: provenance then says
    which commit the caller stated, marked as stated, or ``unknown``."""
    from stiefel_book import results as results_module

    monkeypatch.setattr(results_module, "checkout_root", lambda: tmp_path)  # no repository here
    monkeypatch.delenv("STIEFEL_GIT_COMMIT", raising=False)
    assert results_module.git_commit() == "unknown"
    monkeypatch.setenv("STIEFEL_GIT_COMMIT", "0123abc")
    assert results_module.git_commit() == "0123abc (stated: no git here)"


def test_a_profile_may_ask_for_more_seeds_without_mixing_configurations(isolated):
    config = get_config("grokking", "ci", **{**TINY, "seeds": (0,)})
    run_experiment("grokking", "ci", config=config, arms=["stiefel"], progress=False)
    grown = run_experiment(
        "grokking", "ci", config=dataclasses.replace(config, seeds=(0, 1)), arms=["stiefel"], progress=False
    )
    assert sorted(grown["runs"]) == ["stiefel/0", "stiefel/1"] and grown["config"]["seeds"] == [0, 1]
    with pytest.raises(ValueError, match="another configuration"):
        run_experiment("grokking", "ci", config=dataclasses.replace(config, seeds=(0, 1, 2), epochs=40), progress=False)


def test_a_per_arm_setting_may_change_only_for_an_arm_with_no_runs_in_the_file():
    """The engine's and the merge's rule (results_reading.shared_config): a per-arm lr of an arm with
    no run in the file describes no run there, so a new choice for it does not mix configurations."""
    from stiefel_book.results_reading import shared_config

    held = {"config": {"lr": 1e-3, "seeds": [50], "qk_lrs": [["baseline", 1e-3], ["manifold_muon", 3e-3]]},
            "runs": {"baseline/50": {}, "baseline@qklr=0.01/51": {}}}
    moved = {"lr": 1e-3, "seeds": [50, 51], "qk_lrs": [["baseline", 1e-3], ["manifold_muon", 1e-2]]}
    assert shared_config(held["config"], held) == shared_config(moved, held)
    held["runs"]["manifold_muon/50"] = {}  # now a run was made at 3e-3: the new choice would mix
    assert shared_config(held["config"], held) != shared_config(moved, held)
    assert shared_config({**moved, "lr": 3e-3}, None) != shared_config(moved, None)  # the rest still counts


def test_unknown_names_are_refused_clearly(isolated, monkeypatch):
    with pytest.raises(ValueError, match="unknown experiment"):
        run_experiment("nope", "ci")
    with pytest.raises(ValueError, match="unknown arm"):
        run_experiment("grokking", "ci", arms=["sgd"])
    monkeypatch.setenv("STIEFEL_PROFILE", "huge")
    with pytest.raises(ValueError, match="STIEFEL_PROFILE"):
        experiments.default_profile()


def test_the_command_line_runs_a_shard(isolated, monkeypatch, capsys):
    monkeypatch.setitem(experiments.grokking.PROFILES, "ci", get_config("grokking", "ci", **TINY))
    assert main(["run", "grokking", "--profile", "ci", "--arms", "stiefel", "--seeds", "1", "--no-progress"]) == 0
    data = results_files.read(isolated / "results" / "grokking-ci.json.gz")
    assert list(data["runs"]) == ["stiefel/1"]
    capsys.readouterr()
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    listed = dict(re.findall(r"(grokking-\w+)\.json\.gz \(([^)]*)\)", out))
    assert listed["grokking-ci"] == "1 run" and listed["grokking-full"] == "not run"
    sweep = next(line for line in out.splitlines() if line.startswith("grokking_qk_lr"))
    assert "grid arms" in sweep and "no_decay_qk" in sweep and "@qklr=" not in sweep  # not 200 names


def test_principal_angles_of_a_subspace_with_itself_and_its_complement():
    W = random_frame(6, 2, dtype=torch.float64)
    assert principal_angles(W, W @ torch.tensor([[0.0, 2.0], [3.0, 0.0]], dtype=torch.float64)).abs().max() < 1e-6
    Q = torch.linalg.qr(torch.cat([W, torch.randn(6, 2, dtype=torch.float64)], 1))[0]
    assert torch.allclose(principal_angles(W, Q[:, 2:]), torch.full((2,), torch.pi / 2, dtype=torch.float64), atol=1e-6)


def test_fit_rejects_a_bad_schedule():
    with pytest.raises(ValueError):
        fit(torch.nn.Linear(1, 1), None, None, None, epochs=3, log_every=0)


def test_under_torchrun_each_process_takes_its_share_of_the_seeds(isolated, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    config = get_config("grokking", "ci", **{**TINY, "epochs": 10, "seeds": (0, 1, 2)})
    results = run_experiment("grokking", "ci", arms=["stiefel"], config=config, progress=False)
    assert sorted(results["runs"]) == ["stiefel/1"]


def test_folders_come_from_the_caller_and_an_installed_library_keeps_out_of_its_own(tmp_path, monkeypatch):
    from stiefel_book import checkout, results

    monkeypatch.delenv("STIEFEL_RESULTS", raising=False)
    monkeypatch.delenv("STIEFEL_CHECKPOINTS", raising=False)
    root = results.checkout_root()
    assert root is not None and results.results_dir() == root / "book" / "results"  # a checkout: its own folders
    assert results.checkpoints_dir() == root / "checkpoints"
    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path / "r"))
    monkeypatch.setenv("STIEFEL_CHECKPOINTS", str(tmp_path / "c"))
    assert results.results_dir() == tmp_path / "r" and results.checkpoints_dir() == tmp_path / "c"
    assert results.results_dir(tmp_path / "x") == tmp_path / "x"  # an argument first
    monkeypatch.delenv("STIEFEL_RESULTS")
    for module in (checkout, results):  # as under a wheel install
        monkeypatch.setattr(module, "checkout_root", lambda: None)
    with pytest.raises(results.InstallFolderError, match="STIEFEL_RESULTS"):
        results.results_dir()
    with pytest.raises(results.InstallFolderError, match="inside the installed library"):
        results.write_results({}, results.PACKAGE_DIR.parent / "book" / "results" / "x-ci.json")
    with pytest.raises(results.InstallFolderError):
        run_experiment("grokking", "ci", directory=results.PACKAGE_DIR / "results", progress=False)
    results.write_results({"runs": {}}, tmp_path / "r" / "x-ci.json")  # anywhere else is fine
    assert results.load_results("x", "ci", tmp_path / "r") == {"runs": {}}
