"""Result tables for the chapters: a Markdown table in a notebook and in the built book (so it
fits the text column and wraps on a phone), aligned plain text for ``print``, logs and nbval."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["Table", "markdown_table"]


def _cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence], align: str | None = None) -> str:
    """A GitHub/MyST pipe table; ``align`` holds one of ``l``, ``r``, ``c`` per column. For every chapter's tables."""
    align = align or "l" * len(headers)
    if len(align) != len(headers) or set(align) - set("lrc"):
        raise ValueError(f"align must give one of 'l', 'r', 'c' for each of the {len(headers)} columns, got {align!r}")
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"a row has {len(row)} cells for {len(headers)} columns: {row!r}")
    rule = {"l": "---", "r": "---:", "c": ":---:"}
    lines = ["| " + " | ".join(map(_cell, headers)) + " |", "| " + " | ".join(rule[a] for a in align) + " |"]
    lines += ["| " + " | ".join(map(_cell, row)) + " |" for row in rows]
    return "\n".join(lines)


class Table:
    """Rows under headers. A notebook shows it as Markdown; ``repr`` aligns it as text. For every chapter's tables."""

    def __init__(self, headers: Sequence[str], rows: Sequence[Sequence], align: str | None = None):
        self.headers, self.rows = list(headers), [list(r) for r in rows]
        self.align = align or "l" * len(self.headers)
        markdown_table(self.headers, self.rows, self.align)  # validates the shape now

    def _repr_markdown_(self) -> str:
        return markdown_table(self.headers, self.rows, self.align)

    def __repr__(self) -> str:
        cells = [self.headers] + [[str(c) for c in r] for r in self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.headers))]

        def pad(row: list[str]) -> str:
            return "  ".join(c.rjust(w) if a == "r" else c.ljust(w) for c, w, a in zip(row, widths, self.align))

        return "\n".join(pad(r).rstrip() for r in cells)

    def __len__(self) -> int:
        return len(self.rows)
