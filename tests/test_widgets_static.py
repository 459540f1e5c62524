"""Static explorers (stiefel_book.widgets.static): the widget's own grid, drawn by its own
function, and HTML that the page's explorers.js can read."""

import base64
import io
import json
import re

import ipywidgets as widgets
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from stiefel_book.widgets import explorer, log_slider, slider  # noqa: E402
from stiefel_book.widgets.static import MAX_SETTINGS, control_grid, static_explorer  # noqa: E402


def draw(a: float = 1.0, kind: str = "line", n: int = 2):
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1], [0, a * n] if kind == "line" else [a, a], "o-")
    ax.set_ylim(-1, 7)
    return fig, f"a = {a:g}, {kind}, n = {n}"


def toy(**overrides):
    controls = dict(
        a=slider(0.0, 1.0, 0.25, 0.5),
        kind=widgets.Dropdown(options=[("a line", "line"), ("a flat", "flat")], value="line"),
        n=widgets.IntSlider(min=1, max=3, value=2),
    )
    controls.update(overrides)
    return explorer(draw, **controls)


def page_data(static) -> dict:
    html = static._repr_html_()
    (blob,) = re.findall(
        r'<script type="application/json" class="static-explorer-data">(.*?)</script>', html, flags=re.S
    )
    return json.loads(blob)


def test_control_grids_are_the_widgets_own_positions():
    assert control_grid(slider(0.0, 2.0, 0.5, 1.0))[0] == (0.0, 0.5, 1.0, 1.5, 2.0)
    values, labels, is_slider = control_grid(log_slider(-4, -1, 1e-3, step=0.5))
    assert len(values) == 7 and values[0] == pytest.approx(1e-4) and values[-1] == pytest.approx(0.1) and is_slider
    assert control_grid(widgets.IntSlider(min=1, max=9, step=4))[0] == (1, 5, 9)
    assert control_grid(widgets.Dropdown(options=[("none", None), ("0.5", 0.5)])) == (
        (None, 0.5),
        ("none", "0.5"),
        False,
    )
    with pytest.raises(TypeError, match="slider or a menu"):
        control_grid(widgets.Text())


def test_every_setting_is_drawn_once_and_matches_the_live_widget():
    ex = toy()
    static = static_explorer(ex, alt="A toy.", progress=False)
    assert static.settings == 5 * 2 * 3
    assert repr(static).split(", ")[0].endswith(" 30 settings")
    assert all(f"{name} ({n} of {n})" in repr(static) for name, n in (("a", 5), ("kind", 2), ("n", 3)))
    # flat lines do not depend on n: identical pictures are stored once, readouts apart
    assert len(static.images) < static.settings and len(static.texts) == static.settings
    assert static.matches(ex, a=0.75, kind="flat", n=3)
    image, text = static.frame(a=0.75, kind="flat", n=3)
    assert text == "a = 0.75, flat, n = 3" and Image.open(io.BytesIO(image)).mode == "P"  # 256 colours
    # a widget drawing something else there is caught
    ex.draw = lambda a, kind, n: draw(a + 1, kind, n)
    assert not static.matches(ex, a=0.0, kind="line", n=1)


def test_the_page_gets_the_grid_the_images_and_the_start():
    ex = toy()
    static = static_explorer(ex, alt="A toy.", subset={"a": [0.0, 0.5, 1.0]}, progress=False)
    data = page_data(static)
    a, kind, n = data["controls"]
    assert a == {
        "name": "a",
        "label": "a",
        "options": ["0", "0.25", "0.5", "0.75", "1"],
        "enabled": [True, False, True, False, True],
        "value": 2,
        "kind": "slider",
    }
    assert kind["kind"] == "menu" and kind["options"] == ["a line", "a flat"] and n["kind"] == "slider"
    assert len(data["frames"]) == 3 * 2 * 3 and "1,0,1" not in data["frames"]
    image, text = data["frames"]["2,0,1"]  # the start: a = 0.5, a line, n = 2
    assert data["texts"][text] == "a = 0.5, line, n = 2"
    assert base64.b64decode(data["images"][image]) == static.frame(a=0.5, kind="line", n=2)[0]
    html = static._repr_html_()
    assert "a: 3 of its 5 values" in html
    alt = re.search(r'alt="([^"]*)"', html).group(1)  # the start's setting after the explorer's own alt
    setting = alt.removeprefix("A toy. Setting: ").rstrip(".")
    assert dict(part.split(" = ") for part in setting.split(", ")) == {"a": "0.5", "kind": "a line", "n": "2"}


def test_a_readout_cannot_close_the_script_block():
    ex = explorer(lambda x: (draw(x)[0], "</script><b>"), x=[1.0, 2.0])
    data = page_data(static_explorer(ex, alt="x", progress=False))
    assert data["texts"] == ["</script><b>"]


def test_bad_grids_are_refused_with_what_to_do():
    ex = toy()
    with pytest.raises(ValueError, match="not one of the widget's settings"):
        static_explorer(ex, alt="x", subset={"a": [0.3]}, progress=False)
    with pytest.raises(ValueError, match="outside the subset; include it"):
        static_explorer(ex, alt="x", subset={"a": [0.0]}, progress=False)
    with pytest.raises(ValueError, match="not controls of this explorer"):
        static_explorer(ex, alt="x", subset={"b": [0.0]}, progress=False)
    big = toy(a=slider(0.0, 1.0, 0.001, 0.5))
    with pytest.raises(ValueError, match=f"more than {MAX_SETTINGS} images.*declare a subset"):
        static_explorer(big, alt="x", progress=False)


def test_a_log_slider_started_between_positions_starts_at_the_nearest():
    ex = explorer(lambda lr: draw(lr * 100)[0], lr=log_slider(-4, -1, 3e-3, "lr", step=0.5))
    static = static_explorer(ex, alt="x", progress=False)
    assert static.axes[0].start == 3  # 10^-2.5 = 3.2e-3


def test_off_draws_only_what_is_asked_for(monkeypatch):
    monkeypatch.setenv("STIEFEL_STATIC_EXPLORERS", "off")
    ex = toy()
    static = static_explorer(ex, alt="A toy.", progress=False)
    assert static.settings == 30 and not static.frames
    assert static.matches(ex, a=1.0, kind="line", n=3) and len(static.frames) == 1
    assert "starting setting" in static._repr_html_() and len(static.frames) == 2
    assert static.draw_all(progress=False).complete
    monkeypatch.setenv("STIEFEL_STATIC_EXPLORERS", "no")
    with pytest.raises(ValueError, match="set it to 'off'"):
        static_explorer(ex, alt="x", progress=False)
