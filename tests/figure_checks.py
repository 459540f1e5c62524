"""Readability checks on a drawn figure, at the size the book shows it: texts that overlap,
texts cut off at the figure's edge, legends over an axes' plotting area. Shared by the tests of
the chapters' figures."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.text import Text


def _renderer(fig: Figure):
    fig.canvas.draw()  # lays the figure out (constrained layout) as it is stored
    return fig.canvas.get_renderer()


def overlapping(fig: Figure, texts: list[Text]) -> list[tuple[str, str]]:
    """The pairs of ``texts`` (visible, non-empty) whose boxes on the drawn figure overlap."""
    renderer = _renderer(fig)
    shown = [t for t in texts if t.get_visible() and t.get_text()]
    boxes = [t.get_window_extent(renderer) for t in shown]
    return [
        (shown[i].get_text(), shown[j].get_text())
        for i in range(len(shown))
        for j in range(i + 1, len(shown))
        if boxes[i].overlaps(boxes[j])
    ]


def tick_labels(fig: Figure) -> list[Text]:
    """The tick labels of every visible axes of ``fig`` that are drawn: those of ticks within the
    axes' view (a locator also places ticks beyond it, which are not drawn)."""
    _renderer(fig)
    shown = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            shown += [
                t for t, at in zip(axis.get_ticklabels(), axis.get_ticklocs()) if low <= at <= high and t.get_visible()
            ]
    return shown


def words(fig: Figure) -> list[Text]:
    """Every drawn tick label, axis label and title of ``fig``, its own title too: the texts that
    must not overlap one another (a label longer than its axes reaches into the next)."""
    shown = tick_labels(fig)
    for ax in fig.axes:
        if ax.get_visible():
            shown += [ax.xaxis.label, ax.yaxis.label, ax.title]
    return shown + ([fig._suptitle] if fig._suptitle is not None else [])


def cut_off(fig: Figure) -> bool:
    """Whether anything drawn on ``fig`` (a label longer than its axes, a legend) reaches past
    the figure's edge, where a figure saved at its own size cuts it off."""
    renderer = _renderer(fig)
    drawn = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)  # from inches to pixels
    edge = fig.bbox
    return drawn.x0 < edge.x0 - 1 or drawn.y0 < edge.y0 - 1 or drawn.x1 > edge.x1 + 1 or drawn.y1 > edge.y1 + 1


def legends_over_axes(fig: Figure) -> list[str]:
    """The legends of ``fig`` (an axes' or the figure's) whose box overlaps any axes' plotting area."""
    renderer = _renderer(fig)
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [
        ", ".join(t.get_text() for t in legend.get_texts())
        for legend in legends
        if any(legend.get_window_extent(renderer).overlaps(ax.bbox) for ax in fig.axes if ax.get_visible())
    ]


def code_like(fig: Figure) -> list[str]:
    """The visible texts of ``fig`` that read like code: an underscore outside mathtext (``$...$``,
    where ``W_Q`` is set as a subscript), as in ``test_acc`` or ``W_Q``."""
    found = []
    for t in fig.findobj(Text):
        text = t.get_text()
        if t.get_visible() and "_" in "".join(text.split("$")[0::2]):
            found.append(text)
    return found


def smallest_font(fig: Figure, width: float = 6.9) -> float:
    """The smallest font size (pt) of the visible texts of ``fig`` as shown ``width`` inches wide
    at most (the book's column): a wider figure is scaled down, fonts and all."""
    scale = min(1.0, width / fig.get_figwidth())
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
    return min(sizes) * scale
