"""A sweep that chooses lr 0 (frozen frames) shows its choice: lr 0 sits one rung below the
smallest rate tried on the log axis, with the tick "0" (plots.rates), in every sweep figure."""

import matplotlib
import pytest

matplotlib.use("Agg")

from stiefel_book.plots import peers, rates, routing  # noqa: E402

ROWS = [
    {"arm": "stiefel", "scores": {0.0: 0.48, 1e-6: 0.477, 3e-6: 0.476}, "chosen": 0.0, "interior": True},
    {"arm": "baseline", "scores": {1e-4: 0.470, 3e-4: 0.471, 1e-3: 0.464}, "chosen": 3e-4, "interior": True},
]


def test_lr_0_sits_one_rung_below_the_smallest_rate():
    where = rates.position([1e-6, 0.0, 3e-6])
    assert where[1e-6] == 1e-6 and where[0.0] == pytest.approx(1e-6 / 3)
    assert rates.position([0.0]) == {0.0: pytest.approx(1e-6 / 3)}
    assert [rates.rung_label(r) for r in (0.0, 3e-4, 1e-2, 0.3, 1.0, 3.0)] == ["0", "3e-4", "1e-2", "0.3", "1", "3"]
    with pytest.raises(ValueError, match="negative"):
        rates.position([-1e-3])


def _circles(ax):
    return [tuple(c.get_offsets()[0]) for c in ax.collections]


@pytest.mark.parametrize(
    "draw",
    [
        lambda: peers.sweep_figure(ROWS).axes[0],
        lambda: peers.decay_sweep_figure([{"weight_decay": 0.3, "rows": ROWS}], "late test accuracy").axes[0],
        lambda: routing.sweep_figure({"task": (ROWS, "score", 100.0)}).axes[0],
    ],
)
def test_every_sweep_figure_shows_a_choice_of_lr_0(draw):
    ax = draw()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == "0" and "1e-6" in labels and "1e-3" in labels
    x_zero = ax.get_xticks()[0]
    assert x_zero == pytest.approx(1e-6 / 3)
    circles = _circles(ax)
    assert (pytest.approx(x_zero), pytest.approx(48.0)) in [(x, y) for x, y in circles]
    dotted = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert len(dotted) == 1 and list(dotted[0].get_xdata()) == pytest.approx([1e-6 / 3, 1e-6])
    lo, hi = ax.get_xlim()
    assert lo < x_zero and hi > 1e-3
