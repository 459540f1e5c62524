"""The routing tasks (issue 30): their data, the corpus check, the arms, and each experiment's
``ci`` profile end to end into a temporary results folder, with resume."""

import dataclasses
import hashlib

import pytest
import torch

import stiefel_book.experiments as experiments
from stiefel_book.arms import routing_arms
from stiefel_book.data.gutenberg import CorpusError, load_corpus
from stiefel_book.data.routing import IGNORE, generator, induction, induction_targets, mqar
from stiefel_book.experiments import routing_sweep, run_experiment
from stiefel_book.nanogpt import GPTConfig
from stiefel_book.tasks import routing

CPU = torch.device("cpu")


def test_mqar_answers_are_the_values_of_their_keys():
    N, V = 6, 64
    batch = mqar(32, V, 48, N, generator(1))
    for x, y in zip(batch.x, batch.y):
        keys, values = x[0 : 2 * N : 2], x[1 : 2 * N : 2]
        assert len(set(keys.tolist())) == N and keys.max() < V // 2 <= values.min()
        asked = (y != IGNORE).nonzero().flatten()
        assert len(asked) == N and (asked >= 2 * N).all()
        for i in asked:
            key = x[i]
            (j,) = (keys == key).nonzero().flatten().tolist()
            assert y[i] == values[j]
        assert sorted(x[asked].tolist()) == sorted(keys.tolist())  # every key asked once
        filler = torch.ones(len(x), dtype=torch.bool)
        filler[: 2 * N], filler[asked] = False, False
        assert (x[filler] == 0).all()


def test_mqar_refuses_a_layout_that_does_not_fit():
    with pytest.raises(ValueError, match="4 kv_pairs"):
        mqar(2, 64, 16, 5, generator(0))


def test_induction_repeats_and_labels_the_next_token_of_the_repeat():
    half = 10
    batch = induction(64, 40, half, generator(2))
    T = 2 * half
    assert set(batch.period.tolist()) == set(range(5, 11))  # the repeat's length varies from row to row
    for x, y, n in zip(batch.x, batch.y, batch.period.tolist()):
        assert torch.equal(x[T - n :], x[T - 2 * n : T - n])  # the second copy repeats the first
        assert len(set(x[: T - n].tolist())) == T - n  # no token twice before the repeat
        scored = (y != IGNORE).nonzero().flatten()
        assert scored.tolist() == list(range(T - n, T - 1))
        assert torch.equal(y[scored], x[scored + 1])
    rows, queries, keys = induction_targets(batch)
    assert torch.equal(batch.x[rows, keys - 1], batch.x[rows, queries])  # the earlier occurrence of each token
    assert torch.equal(batch.x[rows, keys], batch.y[rows, queries])  # and the token after it is the answer


def test_batches_are_a_function_of_the_seed():
    a, b = mqar(4, 64, 32, 4, generator(7)), mqar(4, 64, 32, 4, generator(7))
    assert torch.equal(a.x, b.x) and not torch.equal(a.x, mqar(4, 64, 32, 4, generator(8)).x)


def _fake_corpus(tmp_path):
    texts = {"one": b"abc abc\n", "two": b"xyz\n", "three": b"cab\n"}
    for name, data in texts.items():
        (tmp_path / f"{name}.txt").write_bytes(data)
    return {name: hashlib.sha256(data).hexdigest() for name, data in texts.items()}


def test_corpus_splits_by_document(tmp_path):
    sha = _fake_corpus(tmp_path)
    corpus = load_corpus(tmp_path, sha256=sha, validation=("two",))
    decode = lambda t: "".join(corpus.chars[i] for i in t.tolist())  # noqa: E731
    assert decode(corpus.val) == "xyz\n" and corpus.val_docs == ("two",)
    assert decode(corpus.train) == "abc abc\n\n\ncab\n" and "two" not in corpus.train_docs


def test_a_corpus_file_whose_hash_differs_is_refused_with_a_clear_error(tmp_path):
    sha = _fake_corpus(tmp_path)
    (tmp_path / "two.txt").write_bytes(b"xyz!\n")
    with pytest.raises(CorpusError, match=r"two\.txt has SHA-256 .* reinstall with `npm ci`"):
        load_corpus(tmp_path, sha256=sha, validation=("one",))
    (tmp_path / "two.txt").unlink()
    with pytest.raises(CorpusError, match=r"two\.txt is missing: run `npm ci`"):
        load_corpus(tmp_path, sha256=sha, validation=("one",))


def test_every_arm_starts_from_the_same_function_and_trains_its_own_parameters():
    config = GPTConfig(vocab_size=16, block_size=8, n_layer=2, n_head=2, n_embd=16)
    x = torch.randint(16, (3, 8))
    reference = routing_arms.build(config, "baseline", 0)(x)
    for arm in routing_arms.ARMS + routing_arms.OPTIONAL_ARMS:
        model = routing_arms.build(config, arm, 0)
        if arm != "qk_norm":  # its RMSNorm changes the logits' scale at the start
            torch.testing.assert_close(model(x), reference, rtol=1e-5, atol=1e-6)
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        opt = routing_arms.make_optimizer(model, arm, lr=1e-2, qk_lr=1e-2, weight_decay=0.1, betas=(0.9, 0.98))
        model(x).logsumexp(-1).mean().backward()
        opt.step()
        moved = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
        qk = set(routing_arms.qk_names(model))
        assert (qk & moved) == (set() if arm == "frozen" else qk), arm
        assert "transformer.wte.weight" in moved


@pytest.mark.parametrize("arm", ["stiefel", "manifold_muon"])
def test_frames_stay_orthonormal(arm):
    config = GPTConfig(vocab_size=16, block_size=8, n_layer=1, n_head=2, n_embd=16)
    model = routing_arms.build(config, arm, 0)
    opt = routing_arms.make_optimizer(model, arm, lr=1e-2, qk_lr=3e-2, weight_decay=0.1, betas=(0.9, 0.98))
    for _ in range(5):
        opt.zero_grad()
        model(torch.randint(16, (4, 8))).logsumexp(-1).mean().backward()
        opt.step()
    for name in routing_arms.qk_names(model):
        W = model.get_parameter(name)
        torch.testing.assert_close(W.transpose(-1, -2) @ W, torch.eye(8).expand(2, 8, 8), atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", ["mqar", "induction", "charlm"])
def test_each_ci_profile_runs_end_to_end_and_a_rerun_resumes(name, tmp_path, monkeypatch):
    arms = routing_arms.ARMS if name == "mqar" else ("baseline", "stiefel", "frozen")
    config = experiments.get_config(name, "ci")  # every arm at the task's lr, as if a sweep had chosen it
    config = dataclasses.replace(config, qk_lrs=tuple((arm, config.lr) for arm in routing_sweep.SWEPT_ARMS))
    folders = dict(directory=tmp_path, checkpoints=tmp_path / "ck", progress=False, config=config)
    results = run_experiment(name, "ci", arms=list(arms), **folders)
    assert sorted(results["runs"]) == sorted(f"{arm}/0" for arm in arms)
    metric = "val_bpc" if name == "charlm" else "val_acc"
    for outcome in results["runs"].values():
        assert outcome["history"][-1]["epoch"] == results["config"]["steps"]
        assert 0 <= outcome["final"][metric] < float("inf")
    if name == "induction":
        assert 0 <= results["runs"]["stiefel/0"]["final"]["induction_max"] <= 1
    calls = []
    experiment = experiments.EXPERIMENTS[name]
    monkeypatch.setitem(experiments.EXPERIMENTS, name, dataclasses.replace(experiment, run=lambda *a: calls.append(a)))
    run_experiment(name, "ci", arms=list(arms), **folders)
    assert calls == []


def test_an_interrupted_run_resumes_bit_identically(tmp_path, monkeypatch):
    config = routing_sweep.MQAR_PROFILES["ci"]
    whole = routing.run_mqar(config, "stiefel", 0, CPU, None, progress=False)
    real_fit = routing.fit

    def interrupted_fit(model, opt, train_step, *args, **kwargs):
        def failing_step(step, logging):
            if step == 30:
                raise KeyboardInterrupt
            return train_step(step, logging)

        return real_fit(model, opt, failing_step, *args, **kwargs)

    checkpoint = tmp_path / "run.pt"
    monkeypatch.setattr(routing, "fit", interrupted_fit)
    with pytest.raises(KeyboardInterrupt):
        routing.run_mqar(config, "stiefel", 0, CPU, checkpoint, progress=False)
    monkeypatch.setattr(routing, "fit", real_fit)
    assert checkpoint.exists()
    assert routing.run_mqar(config, "stiefel", 0, CPU, checkpoint, progress=False)["history"] == whole["history"]


def test_the_qk_lr_is_a_knob_of_its_own():
    config = routing_sweep.INDUCTION_PROFILES["ci"]
    a = routing.run_induction(config, "baseline", 0, CPU, progress=False, qk_lr=1e-4)
    b = routing.run_induction(config, "baseline", 0, CPU, progress=False, qk_lr=1e-2)
    assert a["qk_lr"] == 1e-4 and a["history"][-1]["norm/0.W_Q"] != b["history"][-1]["norm/0.W_Q"]
    with pytest.raises(ValueError, match="frozen frames have no W_Q, W_K lr"):
        routing.run_induction(config, "frozen", 0, CPU, progress=False, qk_lr=1e-3)


def test_a_sweep_grows_until_each_choice_is_interior(tmp_path):
    config = routing_sweep.SWEEPS["mqar_qk_lr"][0]["ci"]
    assert config.seeds == (100,)
    scores = {1e-3: 0.5, 3e-3: 0.8}
    fake = {
        "config": {"task": {"steps": 10, "lr": config.task.lr}, "metric": "val_acc", "seeds": [100]},
        "runs": {f"stiefel@qklr={lr:g}/100": {"history": [{"epoch": 10, "val_acc": s}]} for lr, s in scores.items()},
    }
    assert routing_sweep.study("", config).pending_rungs(fake, "stiefel") == (
        1e-2,
    )  # the best is the top rung: grow up
    fake["runs"]["stiefel@qklr=0.01/100"] = {"history": [{"epoch": 10, "val_acc": 0.6}]}
    assert routing_sweep.study("", config).pending_rungs(fake, "stiefel") == ()
    assert routing_sweep.chosen(fake, "stiefel")["lr"] == 3e-3 and routing_sweep.chosen(fake, "stiefel")["interior"]
    run = routing_sweep.study("", config, routing.run_mqar).run("muon@qklr=0.001", 100, CPU, None, False)
    assert run["qk_lr"] == 1e-3
