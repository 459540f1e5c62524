"""The chapters' figures read at the size the book shows them (its column, 6.9 inches): tick
labels side by side without overlapping, legends off the data, no text under 7 pt. Each test
draws a figure from a small made-up results file; the gauge chapter's figures are checked in
``test_gauge.py``, where its runs are."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from stiefel_book.arms.variants import ABLATION_ARMS  # noqa: E402

from figure_checks import code_like, cut_off, legends_over_axes, overlapping, smallest_font, words  # noqa: E402


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
    from stiefel_book.plots.cifar10 import ARM_LABELS, arms_figure

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
    from stiefel_book.plots.regimes import survival_curves

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

    from stiefel_book.plots.regimes import gain_curves

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
    from stiefel_book.plots import ARM_COLORS
    from stiefel_book.plots.peers import survival_figure

    fig = survival_figure([_survival(arm, 13, 7) for arm in PEERS])
    (ax,) = fig.axes
    cayley = ax.get_lines()[-1]
    assert matplotlib.colors.same_color(cayley.get_color(), ARM_COLORS["cayley_adam"])  # not the reference grey
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(texts) == len(PEERS) and not any(t.split(":")[0] in PEERS for t in texts)  # names, not identifiers
    assert legends_over_axes(fig) == [] and not cut_off(fig) and smallest_font(fig) >= 7


def test_the_peers_movement_figure_has_one_legend_under_its_panels():
    from stiefel_book.plots.peers import movement_figure

    epochs = np.arange(25, 1525, 25)
    series = {
        arm: {"epoch": epochs, "angle": epochs / 100 + i, "ortho": np.full(len(epochs), 1e-6)}
        for i, arm in enumerate(PEERS)
    }
    fig = movement_figure(series)
    assert len(fig.legends) == 1 and legends_over_axes(fig) == [] and not cut_off(fig)
    assert fig.get_figwidth() <= 6.9 and smallest_font(fig) >= 7


def _readable(fig, legends: int | None = 1) -> None:
    """The checks every figure below passes: drawn at most the column's width and a page's
    third-or-so in height, nothing cut off, no texts over one another, ``legends`` figure legends
    (under the panels), no legend over an axes, no text under 7 pt, no code identifiers."""
    width, height = fig.get_size_inches()
    assert width <= 6.9 and height <= 0.6 * width, (width, height)
    assert not cut_off(fig)
    assert overlapping(fig, words(fig)) == []
    if legends is not None:
        assert len(fig.legends) == legends
    assert legends_over_axes(fig) == []
    assert smallest_font(fig) >= 7
    assert code_like(fig) == []


def _grokking_run(arm_index: int, epochs=range(0, 2001, 20)) -> dict:
    e = np.array(list(epochs), dtype=float)
    return {
        "history": [
            {
                "epoch": int(x),
                "val_acc": float(min(1.0, x / 1500)),
                "train_acc": float(min(1.0, x / 100)),
                "train_loss": float(np.exp(-x / 300) + 1e-7),
                "norm/total": 40.0 - arm_index * np.sin(x / 200),
                "val_loss": 1.0,
                "angle_mean/W_Q": 3.0 + 10 * arm_index * x / 2000,
                "step/W_Q": 1e-3 * (1 + arm_index),
                "norm/attn.W_Q": 11.3 - arm_index * np.cos(x / 300),
            }
            for x in e
        ]
    }


@pytest.mark.parametrize("starts", [1, 6])
def test_the_grokking_accuracy_curves_count_runs_in_words_and_explain_the_line_styles_underneath(starts):
    from stiefel_book.plots.grokking import accuracy_curves

    runs = {f"{arm}/{s}": _grokking_run(i) for i, arm in enumerate(("baseline", "stiefel")) for s in range(starts)}
    runs["frozen/0"] = _grokking_run(2)  # another arm's run: not drawn, not counted
    fig = accuracy_curves(runs, title="full profile: p = 97, 20,000 epochs")
    runs_word = "1 run" if starts == 1 else f"{starts} runs"
    assert [ax.get_title() for ax in fig.axes] == [f"AdamW ({runs_word})", f"the Stiefel rule ({runs_word})"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["validation accuracy", "training accuracy"]
    _readable(fig)


def test_the_grokking_collapse_window_is_two_rows_of_three_panels_and_one_legend():
    from stiefel_book.plots.grokking import collapse_window

    fig = collapse_window(_grokking_run(0)["history"], _grokking_run(1)["history"], 400, 1600)
    assert len(fig.axes) == 6 and fig.get_figheight() <= 4.0  # it was 6.7 in tall, taller than a screen
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["AdamW", "the Stiefel rule"]
    _readable(fig)


def test_the_grokking_explorer_names_its_arms_in_words():
    from stiefel_book.plots.grokking import draw_explore

    fig, ax = plt.subplots()
    draw_explore(ax, {"baseline": _grokking_run(0)["history"], "stiefel": _grokking_run(1)["history"]})
    assert [line.get_label() for line in ax.get_lines()[::2]] == ["AdamW", "the Stiefel rule"]


def test_the_scale_invariance_legends_sit_under_their_panels():
    from stiefel_book.plots.propositions import scale_invariance_figure

    cs = 10.0 ** np.arange(-8, 9)
    found = {
        "scales": cs,
        "scale_free": np.full(len(cs), 0.5),
        "fixed": np.minimum(1e-6 * cs, 4.0),
        "deviation": {0.0: np.full(len(cs), 1e-16), 1e-8: np.where(cs < 1, 1e-8 / cs, 1e-8)},
    }
    fig = scale_invariance_figure(found)
    left, right = fig.axes
    for ax in (left, right):
        assert ax.get_legend().get_window_extent().y1 < ax.bbox.y0  # under its own panel
    assert [t.get_text() for t in right.get_legend().get_texts()][:2] == [
        r"$\varepsilon$ = 0",
        r"$\varepsilon$ = $10^{-8}$",
    ]
    _readable(fig, legends=0)


def _cifar_results(arms=("baseline", "stiefel", "fixed_step", "frozen"), starts=range(12), gain=-0.003) -> dict:
    runs = {}
    for i, arm in enumerate(arms):
        for s in starts:
            final = 0.47 + (gain if arm == "stiefel" else 0.0) + 0.001 * ((s * 7) % 5) - 0.0005 * (s % 3 == 0) * i
            history = [
                {
                    "steps_done": steps,
                    "test_acc": final - 0.05 * (780 - steps) / 780,
                    "train_acc": final - 0.1 * (780 - steps) / 780,
                    "step/blocks.0.W_Q": (1e-5 if arm == "fixed_step" else 1e-2) * 390 / steps,
                    "step/blocks.0.W_K": (1e-5 if arm == "fixed_step" else 1e-2) * 390 / steps * (1 + 0.01 * s),
                }
                for steps in (390, 780)
            ]
            runs[f"{arm}/{s}"] = {"history": history, "final": {"test_acc": final}}
    return {"runs": runs}


def test_the_cifar_gains_keep_their_bars_tall_under_a_far_preprint_line():
    from stiefel_book.plots.cifar10 import gains_figure

    fig = gains_figure(_cifar_results(), preprint_gain=8.98, title="full profile: final test accuracy, paired by start")
    left, far, bars = fig.axes
    low, high = bars.get_ylim()
    assert high < 1.0 and low > -1.0  # the bars' own scale (gains of -0.3 pp): not squeezed under the +8.98 line
    assert far.get_ylim()[0] < 8.98 < far.get_ylim()[1]  # the preprint's line, in its strip above the break
    assert [t.get_text() for t in far.get_yticklabels()] == ["+8.98"]
    assert [t.get_text() for t in left.get_xticklabels()] == ["AdamW", "The Stiefel rule"]
    _readable(fig)


def test_the_cifar_gains_draw_a_near_preprint_line_on_the_bars_own_axis():
    from stiefel_book.plots.cifar10 import gains_figure

    fig = gains_figure(_cifar_results(), preprint_gain=-0.5)
    left, bars = fig.axes
    assert any(np.allclose(line.get_ydata(), -0.5) for line in bars.get_lines())
    _readable(fig)


def test_the_cifar_curves_have_one_legend_entry_per_arm_under_the_panels():
    from stiefel_book.plots.cifar10 import curves_figure

    fig = curves_figure(_cifar_results()["runs"], title="live run, ci profile: accuracy by step")
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert texts == ["AdamW", "The Stiefel rule", "Fixed step", "Frozen frames"]
    assert [ax.get_ylabel() for ax in fig.axes] == ["test accuracy (%)", "training accuracy (%)"]
    _readable(fig)


def test_the_cifar_movement_figure_has_one_legend_under_its_panels():
    from stiefel_book.plots.cifar10 import movement_figure

    fig = movement_figure(
        _cifar_results(), (24.0, 40.0), title="full profile: per-step displacement of $W_Q$ and $W_K$"
    )
    assert len(fig.legends[0].get_texts()) == 4  # three arms and the preprint's band
    _readable(fig)


def test_the_cifar_size_sweep_has_one_legend_under_its_panels():
    from types import SimpleNamespace

    from stiefel_book.plots.cifar10 import sweep_figure

    def arm(mean):
        return SimpleNamespace(mean=mean, std=0.3)

    rows = [
        {
            "train_size": n,
            "baseline": arm(42.0 + i),
            "stiefel": arm(42.1 + i),
            "comparison": SimpleNamespace(mean_difference=0.1 - 0.1 * i, ci_low=-0.4, ci_high=0.6 - 0.2 * i),
        }
        for i, n in enumerate((5000, 10000, 20000, 50000))
    ]
    fig = sweep_figure(rows, title="full profile: the same 780 steps at every size")
    assert len(fig.legends[0].get_texts()) == 3
    _readable(fig)


def test_the_learning_rate_sweep_names_the_matrices_in_mathtext():
    from stiefel_book.plots.peers import sweep_figure

    rows = [
        {"arm": arm, "scores": {1e-3: 0.8 + 0.01 * i, 3e-3: 0.85, 1e-2: 0.7}, "chosen": 3e-3}
        for i, arm in enumerate(("baseline", "stiefel"))
    ]
    fig = sweep_figure(rows, criterion="late validation accuracy")
    assert code_like(fig) == [] and not cut_off(fig)


def test_the_sweep_per_decay_draws_a_panel_each_and_says_which_have_not_run():
    from stiefel_book.plots.peers import decay_sweep_figure

    rows = [
        {"arm": arm, "scores": {3e-4: 0.49 + 0.002 * i, 1e-3: 0.505, 3e-3: 0.50, 1e-2: 0.498}, "chosen": 1e-3}
        for i, arm in enumerate(("baseline", "stiefel"))
    ]
    cells = [
        {"weight_decay": 1.0, "rows": rows},
        {"weight_decay": 0.3, "rows": rows[:1]},
        {"weight_decay": 0.05, "rows": []},
    ]
    fig = decay_sweep_figure(cells, criterion="late test accuracy")
    assert [ax.get_title() for ax in fig.axes] == ["λ = 1", "λ = 0.3", "λ = 0.05"]
    assert [t.get_text() for t in fig.axes[2].texts] == ["not yet run"] and [
        t.get_text() for t in fig.legends[0].get_texts()
    ] == [
        "AdamW",
        "Stiefel rule",
    ]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["3e-4", "1e-3", "3e-3", "1e-2"]
    _readable(fig)


def test_a_sweep_scored_in_epochs_is_drawn_in_epochs():
    from stiefel_book.plots.peers import sweep_figure

    rows = [{"arm": "stiefel", "scores": {1e-4: 9000.0, 3e-4: 4000.0, 1e-3: 5000.0}, "chosen": 3e-4}]
    fig = sweep_figure(rows, criterion="epochs to 90 %", scale=1.0)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "epochs to 90 %" and list(ax.lines[0].get_ydata()) == [9000.0, 4000.0, 5000.0]
    assert code_like(fig) == [] and not cut_off(fig)
