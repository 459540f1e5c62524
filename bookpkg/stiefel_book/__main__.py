"""Command line: ``python -m stiefel_book run NAME --profile full`` and friends."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from . import extras
from .checkout import checkout_root
from .engine.registry import PROFILES, UnknownNameError
from .results_files import ResultsFileError

# a user's condition, not a bug: one ``error:`` line naming it and its remedy, no traceback (with
# InstallFolderError and SweepError, imported with torch: after :func:`extras.missing`)
EXPECTED = (ResultsFileError, UnknownNameError, extras.MissingExtraError)
INTERRUPTED = 130  # the shell's code for a process ended by SIGINT


def main(argv: list[str] | None = None) -> int:
    """The command line: list, claims, run, run-all, sweep. ``--help`` and ``list`` run without the
    chapters' extras (numpy, scipy, ...); the other commands say in one line how to install them.
    Ctrl-C saves the run in progress and prints the command that resumes it (exit 130).
    Chapters: grokking, cifar10_patches, ablation, regimes."""
    argv = list(sys.argv[1:] if argv is None else argv)
    absent = extras.missing()  # before torch is imported: it would warn that numpy is missing
    if absent:
        with extras.stand_ins(absent):  # the registry's modules import them at their top
            parser = _parser()
    else:
        parser = _parser()
    args = parser.parse_args(argv)
    from .experiments.routing_sweep import SweepError
    from .results import InstallFolderError  # the registry's modules are loaded by now

    if absent and args.command != "list":
        print(
            f"error: `{args.command}` needs the chapters' extras ({', '.join(absent)} missing): {extras.INSTALL}",
            file=sys.stderr,
        )
        return 2
    saved = {name: os.environ.get(name) for name in ("STIEFEL_RESULTS", "STIEFEL_CHECKPOINTS")}
    try:
        for name, value in (("STIEFEL_RESULTS", args.results), ("STIEFEL_CHECKPOINTS", args.checkpoints)):
            if value is not None:
                os.environ[name] = str(Path(value).resolve())
        return _command(parser, args)
    except (*EXPECTED, InstallFolderError, SweepError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as stop:
        print(_interrupted(stop, argv), file=sys.stderr)
        return INTERRUPTED
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _interrupted(stop: KeyboardInterrupt, argv: list[str]) -> str:
    """What Ctrl-C left, and the command that goes on from there (the same command: it skips the
    finished runs and resumes the saved one from its checkpoint)."""
    where = "no run was in progress"
    if getattr(stop, "checkpoint", None) is not None:
        where = f"the run in progress is saved at epoch {stop.epoch} ({stop.checkpoint})"
    elif getattr(stop, "epoch", None) is not None:
        where = f"the run in progress stopped at epoch {stop.epoch} (it has no checkpoint: it starts again)"
    env = " ".join(
        f"{name}={shlex.quote(os.environ[name])}"
        for name, option in (("STIEFEL_RESULTS", "--results"), ("STIEFEL_CHECKPOINTS", "--checkpoints"))
        if os.environ.get(name) and option not in argv
    )
    command = " ".join(filter(None, [env, "python -m stiefel_book", shlex.join(argv)]))
    return f"interrupted: {where}; finished runs are in the results file. Resume with:\n  {command}"


def _parser() -> argparse.ArgumentParser:
    from .experiments import EXPERIMENTS
    from .experiments.routing_sweep import SWEEPS as ROUTING_SWEEPS

    parser = argparse.ArgumentParser(
        prog="python -m stiefel_book",
        description="Run the book's experiments into book/results/ (resumable; Ctrl-C saves the run in progress). "
        f"--help and list need torch alone; the other commands need the chapters' extras: {extras.INSTALL}",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="results folder (default: $STIEFEL_RESULTS, else the checkout's book/results)",
    )
    parser.add_argument(
        "--checkpoints",
        type=Path,
        default=None,
        help="checkpoint folder (default: $STIEFEL_CHECKPOINTS, else the checkout's checkpoints)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list experiments and their results files")
    claims = sub.add_parser("claims", help="the preprint's claims beside our measurements")
    claims.add_argument(
        "--write-readme", action="store_true", help="rewrite the README's claims table (the checkout's tools/readme.py)"
    )
    run = sub.add_parser("run", help="run one experiment (resumes; skips finished runs)")
    run.add_argument("name", choices=sorted(EXPERIMENTS))
    run_all = sub.add_parser("run-all", help="run every experiment")
    sweep = sub.add_parser("sweep", help="grow the W_Q, W_K lr sweep until every arm's choice is interior (resumes)")
    sweep.add_argument("name", choices=SWEEPS + list(ROUTING_SWEEPS))
    sweep.add_argument(
        "--arms",
        nargs="+",
        default=None,
        help="a subset of the swept arms (a shard); for cifar10_qk_lr, cifar10_val_qk_lr and grokking_decay_qk_lr, "
        "cells (stiefel@wd=1); for the temperature sweeps, qk_norm@temp=3",
    )
    for p in (run, run_all, sweep):
        p.add_argument(
            "--profile",
            choices=PROFILES,
            default=None,
            help="default: $STIEFEL_PROFILE, else full with CUDA, ci without",
        )
        p.add_argument("--device", default=None, help="e.g. cpu, cuda, cuda:1 (default: cuda if available)")
        p.add_argument("--no-progress", action="store_true", help="no progress bars")
    run.add_argument("--arms", nargs="+", default=None, help="a subset of the arms")
    run.add_argument("--seeds", nargs="+", type=int, default=None, help="a subset of the seeds (a shard)")
    return parser


SWEEPS = [
    "grokking_qk_lr",
    "cifar10_qk_lr",
    "cifar10_peers_qk_lr",
    "grokking_p97_qk_lr",
    "grokking_decay_qk_lr",
    "mqar_qk_temp",
    "induction_qk_temp",
    "cifar10_val_qk_lr",
    "grokking_checked_qk_lr",
    "grokking_p97_checked_qk_lr",
    "charlm_gpu_qk_lr",
]


def _command(parser: argparse.ArgumentParser, args) -> int:
    from .experiments import EXPERIMENTS, default_profile, run_experiment
    from .experiments.routing_sweep import SWEEPS as ROUTING_SWEEPS
    from .train import stop_on_interrupt

    sweeps = SWEEPS + list(ROUTING_SWEEPS)
    if args.command == "list":
        for name in EXPERIMENTS:
            print("\n".join(_listing(name, sweeps)))
        return 0
    if args.command == "claims":
        if args.write_readme:
            return _readme_tool()
        from .claims_table import claims_table

        print(repr(claims_table()))
        return 0
    if getattr(args, "arms", None):
        experiment = EXPERIMENTS[args.name]
        known = experiment.arms + experiment.optional_arms
        bases = set(_bases(known))
        for arm in args.arms:
            if arm not in known and (args.command == "run" or arm.split("@")[0] not in bases):
                parser.error(
                    f"unknown arm {arm!r} of {args.name}; it has {', '.join(_bases(known))} (`list` shows them)"
                )
    profile = args.profile or default_profile()
    report = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731  (few lines: kept in logs too)
    options = dict(device=args.device, progress=not args.no_progress, report=report)
    with stop_on_interrupt():
        if args.command == "sweep":
            results = _sweep(args, profile, run_experiment, options)
            print(_summary(args.name, profile, results))
            return 0
        names = [args.name] if args.command == "run" else list(EXPERIMENTS)
        for name in names:
            results = run_experiment(
                name, profile, arms=getattr(args, "arms", None), seeds=getattr(args, "seeds", None), **options
            )
            print(_summary(name, profile, results))
    return 0


def _sweep(args, profile: str, run_experiment, options: dict) -> dict:
    from .experiments import EXPERIMENTS
    from .experiments import routing_sweep as rs

    experiment = EXPERIMENTS[args.name]  # a sweep: its Study grows it (manifold Muon's routing sweeps when named)
    arms = tuple(args.arms or ()) or (rs.SWEPT_ARMS if args.name in rs.SWEEPS else None)
    return experiment.study(experiment.profiles[profile]).grow(run_experiment, profile, arms, **options)


HEADLINES = ("val_acc", "test_acc", "val_bpc", "val_loss")  # the first a run's final record holds


def _summary(name: str, profile: str, results: dict) -> str:
    """Where the runs are, and per arm the mean of its headline metric over its finished seeds."""
    from .results import results_path

    runs = results["runs"]  # keys "arm/seed"
    lines = [f"{name} ({profile}): {len(runs)} runs in {results_path(name, profile)}"]
    by_arm: dict[str, list[float]] = {}
    metric = None
    for key, run in runs.items():
        final = run.get("final") or {}
        metric = metric or next((m for m in HEADLINES if isinstance(final.get(m), (int, float))), None)
        if metric is not None and isinstance(final.get(metric), (int, float)):
            by_arm.setdefault(key.rpartition("/")[0], []).append(float(final[metric]))
    if metric is not None:
        lines.append(f"  final {metric}, mean over seeds:")
        width = max(map(len, by_arm), default=0)
        for arm, values in by_arm.items():
            lines.append(
                f"    {arm:{width}s}  {sum(values) / len(values):.4g}  ({len(values)} seed{'s' * (len(values) > 1)})"
            )
    return "\n".join(lines)


def _listing(name: str, sweeps: list[str]) -> list[str]:
    """``list``'s lines for one experiment: what it runs (a grid's arms summed up), and per profile
    its results file and how many runs it holds (a sweep's grow until every choice is interior)."""
    from .experiments import EXPERIMENTS
    from .results import load_results, results_path

    experiment = EXPERIMENTS[name]
    arms = experiment.arms
    shown = ", ".join(arms) if len(arms) <= 12 else f"{len(arms)} grid arms of {', '.join(_bases(arms))}"
    extra = f" (on request: {', '.join(_bases(experiment.optional_arms))})" if experiment.optional_arms else ""
    lines = [f"{name:12s} {experiment.description}; arms {shown}{extra}"]
    for profile in PROFILES:
        path = results_path(name, profile)
        if path.exists():
            runs = len((load_results(name, profile) or {}).get("runs", {}))
            state = f"{runs} run{'' if runs == 1 else 's'}" + (" so far: a sweep" if name in sweeps else "")
        else:
            state = "not run"
        lines.append(f"    {profile:5s} {path} ({state})")
    return lines


def _bases(arms: tuple[str, ...]) -> list[str]:
    """The arms a grid's ``arm@setting=value`` names are built on, in order."""
    return list(dict.fromkeys(arm.split("@")[0] for arm in arms))


def _readme_tool() -> int:
    """Run the checkout's ``tools/readme.py``: the README belongs to the repository, not the library."""
    import runpy

    root = checkout_root()
    if root is None:
        print(
            "--write-readme rewrites a checkout's README.md; this stiefel_book is installed, not a checkout",
            file=sys.stderr,
        )
        return 2
    return runpy.run_path(str(root / "tools" / "readme.py"))["main"]([])


if __name__ == "__main__":
    sys.exit(main())
