"""Damaged state files, tried as a user would meet them: one clear error naming the file and the
remedy, and nothing else touched."""

import pytest
import torch

from stiefel_book.__main__ import main
from stiefel_book.results import DamagedResultsError, load_results
from stiefel_book.train import fit, save_atomically

TRUNCATED = '{"runs": {"baseline/0": '


def test_a_truncated_results_file_ends_the_command_with_its_name_and_the_remedy(isolated, capsys):
    path = isolated / "results" / "grokking-ci.json"
    path.parent.mkdir(parents=True)
    path.write_text(TRUNCATED)

    assert main(["run", "grokking", "--profile", "ci", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and "restore it from git" in err.lower() and "Traceback" not in err
    assert path.read_text() == TRUNCATED  # left as it was
    assert not (isolated / "checkpoints").exists()  # no run started
    with pytest.raises(DamagedResultsError, match="not valid JSON"):
        load_results("grokking", "ci")


def _tiny_fit(checkpoint, epochs=4):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 3, generator=torch.Generator().manual_seed(1))

    def step(epoch, logging):
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()

    history = fit(
        model,
        optimizer,
        step,
        lambda: {"loss": model(x).square().mean().item()},
        epochs=epochs,
        log_every=1,
        checkpoint=checkpoint,
        checkpoint_every=2,
        progress=False,
    )
    return history, model.weight.detach().clone()


def test_a_truncated_checkpoint_is_moved_aside_with_a_warning_and_its_run_starts_again(tmp_path):
    whole, weight = _tiny_fit(None)
    checkpoint = tmp_path / "run.pt"
    save_atomically({"epoch": 2, "model": {}, "optimizer": {}, "history": []}, checkpoint)
    data = checkpoint.read_bytes()
    checkpoint.write_bytes(data[: len(data) // 2])  # a copy stopped half way

    with pytest.warns(UserWarning, match="damaged.*moved it aside.*starts again") as caught:
        history, resumed_weight = _tiny_fit(checkpoint)
    assert str(checkpoint) in str(caught[0].message)
    aside = tmp_path / "run.pt.damaged"
    assert aside.read_bytes() == data[: len(data) // 2]  # kept for a look, not deleted
    assert [r["epoch"] for r in history] == [r["epoch"] for r in whole]  # from epoch 0, not 2
    assert torch.equal(resumed_weight, weight)
