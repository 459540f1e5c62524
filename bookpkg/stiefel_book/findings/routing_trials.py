"""The routing chapter's trials tables: the scripts under ``tools/`` that chose each task's setting
before its sweep (``mqar_trials.json``, ``charlm_trials.json``), read into table rows.
Pure functions of those files' dicts."""

from __future__ import annotations

__all__ = ["TRIAL_ARMS", "trial_rows", "charlm_trial_rows"]

TRIAL_ARMS = ("frozen", "stiefel", "baseline")
_WORDS = {"kv_pairs": "{} pairs", "seq_len": "{} tokens", "vocab_size": "{} symbols"}
_WORDS.update(n_head="{} heads", n_embd="width {}")


def _finals(seeds: dict) -> str:
    """Final accuracies (percent) of ``{seed: run}`` in seed order, " / " between; each marked with
    its seed unless the seeds are 0, 1, 2, ..."""
    order = sorted(seeds, key=int)
    plain = order == [str(i) for i in range(len(order))]
    return " / ".join(("" if plain else f"seed {s}: ") + f"{100 * seeds[s]['val_acc'][-1][1]:.0f}" for s in order)


def trial_rows(trials: dict) -> list[list[str]]:
    """The MQAR trials (``tools/mqar_trials.json``, ``runs[arm][seed]``) as table rows: the setting,
    its steps, each arm's final query accuracy per seed (percent, seeds in order, separated by
    " / "; blank where not run) and the CPU seconds of a run (the fewest and the most)."""
    rows = []
    for name, trial in trials.items():
        setting = trial.get("setting") or trial["changes"]
        words = ", ".join(_WORDS.get(k, k + " {}").format(v) for k, v in setting.items() if k != "steps") or name
        runs = trial["runs"]
        finals = [_finals(runs.get(arm, {})) for arm in TRIAL_ARMS]
        seconds = [run["cpu_seconds"] for seeds in runs.values() for run in seeds.values()]
        rows.append([words, f"{trial['steps']:,}", *finals, f"{min(seconds):.0f}-{max(seconds):.0f}"])
    return rows


def _final_bpc(trial: dict, arm: str) -> float | None:
    return next((run["val_bpc"][-1][1] for run in trial["runs"].get(arm, {}).values()), None)


def charlm_trial_rows(trials: dict, task_lr: float) -> list[list[str]]:
    """The character model's trials (``tools/charlm_trials.json``) as table rows: the task's lr
    (``task_lr`` where a trial keeps it), the steps, frozen frames' and AdamW's final validation
    bits per character on the trial's seed and their difference (blank where an arm has not run)."""
    rows = []
    for trial in trials.values():
        frozen, adamw = _final_bpc(trial, "frozen"), _final_bpc(trial, "baseline")
        rows.append(
            [
                f"{trial['changes'].get('lr', task_lr):g}",
                f"{trial['steps']:,}",
                "" if frozen is None else f"{frozen:.2f}",
                "" if adamw is None else f"{adamw:.2f}",
                "" if frozen is None or adamw is None else f"{frozen - adamw:+.2f}",
            ]
        )
    return rows
