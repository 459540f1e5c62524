"""What the chapters print for a reader, made from the results files: the intro's "What we found"
with its hero figure, each experiment chapter's "Key takeaways" and its closing verdict, and a
certificate's one-line summary with its checks behind a toggle. The words come from
:mod:`findings.summary`; this module loads the files (the full profile's) and lays them out as
MyST Markdown. Chapters: every chapter.

    from stiefel_book.pages import takeaways
    takeaways("regimes")    # a "Key takeaways" admonition, shown by IPython.display
"""

from __future__ import annotations

from pathlib import Path

from IPython.display import Markdown

from . import results_files
from .experiments import get_config
from .experiments.results import full_results, load_results
from .findings import summary

__all__ = [
    "what_we_found",
    "hero_figure",
    "what_changed",
    "regimes_rules",
    "fair_rows",
    "takeaways",
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


def _cifar10() -> list[str]:
    from . import declared
    from .findings import cifar10_family

    rows = declared.cifar10()
    return cifar10_family.takeaways(rows["protocol"], rows["long"], rows["size"], rows["movement"])


def regimes_rules() -> dict:
    """The declared rules of the families the regimes chapter and the intro state
    (``book/protocol.yml``), as :class:`findings.decay_map.Rule` by family name."""
    from . import protocol
    from .findings import decay_map

    return decay_map.rules(protocol.load())


def fair_rows() -> list[dict]:
    """The fair fight's judged rows, both declared families (:func:`declared.fair_rows`), as its
    chapter, the intro and the claims table read them."""
    from . import declared

    return declared.fair_rows()


def _regimes() -> list[str]:
    return summary.regimes_takeaways(
        load_results("grokking_ablation", "full"),
        load_results("grokking_decay_map", "full"),
        get_config("grokking_decay_map", "full").task,
        full_results("grokking"),
        regimes_rules(),
        fair_rows(),
        tuned_map=full_results("grokking_decay_map_tuned"),
        per_decay_map=full_results("grokking_decay_map_per_decay"),
        p97_rows=_p97_rows(),
    )


def _p97_rows() -> list[dict]:
    from . import declared

    return declared.p97_rows()


def _peers() -> list[str]:
    from . import declared
    from .findings import peers
    from .labels import label

    rows = declared.peers()
    return peers.takeaways(rows["rows"], rows["lrs"], label, rows["margin"])


TAKEAWAYS = {
    "cifar10_patches": _cifar10,
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
    """The verdict of every claim whose evidence ``chapter`` holds (book/NAME or NAME), one result a
    line (:func:`findings.claim_box.claim_item`): the claim and its word, the preprint's words, each
    axis's word with the reading that decided it, its other readings under it."""
    from .claims import CLAIMS
    from .findings.claim_box import claim_item

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
    short title (linked) and the verdict's sentence (:func:`summary.what_we_found`), the title's
    question first, the routing tasks (no claim of the preprint) next, the propositions last;
    with ``dropdown``, shut behind a toggle of that title."""
    from . import declared
    from .claims import CLAIMS, chapter_title
    from .findings import routing_summary
    from .labels import label

    verdicts = {c.claim: c.verdict() for c in CLAIMS}
    certificates = [verdicts[c.claim] for c in CLAIMS if c.claim.startswith("P")]
    first = {chapter: verdicts[next(c.claim for c in CLAIMS if c.chapter == chapter)] for chapter in FOUND_ORDER}
    measured = [chapter for chapter, v in first.items() if v.word != "pending" and v.sentence]
    sentences = summary.what_we_found(
        [first[c] for c in measured], sum(v.word == "certified" for v in certificates), len(certificates)
    )
    items = [(chapter_title(c), c, s) for c, s in zip(measured, sentences)]
    routed = routing_summary.summary(declared.routing(), label, notes=declared.routing_notes())
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
    return (dmap, summary.regimes_cells(dmap, task, rules)) if dmap else (None, None)


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
        from .findings.fair_fight import lr_text
        from .labels import label

        rates = ", ".join(f"{label(arm)} {lr_text(lr)}" for arm, lr in dmap["config"]["qk_lrs"])
        lrs = (
            "Each arm trains $W_Q, W_K$ at its own learning rate, tuned at $\\lambda = 1$ on selection seeds "
            f"({rates}; the task's is {lr_text(dmap['config']['task']['lr'])})."
        )
    else:
        lrs = "Every arm here trained $W_Q, W_K$ at the task's learning rate, so AdamW's was untuned."
    return Markdown(HERO_CAPTION.format(lrs=lrs))


FAMILY_NAMES = {  # the regimes chapter's declared families, in words
    "decay_map": "The decay map",
    "decay_map_controls": "The map's controls (frozen frames, no decay on W_Q, W_K)",
    "controls_p31": "The controls at p = 31 and their three readings",
    "controls_p97_time": "The controls' time to 90 % at p = 97",
    "trust_region": "The trust region",
    "cifar10_long": "CIFAR-10's long protocol (100 epochs)",
    "cifar10_size": "CIFAR-10's size sweep",
}


def what_changed(chapter: str = "regimes") -> Markdown:
    """The regimes chapter's "What changed" admonition: each verdict whose word changed when the
    protocol (``book/protocol.yml``) replaced one-at-a-time intervals by declared families, and
    every family whose rule was set after the runs it reads, in the protocol's own words."""
    if chapter != "regimes":
        raise ValueError(f"what_changed is written for the regimes chapter, not {chapter!r}")
    from . import protocol
    from .findings import cifar10_family, decay_map, long_training, regimes, regimes_before
    from .labels import label

    rules, lines = regimes_rules(), []
    controls, dmap, full = (load_results(n, "full") for n in ("grokking_ablation", "grokking_decay_map", "grokking"))
    cells = summary.regimes_cells(dmap, get_config("grokking_decay_map", "full").task, rules)
    old = regimes_before.map_count(dmap, (250, 500, 750, 1000, 1500))
    intro = regimes_before.map_count(dmap, (500, 1500))
    lines.append(
        f"**The decay map** counted every checkpoint of the same runs as a cell: higher {old['higher']}, tie "
        f"{old['tie']}, lower {old['lower']} of {sum(old.values())} (the intro: {intro['higher']}/{intro['tie']}/"
        f"{intro['lower']} of {sum(intro.values())}). It is now read once per decay, at its final epoch: "
        f"{decay_map.count_text(cells)}."
    )
    rule = rules["controls_p31"]
    new_rows = regimes.control_rows(controls, rule.margin, rule.alpha)
    before = regimes_before.control_words(controls)
    for name, rows, was in (
        ("The controls at p = 31", new_rows, before),
        ("Time to 90 % at p = 97", regimes.time_rows(full, alpha=rules["controls_p97_time"].alpha), None),
    ):
        was = regimes_before.time_words(full) if was is None else was
        changed = [
            f"{label(r['a'])} − {label(r['b'])}: {was[(r['a'], r['b'])]} → {r['verdict']}"
            for r in rows
            if was.get((r["a"], r["b"])) != r["verdict"]
        ]
        if changed:
            lines.append(f"**{name}**: " + "; ".join(changed) + ".")
        then, now = regimes_before.readings(was), regimes.supported_readings(rows)
        if then != now:
            then_text = regimes.readings_text(then).replace("contradicted", "not supported")
            lines.append(f"**{name}, the readings**: before, {then_text}; now, {regimes.readings_text(now)}.")
    loaded = protocol.load()
    long, sizes = load_results("cifar10_long", "full"), load_results("cifar10_size", "full")
    long_rows = cifar10_family.long_family(long, loaded.families["cifar10_long"])
    size_rows = cifar10_family.size_family(sizes, loaded.families["cifar10_size"])
    changed = long_training.changed_lines(
        regimes_before.long_words(long, sizes), long_rows, size_rows, loaded.families["cifar10_long"].margin
    )
    if changed:
        lines.append(f"**{FAMILY_NAMES['cifar10_long']} and size sweep**: " + "; ".join(changed) + ".")
    for name in (*decay_map.FAMILIES, "cifar10_long", "cifar10_size"):
        f = loaded.families[name]
        if f.set_after_runs:
            lines.append(f"**{FAMILY_NAMES[name]}**, {protocol.AFTER_RUNS_NOTE}: {f.after_runs}.")
    return admonition("What changed, and the rules set after the runs", lines, "note", collapsed=True)


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
