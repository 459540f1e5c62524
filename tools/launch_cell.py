"""The first cell of every chapter: what a Colab or Binder kernel needs before the chapter runs.

Where ``stiefel_book`` imports (``make lab``, ``make test``, Binder's image, which installs it in
``binder/postBuild``), the cell does nothing. In a hosted kernel without it (Colab), it clones
the book's repository (the URL of ``_config.yml``, which the launch buttons use too) and
pip-installs the library and the book's package (``bookpkg/``) from that checkout with the
chapters' minimum requirements (``stiefel-book[chapters]``: lower bounds, no pins, so Colab keeps its torch and GPU),
and points ``STIEFEL_RESULTS`` at the checkout's results files; the explorers' copies for the
static page draw only their first setting there (``STIEFEL_STATIC_EXPLORERS=off``). ``STIEFEL_INSTALL_SOURCE``
names a checkout to install from instead (the bootstrap test uses it, offline). Chapters that
train on CIFAR-10 also fetch the official archive where ``STIEFEL_CIFAR10`` is unset, its MD5
checked by :func:`stiefel_book.data.load_cifar10` before anything reads it.

The cell is generated here, from one template, so the twelve copies cannot drift:
``python tools/launch_cell.py --write`` puts it first in every twin (then ``make sync``);
``tests/test_launch_cell.py`` fails when a twin's first cell is not the one this makes.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TWINS = ROOT / "twins"
CIFAR10_CHAPTERS = ("cifar10_patches", "ablation", "regimes")  # chapters whose cells train on CIFAR-10
EXTRAS = {"use_on_your_model": "chapters,dev"}  # transformers' GPT-2 and geoopt beside the chapters' own
MARKER = "# Launch cell (Colab, Binder)"

TEMPLATE = """{marker}: where the book's package is not installed, install it and the library
# from the book's repository with their minimum requirements (a hosted kernel keeps its own torch
# and GPU). Elsewhere it does nothing. STIEFEL_INSTALL_SOURCE: a checkout to install from instead.
import importlib.util, os, subprocess, sys
if importlib.util.find_spec("stiefel_book") is None:
    source = os.path.abspath(os.environ.get("STIEFEL_INSTALL_SOURCE", "stiefel-attention-book"))
    if not os.path.isdir(source):
        subprocess.run(["git", "clone", "--quiet", "--depth", "1", "{url}", source], check=True)
    packages = [source, os.path.join(source, "bookpkg") + "[{extras}]"]  # the library, the book's package
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *packages], check=True)
    os.environ.setdefault("STIEFEL_RESULTS", os.path.join(source, "book", "results"))  # the results files the chapter reads
    os.environ.setdefault("STIEFEL_STATIC_EXPLORERS", "off")  # the widgets are live here: no copies for a static page
    importlib.invalidate_caches()
    import torch
    print(f"stiefel_core and stiefel_book installed from {{source}}; profile:", os.environ.get("STIEFEL_PROFILE") or
          ("full (CUDA found: the live runs train at full size, minutes to hours)" if torch.cuda.is_available() else "ci"))"""  # noqa: E501 (the chapters' launch cell, verbatim)

CIFAR10 = """
if "STIEFEL_CIFAR10" not in os.environ:  # no local copy named: the official archive, its MD5 checked, into the cache
    from stiefel_book.data import load_cifar10
    load_cifar10(download=True)"""


def repository_url() -> str:
    """The repository URL of ``_config.yml`` (the launch buttons' own)."""
    text = (ROOT / "_config.yml").read_text()
    match = re.search(r"^repository:\s*\n\s+url:\s*(\S+)", text, flags=re.MULTILINE)
    if not match:
        raise SystemExit("_config.yml has no repository: url: line; the launch cell clones that repository")
    return match.group(1)


def cell_source(chapter: str) -> str:
    """The launch cell's code for one chapter (its twin's file name without ``.md``)."""
    source = TEMPLATE.format(marker=MARKER, url=repository_url(), extras=EXTRAS.get(chapter, "chapters"))
    return source + (CIFAR10 if chapter in CIFAR10_CHAPTERS else "")


def cell_block(chapter: str) -> str:
    """The cell as it stands in a MyST twin: hidden from the book's pages (``remove-cell``)."""
    return f"```{{code-cell}} ipython3\n:tags: [remove-cell]\n\n{cell_source(chapter)}\n```\n"


def first_code_cell(text: str) -> tuple[int, int] | None:
    """Start and end offsets of a twin's first code cell, or ``None``."""
    start = text.find("```{code-cell}")
    if start < 0:
        return None
    end = text.index("\n```\n", start) + len("\n```\n")
    return start, end


def with_launch_cell(chapter: str, text: str) -> str:
    """The twin with its launch cell first: replaced where it is there, inserted otherwise."""
    span = first_code_cell(text)
    if span is None:
        raise ValueError(f"twins/{chapter}.md has no code cell: a chapter without code needs no launch cell")
    start, end = span
    if MARKER in text[start:end]:
        return text[:start] + cell_block(chapter) + text[end:]
    return text[:start] + cell_block(chapter) + "\n" + text[start:]


def chapters() -> list[Path]:
    """Every twin with a code cell (a notebook chapter)."""
    return sorted(p for p in TWINS.glob("*.md") if "```{code-cell}" in p.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--write", action="store_true", help="put the launch cell first in every twin (then run make sync)"
    )
    args = parser.parse_args(argv)
    stale = []
    for path in chapters():
        text = path.read_text()
        new = with_launch_cell(path.stem, text)
        if new != text:
            stale.append(path.name)
            if args.write:
                path.write_text(new)
    verb = "updated" if args.write else "stale (run python tools/launch_cell.py --write, then make sync)"
    print(f"launch cell {verb}: {', '.join(stale)}" if stale else "launch cell: every twin up to date")
    return 0 if args.write or not stale else 1


if __name__ == "__main__":
    sys.exit(main())
