"""The shared pattern of the book's explorers: controls bound to a plain drawing function.

A chapter writes one function ``draw(**values)`` that returns a matplotlib figure, a
text readout, or a ``(figure, text)`` pair, and wraps it::

    from stiefel_book.widgets import explorer, slider
    ex = explorer(draw, t=slider(0.0, 2.0, 0.05, 0.5), r=[1, 2])
    ex  # the last expression of a cell shows the controls and the output

Every change of a control calls ``draw`` with all current values and replaces what the
output shows. Nothing depends on a kernel frontend: the figure is rendered to PNG and stored
in the ``Output`` widget's ``outputs``, the readout too, so a test drives an explorer by
setting a control's value and reading :attr:`Explorer.figure`, :attr:`Explorer.text` or
``ex.output.outputs``::

    ex.controls["t"].value = 1.0   # or ex.set(t=1.0)
    assert "t = 1" in ex.text

Chapter-specific explorers live in ``stiefel_book.widgets.<chapter>``; this package imports
none of them. The static book has no kernel: beside each explorer, a chapter shows
:func:`stiefel_book.widgets.static.static_explorer` of it, every setting of its grid drawn
ahead by the same ``draw``, behind controls that work in the browser.
"""

from __future__ import annotations

import io
from typing import Any, Callable, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import Image
from matplotlib.figure import Figure

from ..labels import label

__all__ = ["Explorer", "explorer", "slider", "log_slider", "render"]


def slider(
    min: float, max: float, step: float, value: float, description: str | None = None, readout_format: str = ".3g"
) -> widgets.FloatSlider:
    """A ``FloatSlider`` that calls back on release (not on every pixel of a drag)."""
    return _on_release(
        widgets.FloatSlider, description, min=min, max=max, step=step, value=value, readout_format=readout_format
    )


def log_slider(
    min_exponent: float, max_exponent: float, value: float, description: str | None = None, step: float = 0.25
) -> widgets.FloatLogSlider:
    """A base-10 ``FloatLogSlider`` from ``10**min_exponent`` to ``10**max_exponent``, on release too."""
    return _on_release(
        widgets.FloatLogSlider,
        description,
        min=min_exponent,
        max=max_exponent,
        step=step,
        value=value,
        base=10,
        readout_format=".2g",
    )


def _on_release(kind: type, description: str | None, **options) -> widgets.ValueWidget:
    """A ``kind`` slider of ``options`` that calls back on release, labelled ``description`` (or nothing)."""
    return kind(**options, description=description or "", continuous_update=False)


def _control(name: str, spec: Any) -> widgets.ValueWidget:
    """A control from a spec: a widget as is, ``(min, max, step, value)`` a slider, a list a dropdown."""
    if isinstance(spec, widgets.ValueWidget):
        control = spec
    elif isinstance(spec, tuple) and len(spec) == 4:
        if all(isinstance(x, int) and not isinstance(x, bool) for x in spec):
            control = widgets.IntSlider(min=spec[0], max=spec[1], step=spec[2], value=spec[3], continuous_update=False)
        else:
            control = slider(*spec)
    elif isinstance(spec, list):  # an arm's or a reading's name is shown in words (labels.py)
        control = widgets.Dropdown(options=[(label(o), o) if isinstance(o, str) else o for o in spec])
    elif isinstance(spec, dict):
        control = widgets.Dropdown(options=spec)
    else:
        raise TypeError(
            f"control {name!r}: give a widget, a (min, max, step, value) tuple or a list of options, not {spec!r}"
        )
    if not control.description:
        control.description = name
    return control


def render(result: Any, dpi: int = 100) -> tuple[Figure | None, bytes | None, str]:
    """What an explorer shows for one result of ``draw``: the figure (closed), its PNG and
    the text readout. The live widget and its static copy on the page
    (:mod:`stiefel_book.widgets.static`) both draw through this."""
    parts: Sequence[Any] = result if isinstance(result, tuple) else (result,)
    figure = next((p for p in parts if isinstance(p, Figure)), None)
    text = "\n".join(p for p in parts if isinstance(p, str))
    png = None
    if figure is not None:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=dpi)
        plt.close(figure)  # shown once, through the Output, never again by the inline backend
        png = buffer.getvalue()
    return figure, png, text


class Explorer(widgets.VBox):
    """Controls above an ``Output``; every change calls ``draw(**values)`` and shows the result.

    Attributes: ``controls`` (name -> widget), ``output`` (the ``Output`` widget), ``figure``
    (the last figure drawn, closed, its artists still readable), ``png`` (its image as shown),
    ``text`` (the last readout),
    ``result`` (what ``draw`` last returned), ``calls`` (how many times ``draw`` ran).
    """

    def __init__(self, draw: Callable[..., Any], controls: dict[str, widgets.ValueWidget], *, dpi: int = 150):
        self.draw = draw
        self.controls = dict(controls)
        self.output = widgets.Output()
        self.dpi = dpi
        self.figure: Figure | None = None
        self.png: bytes | None = None
        self.text = ""
        self.result: Any = None
        self.calls = 0
        super().__init__([widgets.HBox(list(self.controls.values())), self.output])
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        self.update()

    @property
    def values(self) -> dict[str, Any]:
        """The current value of every control, by name."""
        return {name: control.value for name, control in self.controls.items()}

    def set(self, **values: Any) -> "Explorer":
        """Set controls by name, as a reader would; each change redraws. Returns ``self``."""
        for name, value in values.items():
            self.controls[name].value = value
        return self

    def _changed(self, change: dict) -> None:
        self.update()

    def update(self) -> None:
        """Call ``draw`` with the current values and replace the output with what it returned."""
        result = self.draw(**self.values)
        self.result, self.calls = result, self.calls + 1
        figure, png, text = render(result, self.dpi)
        self.output.outputs = ()
        if png is not None:
            self.output.append_display_data(Image(data=png, format="png"))
        if text:
            self.output.append_stdout(text + "\n")
        self.figure, self.png, self.text = figure, png, text


def explorer(draw: Callable[..., Any], **controls: Any) -> Explorer:
    """An :class:`Explorer` of ``draw``; each keyword names one argument of ``draw`` and gives
    its control: a widget, a ``(min, max, step, value)`` tuple (a slider that calls back on
    release) or a list of options (a dropdown)."""
    if not controls:
        raise ValueError("explorer needs at least one control")
    return Explorer(draw, {name: _control(name, spec) for name, spec in controls.items()})
