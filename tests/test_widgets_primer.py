"""The shared explorer and grid helpers, and the primer's widget, driven without a kernel."""

import math

import ipywidgets as widgets
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from stiefel_book.plots import COLORS, RC, arm_color, figsize, grid_figure, setting_label, style  # noqa: E402
from stiefel_book.plots import primer as primer_plots  # noqa: E402
from stiefel_book.widgets import Explorer, explorer, log_slider, slider  # noqa: E402
from stiefel_book.widgets.primer import T_MAX, draw_retraction, retraction_explorer  # noqa: E402
from stiefel_core.manifold import orthonormality_error, retract_polar  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _png(ex: Explorer) -> str:
    images = [o["data"]["image/png"] for o in ex.output.outputs if o["output_type"] == "display_data"]
    assert len(images) == 1
    return images[0]


def _current(fig) -> tuple[float, float]:
    (line,) = [line for ax in fig.axes for line in ax.get_lines() if line.get_gid() == "current"]
    return float(line.get_xdata()[0]), float(line.get_ydata()[0])


# --- plots/__init__ -------------------------------------------------------------------------


def test_arm_colors_are_fixed_and_distinct():
    assert arm_color("StiefelAdam") == arm_color("stiefel") == COLORS["stiefel"]
    assert arm_color("AdamW") == arm_color("euclidean") == COLORS["euclidean"]
    assert COLORS["stiefel"] != COLORS["euclidean"]
    with pytest.raises(ValueError, match="unknown arm"):
        arm_color("sgd")


def test_style_restores_only_its_own_settings():
    font_size, interactive = matplotlib.rcParams["font.size"], matplotlib.is_interactive()
    matplotlib.rcParams["font.size"] = RC["font.size"] + 3
    try:
        with style():
            assert matplotlib.rcParams["font.size"] == RC["font.size"]
            matplotlib.interactive(not interactive)  # as an inline backend set up inside the block does
        assert matplotlib.rcParams["font.size"] == RC["font.size"] + 3
        assert matplotlib.is_interactive() == (not interactive)  # kept: rc_context would undo it
    finally:
        matplotlib.rcParams["font.size"] = font_size
        matplotlib.interactive(interactive)


def test_grid_figure_draws_one_panel_per_setting_and_hides_the_rest():
    seen = []

    def panel(ax, t, r):
        seen.append((t, r))
        ax.plot([0, 1], [0, t * r])

    settings = [{"t": 0.5, "r": 1}, {"t": 1.0, "r": 1}, {"t": 0.5, "r": 2}]
    fig = grid_figure(panel, settings, ncols=2, title="grid")
    assert seen == [(0.5, 1), (1.0, 1), (0.5, 2)]
    assert len(fig.axes) == 4
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["t = 0.5, r = 1", "t = 1, r = 1", "t = 0.5, r = 2"]
    assert [ax.get_lines()[0].get_ydata()[1] for ax in visible] == [0.5, 1.0, 1.0]
    assert not fig.axes[3].get_visible()
    assert tuple(fig.get_size_inches()) == pytest.approx(figsize(2, 2))
    assert fig._suptitle.get_text() == "grid"


def test_grid_figure_plain_settings_and_errors():
    fig = grid_figure(lambda ax, x: ax.axhline(x), [1, 2.5], label=lambda x: f"x={x}")
    assert [ax.get_title() for ax in fig.axes] == ["x=1", "x=2.5"]
    assert setting_label(0.25) == "0.25" and setting_label({"lr": 1e-3}) == "lr = 0.001"
    with pytest.raises(ValueError):
        grid_figure(lambda ax, x: None, [])


# --- widgets/__init__ -----------------------------------------------------------------------


def test_explorer_redraws_when_a_control_changes():
    calls = []

    def draw(a, mode):
        calls.append((a, mode))
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, a], gid="line")
        return fig, f"a = {a:.2f} in {mode}"

    ex = explorer(draw, a=(0.0, 2.0, 0.1, 0.5), mode=["x", "y"])
    assert isinstance(ex, widgets.VBox) and isinstance(ex.controls["a"], widgets.FloatSlider)
    assert isinstance(ex.controls["mode"], widgets.Dropdown)
    assert ex.controls["a"].continuous_update is False
    assert calls == [(0.5, "x")] and ex.text == "a = 0.50 in x"
    before = _png(ex)

    ex.controls["a"].value = 1.5  # as a reader would move the slider
    assert calls[-1] == (1.5, "x") and ex.calls == 2
    assert ex.text == "a = 1.50 in x"
    assert ex.output.outputs[-1] == {"output_type": "stream", "name": "stdout", "text": "a = 1.50 in x\n"}
    assert _png(ex) != before
    assert ex.figure.axes[0].get_lines()[0].get_ydata()[1] == 1.5

    ex.set(mode="y")
    assert calls[-1] == (1.5, "y") and ex.values == {"a": 1.5, "mode": "y"}
    assert len(ex.output.outputs) == 2  # replaced, never appended to
    assert plt.get_fignums() == []  # every figure was closed after it was rendered


def test_explorer_controls_specs():
    ex = explorer(lambda n, lr: f"{n} {lr:g}", n=(1, 10, 1, 3), lr=log_slider(-4, 0, 1e-2))
    assert isinstance(ex.controls["n"], widgets.IntSlider) and ex.figure is None
    assert ex.text == "3 0.01" and ex.output.outputs[0]["name"] == "stdout"
    assert slider(0, 1, 0.1, 0.2, "t").description == "t"
    with pytest.raises(TypeError):
        explorer(lambda x: "", x="not a control")
    with pytest.raises(ValueError):
        explorer(lambda: "")


# --- the primer's figures and widget -------------------------------------------------------


@pytest.mark.parametrize("r", [1, 2])
def test_primer_example_is_a_unit_tangent_direction(r):
    W, xi = primer_plots.example(r)
    assert W.dtype == torch.float64 and W.shape == (3, r)
    assert float(orthonormality_error(W)) < 1e-14
    assert float(torch.linalg.matrix_norm(W.T @ xi + xi.T @ W)) < 1e-14
    assert float(torch.linalg.matrix_norm(xi)) == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("r", [1, 2])
@pytest.mark.parametrize("t", [0.0, 0.3, 1.0, 1.7])
def test_take_step_reports_the_exact_distance(t, r):
    step = primer_plots.take_step(t, r)
    # W + tξ = R (I + t² ξᵀξ)^(1/2): its distance from St is ‖(I + t² ξᵀξ)^(1/2) − I‖_F.
    sigma = torch.linalg.svdvals(step.xi)
    exact = math.sqrt(float(((1 + t**2 * sigma**2).sqrt() - 1).pow(2).sum()))
    assert step.distance == pytest.approx(exact, abs=1e-13)
    if r == 1:  # the sphere: |W + tξ| − 1
        assert step.distance == pytest.approx(math.sqrt(1 + t**2) - 1, abs=1e-13)
    assert step.error_retracted < 1e-12
    assert step.error_euclidean == pytest.approx(t**2 * float(torch.linalg.matrix_norm(step.xi.T @ step.xi)), abs=1e-13)


def test_retraction_gap_falls_like_t_squared():
    W, xi = primer_plots.example(2)
    ts = np.logspace(-4, -2, 5)
    gap = primer_plots.retraction_gap(W, xi, ts)
    expected = 0.5 * float(torch.linalg.matrix_norm(xi.T @ xi))  # ‖R_W(tξ) − W − tξ‖ ≈ t² ‖ξᵀξ‖_F / 2
    np.testing.assert_allclose(gap / ts**2, expected, rtol=1e-4)
    assert gap[2] == pytest.approx(
        float(torch.linalg.matrix_norm(retract_polar(W, ts[2] * xi) - W - ts[2] * xi)), rel=1e-12
    )


def test_primer_widget_follows_its_slider():
    ex = retraction_explorer(t=0.5)
    assert ex.values == {"t": 0.5, "r": 1} and ex.controls["t"].max == T_MAX
    assert _current(ex.figure) == pytest.approx((0.5, math.sqrt(1.25) - 1), abs=1e-12)
    assert "0.1180" in ex.text
    before = _png(ex)

    ex.controls["t"].value = 1.5
    assert ex.calls == 2 and _png(ex) != before
    t, distance = _current(ex.figure)
    assert t == 1.5 and distance == pytest.approx(math.sqrt(1 + 1.5**2) - 1, abs=1e-12)
    lines = dict(line.rsplit(maxsplit=1) for line in ex.text.splitlines())

    def readout(label: str) -> float:  # the one line whose label holds these words
        (value,) = (float(v) for name, v in lines.items() if label in name)
        return value

    assert readout("step size t") == 1.5
    assert readout("distance of W + tξ") == pytest.approx(math.sqrt(3.25) - 1, abs=1e-4)
    assert readout("error of W + tξ") == pytest.approx(1.5**2, abs=1e-4)
    assert readout("error of R_W(tξ)") < 1e-12

    ex.set(r=2)
    step = ex.result[2]
    assert step.r == 2 and step.t == 1.5
    assert "St(3, 2)" in ex.text and ex.figure.axes[0].get_title() == "St(3, 2): step $t = 1.50$"
    assert float(orthonormality_error(step.retracted)) < 1e-12
    assert _current(ex.figure)[1] == pytest.approx(step.distance, abs=1e-12)


def test_primer_figures_build():
    fig, text, step = draw_retraction(0.0, 1)
    assert step.distance < 1e-15 and len(fig.axes) == 2
    grid = primer_plots.retraction_grid(ts=(0.5, 1.0), rs=(1, 2))
    assert len(grid.axes) == 4 and grid.axes[3].get_title().startswith("St(3, 2), $t = 1$")
    assert len(primer_plots.first_order_figure().axes[0].get_lines()) == 3
    W, xi = primer_plots.example(2)
    assert len(primer_plots.first_order_figure({"again": (W, 2 * xi)}).axes[0].get_lines()) == 4
    assert primer_plots.step_figure(1.0, 2).axes[0].name == "3d"
