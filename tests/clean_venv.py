"""A clean venv's packages: the installed distributions a set of names needs, linked in rather
than downloaded (the packaging and launch-cell tests)."""

from importlib.metadata import distribution
from pathlib import Path

from packaging.requirements import Requirement


def closure(names: list[str]) -> list:
    """The installed distributions ``names`` and everything they require, here."""
    seen, todo = {}, list(names)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            dist = distribution(name)
        except Exception:
            continue  # an optional or platform-specific requirement that is not installed
        seen[key] = dist
        for req in dist.requires or []:
            r = Requirement(req)
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                todo.append(r.name)
    return list(seen.values())


def link_distribution(dist, site: Path) -> None:
    """Link a distribution's top-level files (packages, modules, its .dist-info) into ``site``."""
    base = Path(dist.locate_file(""))
    tops = {Path(f).parts[0] for f in dist.files or [] if not Path(f).parts[0].startswith("..")}
    for top in tops:
        target = site / top
        if not target.exists() and (base / top).exists():
            target.symlink_to(base / top)
