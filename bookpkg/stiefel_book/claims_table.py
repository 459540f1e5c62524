"""The claims table (:data:`stiefel_book.claims.CLAIMS`, each claim measured now): a short table, one
line a claim, then every claim in full behind a toggle. It feeds the book's introduction and the
README (``tools/readme.py`` writes it there), so neither can drift from what the runs wrote.
Chapter: intro."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from . import results_files
from .checkout import checkout_root
from .claim_box import PENDING, Verdict
from .claims import CLAIMS
from .tables import markdown_table

__all__ = ["ClaimsTable", "claims_table", "chapter_title"]


def chapter_title(chapter: str) -> str:
    """The chapter's short title in the book's table of contents (``_toc.yml``), else its file name."""
    root = checkout_root()
    try:
        import yaml

        toc = yaml.safe_load((root / "_toc.yml").read_text()) if root is not None else {}
    except (ImportError, OSError):
        toc = {}
    entries = [entry for part in toc.get("parts", []) for entry in part.get("chapters", [])]
    return next((e["title"] for e in entries if e.get("file") == chapter and "title" in e), Path(chapter).name)


class ClaimsTable:
    """The claims as a short table, one line a claim (the claim in a few words, its two axes' words,
    its verdict, its chapter), then every claim in full behind a toggle (the preprint's words, each
    axis with the readings it rests on, what we measure): Markdown in a notebook, plain text for
    nbval, rows for code. Chapter: intro."""

    def __init__(
        self,
        rows: list[tuple[str, str, str, str]],
        link: Callable[[str], str],
        verdicts: list[Verdict] | None = None,
        shorts: list[str] | None = None,
    ):
        self.rows, self.link = rows, link
        self.verdicts = verdicts or [PENDING] * len(rows)
        self.shorts = shorts or [claim for claim, *_ in rows]

    def _chapter(self, chapter: str) -> str:
        """A link to the chapter where its notebook exists, else its name (not yet written)."""
        title, root = chapter_title(chapter), checkout_root()
        if root is not None and not (root / f"{chapter}.ipynb").exists():
            return f"{title} (to come)"
        return f"[{title}]({self.link(chapter)})"

    @staticmethod
    def _axes(v: Verdict) -> tuple[str, str]:
        """The two axes in full: a new result (not in the preprint) its readings at tuned rates; a
        claim with axes gives each; a certificate its headline (no rate to tune)."""
        if v.word == "new":
            return "— (not in the preprint)", (v.tuned.text if v.tuned else v.headline)
        if v.baseline is not None or v.tuned is not None:
            return (str(v.baseline) if v.baseline else "—"), (str(v.tuned) if v.tuned else "—")
        return v.headline, "—"

    @staticmethod
    def _axis_words(v: Verdict) -> tuple[str, str]:
        """The two axes' words for the short table ("—" where an axis does not apply)."""
        return (v.baseline.word if v.baseline else "—"), (v.tuned.word if v.tuned else "—")

    def short_markdown(self) -> str:
        """The short table alone: one line per claim, its two axes' words and its verdict."""
        return markdown_table(
            ["Claim", "Against the preprint's baseline", "At tuned rates", "Verdict", "Chapter"],
            [
                (short, *self._axis_words(v), str(v), self._chapter(ch))
                for short, (_, _, _, ch), v in zip(self.shorts, self.rows, self.verdicts)
            ],
        )

    def details_markdown(self) -> str:
        """Each claim in full, behind a toggle, as its chapter's verdict box gives it (one result a
        line: :func:`claim_box.claim_item`), then what we measure."""
        from .claim_box import claim_item

        items = [f"- {claim_item(c, p, v, m)}" for (c, p, m, _), v in zip(self.rows, self.verdicts)]
        return "<details>\n<summary>Every claim in full</summary>\n\n" + "\n".join(items) + "\n\n</details>\n"

    def _repr_markdown_(self) -> str:
        return self.short_markdown() + "\n" + self.details_markdown()

    def __repr__(self) -> str:
        return "\n".join(
            f"{c}\n    preprint: {p}\n    verdict: {v} ({v.headline})\n    axes: {' | '.join(self._axes(v))}"
            f"\n    we measure: {m}"
            for (c, p, m, _), v in zip(self.rows, self.verdicts)
        )


def claims_table(link: Callable[[str], str] | None = None) -> ClaimsTable:
    """Measure every claim now (certificates run live, results files are read, each once). Chapter: intro."""
    link = link or (lambda chapter: f"{Path(chapter).name}.ipynb")
    with results_files.reading_once():
        return ClaimsTable(
            [(c.claim, c.preprint, c.measure(), c.chapter) for c in CLAIMS],
            link,
            [c.verdict() for c in CLAIMS],
            [c.short or c.claim for c in CLAIMS],
        )
