"""The character model at nanoGPT's shakespeare_char size (issue 49, item 5) and its device job: the
profile builds the model of the declared size; a step trains on the CPU at a tiny size; the judged
2x2 refuses to run before the sweep's choices are interior, then takes them; the job's plan sweeps by
the rule and then judges at the settled choices (no training: the dry run of
tests/test_device_check.py trains the sweep's first runs)."""

import dataclasses
import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from stiefel_book import protocol  # noqa: E402
from stiefel_book.arms.routing_arms import build  # noqa: E402
from stiefel_book.engine.study import SweepError  # noqa: E402
from stiefel_book.experiments import EXPERIMENTS, charlm_gpu, get_config  # noqa: E402
from stiefel_book.experiments.routing_judged import ARMS_2X2  # noqa: E402
from stiefel_book.nanogpt import GPT  # noqa: E402
from stiefel_book.results import results_path, write_results  # noqa: E402
from stiefel_book.tasks import charlm  # noqa: E402

import device_charlm  # noqa: E402
import device_job  # noqa: E402

CPU = torch.device("cpu")


def test_the_gpu_profile_builds_nanogpts_shakespeare_char_model():
    config = charlm_gpu.PROFILES["full"]
    model_config = config.model(65)  # shakespeare_char's 65 characters: nanoGPT prints 10.65M parameters
    assert (model_config.n_layer, model_config.n_head, model_config.n_embd, model_config.block_size) == (6, 6, 384, 256)
    assert model_config.dropout == 0.2 and (config.batch_size, config.lr, config.betas) == (64, 1e-3, (0.9, 0.99))
    assert config.weight_decay == 0.1 and config.steps == charlm_gpu.STEPS
    model = GPT(model_config)
    n = sum(p.numel() for p in model.parameters()) - model.transformer.wpe.weight.numel()  # nanoGPT's count
    assert n == 12 * 6 * 384**2 + 65 * 384 + (2 * 6 + 1) * 384 and round(n / 1e6, 2) == 10.65
    x = torch.randint(65, (2, 16))
    model.train()
    assert not torch.equal(model(x), model(x))  # dropout while training
    model.eval()
    assert torch.equal(model(x), model(x))


def test_a_training_step_of_the_gpu_profiles_code_runs_on_the_cpu_at_a_tiny_size():
    tiny = dataclasses.replace(charlm_gpu.PROFILES["ci"], steps=2, log_every=1, warmup_steps=1, seeds=(60,))
    outcome = charlm.run(tiny, "stiefel", 60, CPU, None, progress=False, qk_lr=1e-3)
    assert [r["epoch"] for r in outcome["history"]] == [1, 2] and outcome["qk_lr"] == 1e-3
    assert 0 < outcome["final"]["val_bpc"] < 8
    model = build(tiny.model(charlm.corpus().vocab_size), "stiefel", 60)
    assert any(isinstance(m, torch.nn.Dropout) and m.p == 0.2 for m in model.modules())


def sweep_file(scores: dict, profile: str = "ci") -> dict:
    """``charlm_gpu_qk_lr`` at ``profile``: ``scores`` {arm: {lr: bits per character}} on its selection seed."""
    config = charlm_gpu.SWEEP_PROFILES[profile]
    runs = {
        f"{arm}@qklr={lr:g}/{seed}": {"history": [{"epoch": config.task.steps, "val_bpc": bpc}]}
        for arm, rungs in scores.items()
        for lr, bpc in rungs.items()
        for seed in config.seeds
    }
    stored = json.loads(json.dumps(dataclasses.asdict(config)))
    return {"experiment": charlm_gpu.SWEEP, "profile": profile, "config": stored, "runs": runs}


SETTLED = {3e-4: 3.0, 1e-3: 2.5, 3e-3: 2.8}  # lower bits per character is better: 1e-3, interior
MANIFOLD = {3e-3: 3.0, 1e-2: 2.6, 3e-2: 2.9}  # manifold Muon's ladder, around its own 1e-2


def test_the_2x2_refuses_before_every_choice_is_interior_then_takes_them(tmp_path):
    judged = EXPERIMENTS[charlm_gpu.JUDGED]
    config = get_config(charlm_gpu.JUDGED, "ci")
    with pytest.raises(SweepError, match="sweep charlm_gpu_qk_lr --profile ci"):
        judged.resolve(config, tmp_path)
    scores = {arm: SETTLED for arm in ARMS_2X2} | {"manifold_muon": {3e-3: 3.0, 1e-2: 2.9, 3e-2: 2.6}}  # at the top
    write_results(sweep_file(scores), results_path(charlm_gpu.SWEEP, "ci", tmp_path))
    with pytest.raises(SweepError, match=r"\['manifold_muon'\]"):
        judged.resolve(config, tmp_path)
    write_results(sweep_file(scores | {"manifold_muon": MANIFOLD}), results_path(charlm_gpu.SWEEP, "ci", tmp_path))
    lrs = dict(judged.resolve(config, tmp_path).qk_lrs)
    assert lrs == {"baseline": 1e-3, "muon": 1e-3, "stiefel": 1e-3, "manifold_muon": 1e-2}


def test_the_sweep_starts_three_rungs_around_each_corners_center_and_grows_by_the_rule():
    study = charlm_gpu.ENTRIES[0].study(charlm_gpu.SWEEP_PROFILES["full"])
    assert study.arms == ARMS_2X2 and study.seeds == charlm_gpu.SELECTION_SEEDS
    assert study.start_rungs("stiefel") == (3e-4, 1e-3, 3e-3)
    assert study.start_rungs("manifold_muon") == (3e-3, 1e-2, 3e-2)
    grown = sweep_file({"baseline": {3e-4: 2.5, 1e-3: 2.6, 3e-3: 2.7}}, "full")  # best at the bottom: one rung under
    assert study.pending(grown, ("baseline",)) == ["baseline@qklr=0.0001"]


def test_the_family_declares_the_profiles_seeds_and_results():
    family = protocol.family("charlm_gpu_2x2")
    assert family.judged_seeds == charlm_gpu.JUDGED_SEEDS == charlm_gpu.PROFILES["full"].seeds
    assert family.selection_seeds == charlm_gpu.SELECTION_SEEDS
    assert family.results == ("charlm_gpu_2x2-full",)
    others = [f for name, f in protocol.load().families.items() if name != family.name]
    earlier = set().union(*(set(f.judged_seeds or ()) for f in others))
    assert not set(family.judged_seeds) & (earlier | set(range(100, 105)) | {200, 201, 202})
    assert "charlm_gpu_qk_lr" in protocol.load().sweeps


def test_the_job_sweeps_by_the_rule_then_judges_at_the_settled_choices(tmp_path):
    said = []
    plan = device_charlm.CharLMPlan(tmp_path, "full", dry=False, say=said.append)
    queue = plan()  # the first grid: four corners x three rungs x the selection seed
    assert len(queue) == 12 and {run.experiment for run in queue} == {charlm_gpu.SWEEP}
    assert plan.epochs_of(queue[0]) == charlm_gpu.STEPS and device_job.plan_of(charlm_gpu.JUDGED) is type(plan)
    scores = {arm: SETTLED for arm in ARMS_2X2 if arm != "manifold_muon"} | {"manifold_muon": MANIFOLD}
    write_results(sweep_file(scores, "full"), results_path(charlm_gpu.SWEEP, "full", tmp_path))
    queue = plan()
    assert [(run.experiment, run.arm, run.seed) for run in queue[:4]] == [
        (charlm_gpu.JUDGED, arm, charlm_gpu.JUDGED_SEEDS[0]) for arm in ARMS_2X2
    ]  # seed by seed
    assert len(queue) == 4 * len(charlm_gpu.JUDGED_SEEDS)
    assert any("manifold_muon 0.01" in line and "charlm_gpu_2x2 is planned" in line for line in said)


def test_the_dry_jobs_judged_runs_resolve_the_two_corners_it_swept(tmp_path, monkeypatch):
    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path))
    write_results(sweep_file({arm: SETTLED for arm in device_charlm.DRY_ARMS}), results_path(charlm_gpu.SWEEP, "ci"))
    config = device_charlm.CharLMPlan.worker_config(charlm_gpu.JUDGED, "ci", dry=True)
    assert dict(config.qk_lrs) == {"baseline": 1e-3, "stiefel": 1e-3}
    assert device_charlm.CharLMPlan.worker_config(charlm_gpu.JUDGED, "full", dry=False).qk_lrs == ()
