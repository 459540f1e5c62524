"""Benchmarks print what they measure and keep it in ``benchmarks/results/NAME.json``, from
which the README's benchmark section is generated (``python -m stiefel_book claims --write-readme``).
``$STIEFEL_BENCH_RESULTS`` names another folder (the device check writes under its ``OUT``)."""

from __future__ import annotations

import datetime
import json
import os
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


class Recorder:
    """``say(line)`` prints a line and keeps it; ``save(device)`` writes them all, with
    ``values`` (numbers a program reads, e.g. the device check's estimate) when set."""

    def __init__(self, name: str):
        self.name, self.lines, self.values = name, [], {}

    def say(self, line: str) -> None:
        print(line)
        self.lines.append(line.strip())

    def save(self, device: str) -> Path:
        folder = Path(os.environ.get("STIEFEL_BENCH_RESULTS") or RESULTS)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.name}.json"
        record = {
            "command": "python " + " ".join(["benchmarks/" + Path(sys.argv[0]).name, *sys.argv[1:]]),
            "date": datetime.date.today().isoformat(),
            "device": device,
            "lines": self.lines,
            **({"values": self.values} if self.values else {}),
        }
        path.write_text(json.dumps(record, indent=1) + "\n")
        return path
