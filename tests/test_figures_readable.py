"""The chapters' figures read at the size the book shows them (its column, 6.9 inches): tick
labels side by side without overlapping, legends off the data, no text under 7 pt. Each test
draws a figure from a small made-up results file; the gauge chapter's figures are checked in
``test_gauge.py``, where its runs are."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from figure_checks import cut_off, legends_over_axes, overlapping, smallest_font  # noqa: E402

from stiefel_core.experiments.variants import ABLATION_ARMS  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _finals(arms, starts=(0, 1, 2), metric="test_acc") -> dict:
    return {
        "runs": {
            f"{arm}/{s}": {"final": {metric: 0.4 + 0.01 * i + 0.001 * s}} for i, arm in enumerate(arms) for s in starts
        }
    }


@pytest.mark.parametrize("arms", [ABLATION_ARMS, ("baseline", "stiefel", "fixed_step", "frozen")])
def test_every_arm_of_the_arms_figure_has_its_name_apart_from_the_next(arms):
    from stiefel_core.plots.cifar10 import ARM_LABELS, arms_figure

    fig = arms_figure(_finals(arms), arms=arms, title="final test accuracy")
    (ax,) = fig.axes
    labels = ax.get_xticklabels()
    assert [t.get_text().replace("\n", " ") for t in labels] == [ARM_LABELS[a] for a in arms]  # the names, whole
    assert overlapping(fig, labels) == []
    assert fig.get_figwidth() <= 6.9 and smallest_font(fig) >= 7
    assert legends_over_axes(fig) == []


def _survival(arm, reached, censored):
    from types import SimpleNamespace

    times = np.linspace(200.0, 1400.0, reached)
    return SimpleNamespace(
        arm=arm,
        times=times,
        probabilities=np.linspace(0.9, censored / (reached + censored), reached),
        reached=reached,
        censored=censored,
    )


def test_the_survival_legends_sit_under_their_panels_within_the_column():
    from stiefel_core.plots.regimes import survival_curves

    panels = {
        "p = 97, full": [_survival(a, 5, 1) for a in ("baseline", "stiefel", "frozen", "no_decay_qk")],
        "p = 31, controls": [
            _survival(a, 13, 17) for a in ("baseline", "stiefel", "frozen", "no_decay_qk", "fixed_step_matched")
        ],
    }
    fig = survival_curves(panels)
    assert fig.get_figwidth() <= 6.9 and not cut_off(fig)  # the longest entries fit the column's width
    assert legends_over_axes(fig) == [] and smallest_font(fig) >= 7
    top, bottom = fig.axes
    assert top.get_legend().get_window_extent().y0 > bottom.bbox.y1  # each legend under its own panel


def test_the_gain_curves_legend_leaves_the_bands_alone():
    from types import SimpleNamespace

    from stiefel_core.plots.regimes import gain_curves

    comparison = SimpleNamespace(mean_difference=5.0, ci_low=-5.0, ci_high=25.0, n=20)  # bands over the whole panel
    gains = {
        arm: [{"epoch": e, "comparison": comparison} for e in (25, 50, 75)]
        for arm in ("baseline", "no_decay_qk", "frozen", "fixed_step_matched")
    }
    fig = gain_curves(gains, title="p = 31, λ = 1: Stiefel rule minus each arm")
    assert len(fig.legends) == 1 and legends_over_axes(fig) == [] and not cut_off(fig)
    assert fig.get_figwidth() <= 6.9 and smallest_font(fig) >= 7


PEERS = ("stiefel", "baseline", "per_entry", "muon", "muon_no_decay", "geoopt_radam", "orthogonal_param", "cayley_adam")


def test_the_peers_survival_figure_colours_and_names_every_arm_as_the_book_does():
    from stiefel_core.plots import ARM_COLORS
    from stiefel_core.plots.peers import survival_figure

    fig = survival_figure([_survival(arm, 13, 7) for arm in PEERS])
    (ax,) = fig.axes
    cayley = ax.get_lines()[-1]
    assert matplotlib.colors.same_color(cayley.get_color(), ARM_COLORS["cayley_adam"])  # not the reference grey
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(texts) == len(PEERS) and not any(t.split(":")[0] in PEERS for t in texts)  # names, not identifiers
    assert legends_over_axes(fig) == [] and not cut_off(fig) and smallest_font(fig) >= 7


def test_the_peers_movement_figure_has_one_legend_under_its_panels():
    from stiefel_core.plots.peers import movement_figure

    epochs = np.arange(25, 1525, 25)
    series = {
        arm: {"epoch": epochs, "angle": epochs / 100 + i, "ortho": np.full(len(epochs), 1e-6)}
        for i, arm in enumerate(PEERS)
    }
    fig = movement_figure(series)
    assert len(fig.legends) == 1 and legends_over_axes(fig) == [] and not cut_off(fig)
    assert fig.get_figwidth() <= 6.9 and smallest_font(fig) >= 7
