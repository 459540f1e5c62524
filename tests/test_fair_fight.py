"""The fair fight's lr selection: the rule grows a grid until its choice is interior, and the
comparison takes the choice into its config before any run."""

import dataclasses

import pytest

from stiefel_book.choices import LADDER, choice, is_interior, late_score, next_rungs
from stiefel_book.engine.grid import grid_arm
from stiefel_book.experiments import fair_fight, run_experiment
from stiefel_book.results import results_path, write_results


def test_the_grid_grows_upward_while_the_largest_rung_scores_best():
    assert next_rungs({1e-3: 0.5, 3e-3: 0.6, 1e-2: 0.7}, [1e-3, 3e-3, 1e-2], 3e-3) == (3e-2,)


def test_the_grid_grows_downward_to_lr_zero_past_the_ladder_bottom():
    assert next_rungs({3e-6: 0.5, 1e-5: 0.4}, [3e-6, 1e-5], 1e-5) == (1e-6,)
    assert next_rungs({1e-6: 0.6, 3e-6: 0.5}, [1e-6, 3e-6], 3e-6) == (0.0,)
    assert next_rungs({0.0: 0.7, 1e-6: 0.6}, [0.0, 1e-6], 3e-6) == ()  # lr 0 is a true boundary


def test_an_interior_choice_stops_the_growth():
    scores = {1e-3: 0.5, 3e-3: 0.8, 1e-2: 0.6}
    assert next_rungs(scores, scores, 3e-3) == ()
    assert is_interior(scores, 3e-3) and not is_interior({1e-3: 0.9, 3e-3: 0.8}, 1e-3)


def test_ties_go_to_the_rung_nearest_the_start_so_a_plateau_is_not_walked():
    plateau = {3e-4: 1.0, 1e-3: 1.0, 3e-3: 1.0, 1e-2: 1.0}
    assert choice(plateau, 3e-3) == 3e-3
    assert next_rungs(plateau, plateau, 3e-3) == ()


def test_the_score_is_the_mean_over_the_last_fifth_of_training():
    history = [{"epoch": e, "val_acc": a} for e, a in ((20, 0.0), (80, 0.1), (90, 0.5), (100, 1.0))]
    assert late_score(history, 100) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="too short"):
        late_score(history[:2], 100)


def _sweep(scores_by_arm: dict, seeds=(100, 101)) -> dict:
    runs = {}
    for arm, scores in scores_by_arm.items():
        for lr, value in scores.items():
            name = "frozen" if lr == 0 else grid_arm(arm, "qklr", lr)
            for seed in seeds:
                runs[f"{name}/{seed}"] = {"history": [{"epoch": 1500, "val_acc": value}]}
    return {"config": {"seeds": list(seeds), "task": {"epochs": 1500, "lr": 3e-3}}, "runs": runs}


def test_the_comparison_resolves_each_arms_lr_before_its_runs_and_refuses_an_open_sweep(tmp_path):
    config = dataclasses.replace(fair_fight.PROFILES["ci"], arms=("baseline",))
    with pytest.raises(ValueError, match="no W_Q, W_K lr sweep yet"):
        fair_fight.resolve(config, tmp_path)
    sweep_file = results_path("grokking_qk_lr", config.sweep_profile, tmp_path)
    write_results(_sweep({"baseline": {1e-3: 0.9, 3e-3: 0.8, 3e-4: 0.7}}), sweep_file)
    assert dict(fair_fight.resolve(config, tmp_path).qk_lrs) == {"baseline": 1e-3}
    write_results(_sweep({"baseline": {1e-3: 0.7, 3e-3: 0.8}}), sweep_file)  # the choice sits on the grid's edge
    with pytest.raises(ValueError, match=r"not settled \['baseline'\]"):
        fair_fight.resolve(config, tmp_path)
    partial = _sweep({"baseline": {1e-3: 0.9}})
    del partial["runs"]["baseline@qklr=0.001/101"]  # one of two seeds: nothing to choose yet
    write_results(partial, sweep_file)
    with pytest.raises(ValueError, match=r"not settled \['baseline'\]"):
        fair_fight.resolve(config, tmp_path)


def test_a_sweep_run_trains_the_baselines_w_q_w_k_at_their_own_lr(tmp_path):
    config = dataclasses.replace(
        fair_fight.SWEEP_PROFILES["ci"],
        task=dataclasses.replace(fair_fight.SWEEP_PROFILES["ci"].task, epochs=20, log_every=10),
    )
    name = grid_arm("baseline", "qklr", LADDER[0])
    results = run_experiment(
        "grokking_qk_lr",
        "ci",
        config=config,
        arms=[name, "frozen"],
        directory=tmp_path,
        checkpoints=tmp_path / "ck",
        progress=False,
    )
    tiny, frozen = results["runs"][f"{name}/100"], results["runs"]["frozen/100"]
    assert set(tiny["history"][-1]) <= set(fair_fight.KEPT_METRICS)
    # at lr 1e-6 W_Q barely moves (decay and steps both scale with the lr): its norm stays the frozen one's
    assert tiny["final"]["norm/attn.W_Q"] == pytest.approx(frozen["final"]["norm/attn.W_Q"], rel=1e-3)
    # the rest of the model trains at the task's lr in both: their losses agree to the W_Q, W_K drift
    assert tiny["final"]["train_loss"] == pytest.approx(frozen["final"]["train_loss"], rel=5e-2)


def test_the_family_reads_each_comparison_in_one_of_four_words_with_holm_across_it():
    from stiefel_book.findings.fair_fight import answers, family_rows

    seeds = range(20)
    values = {
        "baseline": {s: 0.6 + 0.01 * (s % 3) for s in seeds},
        "stiefel": {s: 0.91 + 0.01 * (s % 2) for s in seeds},  # far ahead of AdamW
        "frozen": {s: 0.91 + 0.01 * ((s + 1) % 2) for s in seeds},
    }  # within 1 pp of the rule, seed by seed
    rows = family_rows(values, ("stiefel", "frozen"), ("baseline", "stiefel"), margin=0.02)
    words = {(r["arm"], r["reference"]): r["verdict"] for r in rows}
    assert words == {
        ("stiefel", "baseline"): "higher",
        ("frozen", "baseline"): "higher",
        ("frozen", "stiefel"): "equivalent",
    }
    assert all(r["p_holm"] >= r["p"] for r in rows)
    assert answers(rows)["tuned_baseline"]["past"] == (20, 0) and answers(rows)["qk_norm"] is None


def test_a_run_that_diverges_is_a_result_of_the_sweep_scored_zero(monkeypatch, tmp_path):
    from stiefel_book.tasks import grokking
    from stiefel_core.step_checks import NonFiniteGradientError

    def diverge(*args, **kwargs):
        raise NonFiniteGradientError("AdamW + CayleyAdam: the gradients hold inf or nan")

    monkeypatch.setattr(grokking, "run", diverge)
    checkpoint = tmp_path / "run.pt"
    checkpoint.write_bytes(b"stale")
    outcome = fair_fight.study(fair_fight.SWEEP_PROFILES["ci"]).run("cayley_adam@qklr=3", 100, "cpu", checkpoint)
    assert outcome["diverged"] == "AdamW + CayleyAdam" and not checkpoint.exists()
    assert late_score(outcome["history"], fair_fight.SWEEP_PROFILES["ci"].task.epochs) == 0.0


def _family_dicts(name, **data):
    """The declared family ``name`` read by the family reader from hand-made files (``stem=results``)."""
    from stiefel_book import protocol
    from stiefel_book.families import as_dict, read_family

    f = protocol.family(name)
    files = {stem: data.get(stem.removesuffix("-full")) for stem in f.results + f.reads}
    return [as_dict(r) for r in read_family(name, files)]


def test_the_declared_families_judge_every_arm_the_comparisons_ran_and_one_holm_reads_everywhere():
    from stiefel_book import protocol
    from stiefel_book.claim_verdicts import fair_fight_verdict
    from stiefel_book.findings import fair_fight as ff

    judged = set(fair_fight.FAIR_ARMS) | {"frozen"} | set(fair_fight.PEER_ARMS) | set(fair_fight.SCALE_ARMS)
    pairs = protocol.family("grokking_fair").pairs + protocol.family("grokking_fair_scale").pairs
    declared = {arm for pair in pairs for arm in pair}
    assert declared == judged
    later = {a for a, _ in protocol.family("grokking_fair_ablation").pairs}
    assert later == set(fair_fight.VARIANT_ARMS)  # the later variants: a family of their own

    def results(arms, shift):  # a fake results file: arm a, seed s ends at 0.6 + shift(a) + a noise of (a, s)
        runs = {
            f"{a}/{s}": {"final": {"val_acc": 0.6 + shift.get(a, 0.0) + 0.03 * ((s * (len(a) + 3)) % 7) / 7}}
            for a in arms
            for s in range(20)
        }
        return {"config": {"qk_lrs": [[a, 1e-3] for a in arms]}, "runs": runs}

    shift = {"stiefel": 0.03, "frozen": 0.03, **{p: 0.03 for p in ff.PEERS}}
    fair = results(("baseline", "no_decay_qk", "stiefel", "frozen"), shift)
    peers = results(ff.PEERS, shift)
    rows = _family_dicts("grokking_fair", grokking_fair=fair, grokking_fair_peers=peers)
    alone = ff.family_rows(ff.finals(fair), ("stiefel",), ("baseline",), margin=0.02)[0]
    row = ff.answers(rows)["tuned_baseline"]
    assert row["p_holm"] > alone["p_holm"]  # corrected over the whole family, not over one comparison
    verdict = fair_fight_verdict(rows, [], None, 0.02, 0.05)
    assert verdict.headline.startswith(row["verdict"])


def test_the_later_variants_are_judged_in_their_own_family_and_an_idle_cap_reads_untested():
    from stiefel_book.findings import ablation as ablation_findings
    from stiefel_book.findings import fair_fight as ff

    def results(arms, shift):
        runs = {
            f"{a}/{s}": {"final": {"val_acc": 0.6 + shift.get(a, 0.0) + 0.03 * ((s * (len(a) + 3)) % 7) / 7}}
            for a in arms
            for s in range(20)
        }
        return {"config": {"qk_lrs": [[a, 3e-3] for a in arms]}, "runs": runs}

    shift = {"stiefel": 0.05, "no_trust_region": 0.05}  # no projector falls to AdamW's level
    fair = results(("baseline", "stiefel"), shift)
    variants = results(fair_fight.VARIANT_ARMS, shift)
    rows = _family_dicts("grokking_fair_ablation", grokking_fair=fair, grokking_fair_ablation=variants)
    assert {(r["arm"], r["reference"]) for r in rows} == {
        ("no_projector", "stiefel"),
        ("no_trust_region", "stiefel"),
        ("no_projector", "baseline"),
        ("no_trust_region", "baseline"),
    }
    unrun = _family_dicts("grokking_fair_ablation", grokking_fair=fair)  # no runs yet: every pair kept, no verdict
    assert len(unrun) == 4 and all(r["n"] == 0 and r["verdict"] == "inconclusive" for r in unrun)
    tuned = {r["variant"]: r for r in ablation_findings.tuned_rows(rows, ff.finals(fair, variants), cap_idle=True)}
    assert tuned["no_projector"]["verdict"] == "higher" and tuned["no_projector"]["untested"] is None
    assert tuned["no_trust_region"]["untested"] == ablation_findings.CAP_IDLE
    busy = ablation_findings.tuned_rows(rows, None, cap_idle=False)
    assert all(r["untested"] is None for r in busy)


def test_the_cap_reads_idle_only_where_the_decay_map_saw_it_never_bind_at_the_full_rules_tuned_lr():
    from stiefel_book.findings.ablation import cap_idle

    task = {"p": 31, "lr": 3e-3, "epochs": 1500, "seeds": [0]}

    def decay_map(capped):
        return {"config": {"task": task}, "runs": {"stiefel@wd=1/0": {"final": {"trust_capped": capped}}}}

    fair = {"config": {"task": {**task, "seeds": [0, 1]}, "qk_lrs": [["stiefel", 3e-3]]}}
    assert cap_idle(fair, decay_map(0.0))
    assert not cap_idle(fair, decay_map(0.01))  # the cap bound at some step
    assert not cap_idle({**fair, "config": {**fair["config"], "qk_lrs": [["stiefel", 1e-2]]}}, decay_map(0.0))
    assert not cap_idle(fair, None) and not cap_idle(None, decay_map(0.0))
