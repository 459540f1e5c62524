"""An explorer that works on the book's static page, where there is no kernel (issue 19).

``static_explorer(explorer)`` walks the grid that a live widget's controls offer (every
position of each slider, every option of each menu, or a declared ``subset`` of them), draws
each setting through :func:`stiefel_book.widgets.render`, the path the live widget draws
through, with the widget's own ``draw`` (or, where the grid was computed ahead into a results
file, a ``draw`` of the same signature that reads it), and returns a :class:`StaticExplorer`.
Its HTML output holds the images (PNG, reduced to 256 colours) and the readouts; the book's
``_static/explorers.js`` builds a slider for each slider and a menu for each menu, and swaps
the image and the readout the moment the reader moves one. Where a chapter declares a subset,
a slider steps over the drawn positions only, a menu lists the others disabled, and the note
under the figure says which values need a kernel.

Why images and not a Vega-Lite or Plotly chart: each figure is the widget's own matplotlib
drawing (3-D frames, histograms, certificate panels, training curves), so the page shows
exactly what JupyterLab shows, drawn by one function; a second drawing of every figure in
another library could drift from the first. ``explorers.js`` only picks which stored image
to show. In JupyterLab the output shows the starting image; the live widget above it runs
any value.

Drawing a grid takes seconds to a minute. Where nobody reads the copy, ``STIEFEL_STATIC_EXPLORERS=off``
draws only the settings asked for: the launch cell sets it in a hosted kernel, and ``make test``
for nbval and the lab test (the copy's output is never compared; the cell after it is). The
book's pages come from ``make execute``, which draws every setting.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
import math
import os
from dataclasses import dataclass
from typing import Any, Callable

import ipywidgets as widgets
from PIL import Image as PILImage
from tqdm.auto import tqdm

from . import Explorer, render

__all__ = ["control_grid", "StaticExplorer", "static_explorer", "drawing_off"]

MAX_SETTINGS = 400  # more images than this make a page too heavy: declare a subset
OFF_VARIABLE = "STIEFEL_STATIC_EXPLORERS"


@dataclass(frozen=True)
class Axis:
    """One control of a static explorer: its name, label, the values and labels of its grid,
    which of them were drawn, and where it starts."""

    name: str
    label: str
    values: tuple
    labels: tuple[str, ...]
    enabled: tuple[bool, ...]
    start: int
    slider: bool


def _format(value: float, readout_format: str) -> str:
    return format(value, readout_format) if readout_format else f"{value:g}"


def control_grid(control: widgets.ValueWidget) -> tuple[tuple, tuple[str, ...], bool]:
    """Every value a control offers, its labels as the widget shows them, and whether it is a
    slider: the positions of a (log) slider, the options of a menu."""
    if isinstance(control, (widgets.Dropdown, widgets.RadioButtons, widgets.ToggleButtons, widgets.Select)):
        return tuple(control._options_values), tuple(control._options_labels), False
    if isinstance(control, widgets.IntSlider):
        values = tuple(range(control.min, control.max + 1, control.step))
        return values, tuple(str(v) for v in values), True
    if isinstance(control, widgets.FloatLogSlider):
        n = round((control.max - control.min) / control.step)
        values = tuple(float(control.base ** round(control.min + i * control.step, 10)) for i in range(n + 1))
        return values, tuple(_format(v, control.readout_format) for v in values), True
    if isinstance(control, widgets.FloatSlider):
        n = round((control.max - control.min) / control.step)
        values = tuple(round(control.min + i * control.step, 10) for i in range(n + 1))
        return values, tuple(_format(v, control.readout_format) for v in values), True
    raise TypeError(
        f"control {control.description!r} ({type(control).__name__}) has no grid a static page can offer: "
        "use a slider or a menu"
    )


def _index(values: tuple, value: Any, name: str) -> int:
    for i, v in enumerate(values):
        if v == value or (
            isinstance(v, float)
            and isinstance(value, (int, float))
            and v is not None
            and value is not None
            and math.isclose(v, value, rel_tol=1e-9, abs_tol=1e-12)
        ):
            return i
    raise ValueError(
        f"control {name!r}: {value!r} is not one of the widget's settings {list(values)}; "
        "a static explorer offers the widget's own grid (or a subset of it)"
    )


def _nearest(values: tuple, value: Any, log: bool) -> int:
    """Where a widget's starting value sits on its grid: itself, or the nearest position (a log
    slider started at 3e-3 shows 10^-2.5, as the widget's own readout rounds it)."""
    if not all(isinstance(v, (int, float)) for v in values) or not isinstance(value, (int, float)):
        return _index(values, value, "")
    scale = (lambda x: math.log10(x)) if log else (lambda x: x)
    return min(range(len(values)), key=lambda i: abs(scale(values[i]) - scale(value)))


def _axes(explorer: Explorer, subset: dict[str, list]) -> list[Axis]:
    unknown = set(subset) - set(explorer.controls)
    if unknown:
        raise ValueError(
            f"subset names {sorted(unknown)}, which are not controls of this explorer ({list(explorer.controls)})"
        )
    axes = []
    for name, control in explorer.controls.items():
        values, labels, is_slider = control_grid(control)
        chosen = {_index(values, v, name) for v in subset[name]} if name in subset else set(range(len(values)))
        start = _nearest(values, control.value, isinstance(control, widgets.FloatLogSlider))
        if start not in chosen:
            raise ValueError(
                f"control {name!r}: the widget starts at {values[start]!r}, outside the subset; include it"
            )
        enabled = tuple(i in chosen for i in range(len(values)))
        axes.append(Axis(name, control.description or name, values, labels, enabled, start, is_slider))
    return axes


def _compact_png(png: bytes) -> bytes:
    """The image in 256 colours (a figure has few), a third of the size or less."""
    image = PILImage.open(io.BytesIO(png)).convert("RGB").quantize(colors=256)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


class StaticExplorer:
    """A widget's grid for a page without a kernel. ``keys`` lists the settings to draw, each a
    tuple of grid indices (one per control); ``frames`` maps each drawn one to ``(image index,
    text index)`` into ``images`` (compacted PNGs, each picture once) and ``texts``; ``digests``
    holds the SHA-256 of each setting's PNG as drawn, so :meth:`matches` can compare it with
    the live widget's. Settings are drawn on first use; :meth:`draw_all` draws the rest."""

    def __init__(self, axes: list[Axis], keys: list[tuple], draw: Callable[..., Any], dpi: int, alt: str):
        self.axes, self.keys, self._draw, self.dpi, self.alt = axes, keys, draw, dpi, alt
        self.frames: dict[tuple, tuple[int, int]] = {}
        self.images: list[bytes] = []
        self.texts: list[str] = []
        self.digests: dict[tuple, str] = {}
        self._image_at: dict[str, int] = {}
        self._text_at: dict[str, int] = {}

    @property
    def settings(self) -> int:
        return len(self.keys)

    @property
    def complete(self) -> bool:
        return len(self.frames) == len(self.keys)

    def _key(self, values: dict) -> tuple:
        key = tuple(_index(a.values, values[a.name], a.name) for a in self.axes)
        if key not in self.keys:
            raise KeyError(f"setting {values} is outside the drawn subset")
        return key

    def _frame(self, key: tuple) -> tuple[int, int]:
        if key not in self.frames:
            values = {a.name: a.values[i] for a, i in zip(self.axes, key)}
            _, png, text = render(self._draw(**values), self.dpi)
            if png is None:
                raise ValueError(
                    f"draw({values}) returned no figure: a static explorer shows a figure for every setting"
                )
            digest = hashlib.sha256(png).hexdigest()
            if digest not in self._image_at:
                self._image_at[digest] = len(self.images)
                self.images.append(_compact_png(png))
            if text not in self._text_at:
                self._text_at[text] = len(self.texts)
                self.texts.append(text)
            self.frames[key], self.digests[key] = (self._image_at[digest], self._text_at[text]), digest
        return self.frames[key]

    def draw_all(self, progress: bool = True) -> "StaticExplorer":
        """Draw every setting not drawn yet (a progress bar unless ``TQDM_DISABLE``)."""
        quiet = not progress or os.environ.get("TQDM_DISABLE", "") not in (
            "",
            "0",
        )  # tqdm ignores it when disable is given
        for key in tqdm(
            [k for k in self.keys if k not in self.frames], desc="static explorer", disable=quiet, leave=False
        ):
            self._frame(key)
        return self

    def frame(self, **values: Any) -> tuple[bytes, str]:
        """The image and readout of one setting."""
        image, text = self._frame(self._key(values))
        return self.images[image], self.texts[text]

    def matches(self, explorer: Explorer, **values: Any) -> bool:
        """Set the live widget to ``values`` (as a reader would) and check that it draws what
        this static copy stores there: the same PNG, byte for byte, and the same readout."""
        explorer.set(**values)
        key = self._key({name: control.value for name, control in explorer.controls.items()})
        _, text = self._frame(key)
        return (
            hashlib.sha256(explorer.png or b"").hexdigest() == self.digests[key] and explorer.text == self.texts[text]
        )

    def _undrawn(self) -> str:
        parts = [f"{a.label}: {sum(a.enabled)} of its {len(a.values)} values" for a in self.axes if not all(a.enabled)]
        return f" Drawn here: {'; '.join(parts)} (the rest need a kernel)." if parts else ""

    def _data(self) -> dict:
        return {
            "controls": [
                {
                    "name": a.name,
                    "label": a.label,
                    "options": list(a.labels),
                    "enabled": list(a.enabled),
                    "value": a.start,
                    "kind": "slider" if a.slider else "menu",
                }
                for a in self.axes
            ],
            "frames": {",".join(map(str, k)): list(v) for k, v in self.frames.items()},
            "images": [base64.b64encode(img).decode() for img in self.images],
            "texts": self.texts,
            "alt": self.alt,
        }

    def _shown_width(self, image: int) -> int:
        """The image's width in CSS pixels: its figure's width in inches at 100 px an inch (drawn at ``dpi``)."""
        return round(PILImage.open(io.BytesIO(self.images[image])).width * 100 / self.dpi)

    def _repr_html_(self) -> str:
        start = tuple(a.start for a in self.axes)
        image, text = self._frame(start)
        data = json.dumps(self._data(), ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
        setting = ", ".join(f"{a.label} = {a.labels[a.start]}" for a in self.axes)
        readout = (
            f'<pre class="static-explorer-readout">{html.escape(self.texts[text])}</pre>' if self.texts[text] else ""
        )
        drawn = (
            f"{self.settings} settings drawn ahead by its own drawing function when the chapter "
            f"ran.{html.escape(self._undrawn())}"
            if self.complete
            else f"only its starting setting is drawn here ({OFF_VARIABLE}={os.environ.get(OFF_VARIABLE)}); "
            "the book's pages are built from a run that draws all of them."
        )
        return (
            f'<div class="static-explorer" data-settings="{self.settings}">'
            f'<script type="application/json" class="static-explorer-data">{data}</script>'
            f'<img class="static-explorer-figure" width="{self._shown_width(image)}" '
            f'src="data:image/png;base64,{base64.b64encode(self.images[image]).decode()}" '
            f'alt="{html.escape(self.alt)} Setting: {html.escape(setting)}.">'
            f"{readout}"
            f'<p class="static-explorer-note">The widget above, without a kernel: {drawn} Move a control to see '
            "another; in JupyterLab, Binder or Colab the widget itself runs any value.</p></div>"
        )

    def __repr__(self) -> str:
        grid = " x ".join(f"{a.name} ({sum(a.enabled)} of {len(a.values)})" for a in self.axes)
        return f"StaticExplorer: {self.settings} settings, {grid}"


def drawing_off() -> bool:
    """Whether ``$STIEFEL_STATIC_EXPLORERS`` is ``off``: where nobody reads the page's copy (a
    reader's own kernel, nbval and the lab test, whose outputs of these cells are not compared),
    a static explorer draws only the settings asked for, not the whole grid."""
    value = os.environ.get(OFF_VARIABLE, "").strip().lower()
    if value not in ("", "on", "off"):
        raise ValueError(f"{OFF_VARIABLE}={value!r}: set it to 'off' (draw only what is asked for) or leave it unset")
    return value == "off"


def static_explorer(
    explorer: Explorer,
    *,
    alt: str,
    subset: dict[str, list] | None = None,
    draw: Callable[..., Any] | None = None,
    progress: bool = True,
) -> StaticExplorer:
    """Draw every setting of ``explorer``'s grid (or of ``subset``: control name -> the values
    to draw) with ``explorer.draw`` (or ``draw``, same arguments, e.g. reading a precomputed
    grid), for a page without a kernel; with ``STIEFEL_STATIC_EXPLORERS=off``, draw settings
    only when asked for (:func:`drawing_off`). ``alt`` describes the figure for a screen
    reader; the setting shown is appended to it. The live widget is left where it was."""
    axes = _axes(explorer, subset or {})
    keys = [
        k
        for k in itertools.product(*(range(len(a.values)) for a in axes))
        if all(a.enabled[i] for a, i in zip(axes, k))
    ]
    if len(keys) > MAX_SETTINGS:
        raise ValueError(
            f"{len(keys)} settings to draw, more than {MAX_SETTINGS} images a page can carry: "
            "declare a subset of the controls' values (subset={name: [values]})"
        )
    static = StaticExplorer(axes, keys, draw or explorer.draw, explorer.dpi, alt)
    return static if drawing_off() else static.draw_all(progress)
