"""What the chapters print for a reader, made from the results files: the intro's "What we found"
with its hero figure, each experiment chapter's "Key takeaways" and its closing verdict, and a
certificate's one-line summary with its checks behind a toggle. The words come from
:mod:`findings.summary`; this module loads the files (the full profile's) and lays them out as
MyST Markdown. Chapters: every chapter.

    from stiefel_core.pages import takeaways
    takeaways("grokking")   # a "Key takeaways" admonition, shown by IPython.display
"""

from __future__ import annotations

from IPython.display import Markdown

from .experiments import get_config
from .experiments.results import load_results
from .findings import summary

__all__ = ["what_we_found", "hero_figure", "takeaways", "chapter_verdict", "certificate_summary", "admonition"]


def _full(experiment: str) -> dict | None:
    results = load_results(experiment, "full")
    return results if results and results.get("runs") else None


def admonition(title: str, lines: list[str], kind: str = "tip") -> Markdown:
    """A MyST admonition holding ``lines`` as a list."""
    body = "\n".join(f"- {line}" for line in lines)
    return Markdown(f":::{{admonition}} {title}\n:class: {kind}\n{body}\n:::\n")


def _grokking() -> list[str]:
    return summary.grokking_takeaways(_full("grokking"))


def _cifar10() -> list[str]:
    return summary.cifar10_takeaways(
        _full("cifar10"), load_results("cifar10_sweep", "full"), _full("cifar10_long"), _full("cifar10_size")
    )


def _ablation() -> list[str]:
    return summary.ablation_takeaways(
        _full("cifar10_ablation"), load_results("cifar10", "full"), load_results("grokking_ablation", "full")
    )


def _regimes() -> list[str]:
    return summary.regimes_takeaways(
        load_results("grokking_ablation", "full"),
        load_results("grokking_decay_map", "full"),
        get_config("grokking_decay_map", "full").task,
        _full("grokking"),
    )


def _peers() -> list[str]:
    return summary.peers_takeaways(_full("grokking_peers"))


TAKEAWAYS = {
    "grokking": _grokking,
    "cifar10_patches": _cifar10,
    "ablation": _ablation,
    "regimes": _regimes,
    "peers": _peers,
}
# The claims each experiment chapter holds the evidence for (claims.CLAIMS' chapter field).
CHAPTER_CLAIMS = {
    "grokking": "book/grokking",
    "cifar10_patches": "book/cifar10_patches",
    "ablation": "book/ablation",
    "regimes": "book/regimes",
    "peers": "book/peers",
}


def takeaways(chapter: str) -> Markdown:
    """The "Key takeaways" admonition of an experiment chapter (a key of :data:`TAKEAWAYS`),
    from the full profile's results files."""
    if chapter not in TAKEAWAYS:
        raise ValueError(f"no takeaways for chapter {chapter!r}: use one of {sorted(TAKEAWAYS)}")
    return admonition("Key takeaways", TAKEAWAYS[chapter]())


def chapter_verdict(chapter: str) -> Markdown:
    """The verdict of every claim whose evidence ``chapter`` holds (book/NAME or NAME), as the
    intro's claims table gives it: the claim, the mark and word, the headline."""
    from .claims import CLAIMS

    path = chapter if chapter.startswith("book/") else f"book/{chapter}"
    lines = [
        f"**{c.claim}** (the preprint: {c.preprint}): {v} — {v.headline}."
        for c in CLAIMS
        if c.chapter == path
        for v in [c.verdict()]
    ]
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


def what_we_found() -> Markdown:
    """The intro's opening: one sentence per claim's verdict (:func:`summary.what_we_found`),
    the title's question first, then the propositions' certificates."""
    from .claims import CLAIMS

    verdicts = {c.claim: c.verdict() for c in CLAIMS}
    certificates = [verdicts[c.claim] for c in CLAIMS if c.claim.startswith("P")]
    first = {chapter: next(c.claim for c in CLAIMS if c.chapter == chapter) for chapter in FOUND_ORDER}
    experiments = [verdicts[first[chapter]] for chapter in FOUND_ORDER]
    sentences = summary.what_we_found(experiments, sum(v.word == "certified" for v in certificates), len(certificates))
    return Markdown(" ".join(sentences) + "\n")


def hero_figure():
    """The intro's figure: where the Stiefel rule beats AdamW over weight decay and training
    length (the decay map), or ``None`` before its runs exist."""
    from .findings import regimes
    from .plots.regimes import decay_map_figure

    dmap = _full("grokking_decay_map")
    if dmap is None:
        return None
    task = get_config("grokking_decay_map", "full").task
    cells = regimes.map_cells(dmap, "stiefel", "baseline", (500, 1500), lr=task.lr, warmup_epochs=task.warmup_epochs)
    return decay_map_figure(cells, title="The Stiefel rule minus AdamW, validation accuracy (pp)")


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
