"""Command line: ``python -m stiefel_book run NAME --profile full`` and friends."""

from __future__ import annotations

import argparse
import sys

from .checkout import checkout_root
from .experiments import EXPERIMENTS, PROFILES, default_profile, run_experiment
from .experiments.results import DamagedResultsError, load_results, results_path
from .experiments.routing_sweep import SWEEPS as ROUTING_SWEEPS


def main(argv: list[str] | None = None) -> int:
    """The command line: list, claims, run, run-all. Chapters: grokking, cifar10_patches, ablation, regimes."""
    try:
        return _main(argv)
    except DamagedResultsError as error:  # a user's file, not a bug: its name and the remedy, no traceback
        print(f"error: {error}", file=sys.stderr)
        return 1


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stiefel_book", description="Run the book's experiments into book/results/."
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
    sweeps = [
        "grokking_qk_lr",
        "cifar10_qk_lr",
        "cifar10_peers_qk_lr",
        "grokking_p97_qk_lr",
        "grokking_decay_qk_lr",
        *ROUTING_SWEEPS,
    ]
    sweep.add_argument("name", choices=sweeps)
    sweep.add_argument(
        "--arms",
        nargs="+",
        default=None,
        help="a subset of the swept arms (a shard); for cifar10_qk_lr and grokking_decay_qk_lr, cells (stiefel@wd=1)",
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
    args = parser.parse_args(argv)

    if args.command == "list":
        for name in EXPERIMENTS:
            print("\n".join(_listing(name, sweeps)))
        return 0
    if args.command == "claims":
        if args.write_readme:
            return _readme_tool()
        from .claims import claims_table

        print(repr(claims_table()))
        return 0
    profile = args.profile or default_profile()
    if args.command == "sweep" and args.name in ROUTING_SWEEPS:
        from .experiments import routing_sweep

        results = routing_sweep.sweep(
            run_experiment,
            args.name,
            profile,
            EXPERIMENTS[args.name].profiles[profile],
            tuple(args.arms or routing_sweep.SWEPT_ARMS),
            device=args.device,
            progress=not args.no_progress,
        )
        print(f"{args.name} ({profile}): {len(results['runs'])} runs in {results_path(args.name, profile)}")
        return 0
    if args.command == "sweep":
        from .experiments import cifar10_fair, cifar10_judged, decay_map_sweep, fair_fight, p97_fair

        options = dict(device=args.device, progress=not args.no_progress)
        if args.name == "cifar10_qk_lr":
            results = cifar10_fair.sweep(run_experiment, profile, tuple(args.arms or ()) or None, **options)
        elif args.name == "cifar10_peers_qk_lr":
            results = cifar10_judged.sweep_peers(run_experiment, profile, tuple(args.arms or ()) or None, **options)
        elif args.name == "grokking_decay_qk_lr":
            results = decay_map_sweep.sweep(run_experiment, profile, tuple(args.arms or ()) or None, **options)
        elif args.name == "grokking_p97_qk_lr":
            results = p97_fair.sweep(run_experiment, profile, tuple(args.arms or ()) or None, **options)
        else:
            results = fair_fight.sweep(run_experiment, profile, tuple(args.arms or fair_fight.SWEPT_ARMS), **options)
        print(f"{args.name} ({profile}): {len(results['runs'])} runs in {results_path(args.name, profile)}")
        return 0
    names = [args.name] if args.command == "run" else list(EXPERIMENTS)
    for name in names:
        results = run_experiment(
            name,
            profile,
            arms=getattr(args, "arms", None),
            seeds=getattr(args, "seeds", None),
            device=args.device,
            progress=not args.no_progress,
        )
        print(f"{name} ({profile}): {len(results['runs'])} runs in {results_path(name, profile)}")
    return 0


def _listing(name: str, sweeps: list[str]) -> list[str]:
    """``list``'s lines for one experiment: what it runs (a grid's arms summed up), and per profile
    its results file and how many runs it holds (a sweep's grow until every choice is interior)."""
    experiment = EXPERIMENTS[name]
    arms = experiment.arms
    shown = ", ".join(arms) if len(arms) <= 12 else f"{len(arms)} grid arms of {', '.join(_bases(arms))}"
    extra = f" (on request: {', '.join(experiment.optional_arms)})" if experiment.optional_arms else ""
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
