"""The protocol's audit (:func:`violations`): runs that finished before the family that governs them
was declared, and chapters that do not say a family's rule was set after its runs. Run by the unit
tests on the committed results and chapters (``tests/test_protocol.py``)."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

from . import results_files
from .protocol import AFTER_RUNS_NOTE, Family, Protocol

__all__ = ["violations"]


def _before(run_date: str, declared: _dt.date | _dt.datetime) -> bool:
    when = _dt.datetime.fromisoformat(run_date.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    if isinstance(declared, _dt.datetime):
        declared = declared if declared.tzinfo else declared.replace(tzinfo=_dt.timezone.utc)
        return when < declared
    return when.astimezone(_dt.timezone.utc).date() < declared


def _governed(f: Family, key: str) -> bool:
    arm = key.rpartition("/")[0]
    return f.arms is None or any(arm == a or arm.startswith(a + "@") for a in f.arms)


def _chapter_text(path: Path) -> str:
    notebook = json.loads(path.read_text())
    parts = []
    for cell in notebook.get("cells", []):
        parts.append("".join(cell.get("source", "")))
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            for value in output.get("data", {}).values():
                parts.append("".join(value) if isinstance(value, list) else str(value))
    return " ".join(" ".join(parts).split()).lower()


def violations(protocol: Protocol, results_dir: Path | str, chapters_dir: Path | str) -> list[str]:
    """What breaks the protocol, one line each (empty: nothing):

    - a family with ``set_after_runs: false`` governs a run (a file of ``results``, an arm of
      ``arms``) that finished before the family was declared, or that has no provenance date; a
      run adopted from a file the family ``adopts`` (its provenance says ``adopted_from``) is exempt;
    - a family with ``set_after_runs: true`` and ``chapters_checked: true`` names a chapter whose
      text (cells and outputs) lacks the words "set after the runs", or that does not exist.

    A date-only ``declared`` is compared by day (a run on the declaration's day passes).
    """
    results_dir, chapters_dir = Path(results_dir), Path(chapters_dir)
    out = []
    for f in protocol.families.values():
        if not f.set_after_runs:
            for stem in f.results:
                path = results_files.find(results_dir, stem)
                if path is None:
                    continue  # no run yet: nothing can predate the rule
                runs = results_files.read(path)["runs"]
                for key, run in sorted(runs.items()):
                    if not _governed(f, key) or (run.get("provenance") or {}).get("adopted_from") in f.adopts:
                        continue
                    date = (run.get("provenance") or {}).get("date")
                    if date is None:
                        out.append(
                            f"family {f.name!r}: run {key} of {stem} has no provenance date, so it cannot "
                            "be shown to follow the rule; mark the family set_after_runs: true if it does not"
                        )
                    elif _before(date, f.declared):
                        out.append(
                            f"family {f.name!r}: run {key} of {stem} finished {date}, before the family was "
                            f"declared ({f.declared_text!r}): mark it set_after_runs: true with after_runs, "
                            "and say so in its chapters"
                        )
        elif f.chapters_checked:
            for chapter in f.chapters:
                path = chapters_dir / f"{chapter}.ipynb"
                if not path.exists():
                    out.append(f"family {f.name!r}: chapter {chapter!r} not found at {path}")
                elif AFTER_RUNS_NOTE not in _chapter_text(path):
                    out.append(
                        f"family {f.name!r}: its rule was set after its runs, but chapter {chapter!r} does "
                        f'not say "{AFTER_RUNS_NOTE}": add the note where it states the family\'s verdicts'
                    )
    return out
