"""What the chapters print for a reader, made from the results files: the intro's "What we found"
with its hero figure, each experiment chapter's closing verdict, and a
certificate's one-line summary with its checks behind a toggle. The words come from
:mod:`findings` and :mod:`claim_verdicts`; this module loads the files (the full profile's) and lays them out as
MyST Markdown. Chapters: every chapter.

    from stiefel_book.pages import chapter_verdict
    chapter_verdict("peers")    # the chapter's verdict box, shown by IPython.display
"""

from __future__ import annotations

from pathlib import Path

from IPython.display import Markdown

from . import results_files
from .experiments import get_config
from .results import full_results

__all__ = [
    "what_we_found",
    "hero_figure",
    "regimes_rules",
    "fair_rows",
    "chapter_verdict",
    "certificate_summary",
    "admonition",
]


def admonition(title: str, lines: list[str], kind: str = "tip", collapsed: bool = False) -> Markdown:
    """A MyST admonition holding ``lines`` as a list; ``collapsed``: shut until the reader opens it
    (the book's toggle buttons), for the record behind a finding rather than the finding."""
    body = "\n".join(f"- {line}" for line in lines)
    classes = f"{kind} dropdown" if collapsed else kind
    return Markdown(f":::{{admonition}} {title}\n:class: {classes}\n{body}\n:::\n")


def regimes_rules() -> dict:
    """The declared rules of the families the regimes chapter and the intro state
    (``book/protocol.yml``), as ``protocol.Family`` by name (:func:`findings.decay_map.rules`)."""
    from . import protocol
    from .findings import decay_map

    return decay_map.rules(protocol.load())


def fair_rows() -> list[dict]:
    """The fair fight's judged rows, both declared families (:func:`declared.fair_rows`), as its
    chapter, the intro and the claims table read them."""
    from . import declared

    return declared.fair_rows()


def chapter_verdict(chapter: str) -> Markdown:
    """The verdict of every claim whose evidence ``chapter`` holds (book/NAME or NAME), one result a
    line (:func:`claim_box.claim_item`): the claim and its word, the preprint's words, each
    axis's word with the reading that decided it, its other readings under it."""
    from .claim_box import claim_item
    from .claims import CLAIMS

    path = chapter if chapter.startswith("book/") else f"book/{chapter}"
    with results_files.reading_once():  # the claims' verdicts read the same files over again
        lines = [claim_item(c.claim, c.preprint, c.verdict()) for c in CLAIMS if c.chapter == path]
    if not lines:
        raise ValueError(f"no claim has its evidence in {path}")
    return admonition("Verdict", lines, "important")


# The intro's story, in the order it tells it: the title's question first (the movement claim
# and the gauge are left to the claims table below it).
FOUND_ORDER = (
    "book/fair_fight",
    "book/regimes",
    "book/grokking",
    "book/cifar10_patches",
    "book/ablation",
    "book/peers",
)


def what_we_found(dropdown: str | None = None) -> Markdown:
    """The intro's findings, a list: per chapter of :data:`FOUND_ORDER` with a measured verdict, its
    short title (linked) and the verdict's sentence (:func:`claim_verdicts.what_we_found`), the title's
    question first, the routing tasks (no claim of the preprint) next, the propositions last;
    with ``dropdown``, shut behind a toggle of that title."""
    from . import claim_verdicts, declared
    from .claims import CLAIMS
    from .claims_table import chapter_title
    from .labels import label
    from .wording.routing import summary

    verdicts = {c.claim: c.verdict() for c in CLAIMS}
    certificates = [verdicts[c.claim] for c in CLAIMS if c.claim.startswith("P")]
    first = {chapter: verdicts[next(c.claim for c in CLAIMS if c.chapter == chapter)] for chapter in FOUND_ORDER}
    measured = [chapter for chapter, v in first.items() if v.word != "pending" and v.sentence]
    sentences = claim_verdicts.what_we_found(
        [first[c] for c in measured], sum(v.word == "certified" for v in certificates), len(certificates)
    )
    items = [(chapter_title(c), c, s) for c, s in zip(measured, sentences)]
    routed = summary(declared.routing(), label, notes=declared.routing_notes())
    if routed:  # after the title's question: the tasks where the mechanism and a fixed scale part ways
        routed = routed.removeprefix("Where attention must learn to route, ")  # the item's title says it
        items.insert(
            min(1, len(items)), (chapter_title("book/routing"), "book/routing", routed[0].upper() + routed[1:])
        )
    items.append(("The mathematics", "book/p1_steepest_descent", sentences[-1]))
    lines = [f"- **[{title}]({Path(chapter).name}.ipynb).** {sentence}" for title, chapter, sentence in items]
    body = "\n".join(lines) + "\n"
    return Markdown(f":::{{dropdown}} {dropdown}\n{body}:::\n" if dropdown else body)


def hero_figure():
    """The intro's figure: the decay map, the Stiefel rule against AdamW at each decay's final
    epoch (the one count's cells) over the paired gain's curves, at every arm's tuned W_Q, W_K lr
    once that map is complete, else at the task's one lr; ``None`` before its runs exist."""
    from .findings import decay_map
    from .plots.regimes import decay_map_figure

    dmap, cells = _hero_map()
    if dmap is None:
        return None
    return decay_map_figure(cells, decay_map.curves(dmap, "stiefel", "baseline"))


def _hero_map() -> tuple[dict | None, list | None]:
    from .findings import decay_map

    task, rules = get_config("grokking_decay_map", "full").task, regimes_rules()
    tuned = full_results("grokking_decay_map_tuned")
    cells = decay_map.tuned_cells(tuned, task, rules)
    if cells is not None:
        return tuned, cells
    dmap = full_results("grokking_decay_map")
    return (dmap, decay_map.regimes_cells(dmap, task, rules)) if dmap else (None, None)


HERO_CAPTION = (
    "**Figure 1.** The Stiefel rule against AdamW across weight decays: grokking ($p = 31$, ten paired seeds a decay). "
    "On top, each "
    "weight decay $\\lambda$ at its runs' final epoch: the rule's validation accuracy minus AdamW's, its 95 % "
    "interval, the verdict (Holm across the five decays, as declared) and the seeds past 90 % in each arm; hatched "
    "cells are inconclusive. Under it, the same difference at every epoch before, drawn, not tested. Look at how the "
    "gain changes as decay grows. {lrs} [A fair fight](fair_fight.ipynb) tunes the rates, and "
    "[Where the geometry wins](regimes.ipynb) reads the map with its controls."
)


def hero_caption() -> Markdown:
    """Figure 1's caption, saying which learning rates the map that :func:`hero_figure` draws used."""
    dmap, _ = _hero_map()
    if dmap is not None and "qk_lrs" in dmap["config"]:
        from .labels import label
        from .wording.fair_fight import lr_text

        rates = ", ".join(f"{label(arm)} {lr_text(lr)}" for arm, lr in dmap["config"]["qk_lrs"])
        lrs = (
            "Each arm trains $W_Q, W_K$ at its own learning rate, tuned at $\\lambda = 1$ on selection seeds "
            f"({rates}; the task's is {lr_text(dmap['config']['task']['lr'])})."
        )
    else:
        lrs = "Every arm here trained $W_Q, W_K$ at the task's learning rate, so AdamW's was untuned."
    return Markdown(HERO_CAPTION.format(lrs=lrs))


def certificate_summary(cert, title: str) -> Markdown:
    """A certificate as one line (passed or not, how many checks) with every check behind a toggle."""
    text = str(cert)
    checks = [line for line in text.splitlines() if line.strip()]
    status = "✓ certified" if cert.passed else "✗ NOT certified"
    body = "\n".join(checks)
    return Markdown(
        f"**{title}: {status}** in float64.\n\n<details>\n<summary>Its checks</summary>\n\n"
        f"```text\n{body}\n```\n\n</details>\n"
    )
