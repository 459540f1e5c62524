"""The tuning budget's figure draws what it is handed: a panel a task, a line an arm over the rungs
at its seeds' mean, a rung whose every seed diverged left out."""

import math

import matplotlib

matplotlib.use("Agg")

from stiefel_book.plots.lr_sensitivity import against_rate  # noqa: E402


def test_a_panel_a_task_a_line_an_arm_at_the_seeds_mean_and_no_point_where_all_diverged():
    runs = {
        "baseline": {1e-3: {0: 3.0, 1: 2.0}, 1e-2: {0: 2.0, 1: 2.0}, 1e-1: {0: math.nan, 1: math.inf}},
        "stiefel": {1e-3: {0: 2.5, 1: 2.5}, 1e-2: {0: 2.1, 1: 1.9}, 1e-1: {0: 2.2, 1: 2.4}},
    }
    fig = against_rate({"one": runs, "two": {"stiefel": runs["stiefel"]}}, "loss", log_y=True)
    one, two = fig.axes
    assert one.get_xscale() == "log" and one.get_yscale() == "log"
    lines = {line.get_label(): line for line in one.get_lines()}
    assert set(lines) == {"AdamW", "the Stiefel rule"} and len(two.get_lines()) == 1
    adam = lines["AdamW"]
    assert list(adam.get_xdata()) == [1e-3, 1e-2] and list(adam.get_ydata()) == [2.5, 2.0]
    assert [round(float(y), 9) for y in lines["the Stiefel rule"].get_ydata()] == [2.5, 2.0, 2.3]


def test_the_legend_names_an_arm_that_only_a_later_panel_has():
    runs = {"stiefel": {1e-3: {0: 2.5}, 1e-2: {0: 2.1}}}
    fig = against_rate({"one": runs, "two": {**runs, "manifold_muon": runs["stiefel"]}}, "loss")
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["the Stiefel rule", "manifold Muon"]


def test_a_grid_holding_zero_is_drawn_on_a_symmetric_log_axis_with_every_value_ticked():
    runs = {"baseline": {0.0: {0: 5.5}, 0.1: {0: 0.2}, 1.0: {0: 0.3}, 3.0: {0: 5.2}}}
    fig = against_rate({"one": runs}, "loss", xlabel="the weight decay")
    (ax,) = fig.axes
    assert ax.get_xscale() == "symlog" and ax.get_xlabel() == "the weight decay"
    assert list(ax.get_xticks()) == [0.0, 0.1, 1.0, 3.0] and list(ax.get_lines()[0].get_xdata()) == [0.0, 0.1, 1.0, 3.0]


def test_the_top_rung_reads_the_best_rate_the_highest_rate_and_its_largest_logit():
    from stiefel_book.findings.lr_sensitivity import top_rung

    def run(loss, logit):
        return {"final": {"val_bpc": loss}, "initial_loss": 6.0, "history": [{"max_logit/0": logit}]}

    runs = {
        f"baseline@lr={lr}/{s}": run(loss + s / 10, logit * (s + 1))
        for lr, loss, logit in [(0.001, 3.0, 10.0), (0.01, 2.5, 100.0), (0.1, float("nan"), 1e5)]
        for s in (0, 1)
    }
    results = {
        "config": {"arms": ["baseline"], "rungs": [0.001, 0.01, 0.1], "seeds": [0, 1], "metric": "val_bpc"},
        "runs": runs,
    }
    read = top_rung(results, "baseline")
    assert read["best_lr"] == 0.01 and abs(read["best"] - 2.55) < 1e-12
    assert read["top"] == 0.1 and read["at_top"] == 6.0 and read["peak"] == 2e5  # a diverged run scores a uniform guess


def test_every_arm_of_the_tuning_budget_has_its_own_colour_and_marker():
    from stiefel_book.plots.routing import MARKERS, ORDER, color

    drawn = [a for a in ORDER if a != "frozen"]  # frozen frames train no W_Q, W_K: no rate to sweep
    assert len({color(a) for a in drawn}) == len(drawn) and len({MARKERS[a] for a in drawn}) == len(drawn)
