"""The routing chapter's findings, figure and explorer, on synthetic results dicts: verdicts in the
book's four words with Holm across a family, the sanity check, curves with bands, the lr x decay
cells, and "not yet run" before the runs."""

import numpy as np
import pytest

from stiefel_book.findings import routing as fr
from stiefel_book.labels import label
from stiefel_book.wording import routing as rw


def judged(values: dict[str, list[float]], metric: str = "val_acc", steps: int = 100) -> dict:
    """A judged results file: ``values[arm][seed]`` is the arm's final metric on that seed."""
    runs = {}
    for arm, finals in values.items():
        for seed, v in enumerate(finals):
            history = [{"epoch": s, metric: v * s / steps} for s in (50, steps)]
            runs[f"{arm}/{seed}"] = {"history": history, "final": history[-1], "qk_lr": 3e-3}
    return {"config": {"steps": steps, "weight_decay": 0.1}, "runs": runs}


def rows_of(task: str, results: dict) -> list[dict]:
    """The task's declared family (``routing_<task>``) read by the family reader from a hand-made file
    (a run without the induction score the family counts beside its verdict records none past it)."""
    from stiefel_book.families import read_family

    runs = {k: {**r, "final": {"induction_max": 0.0, **r["final"]}} for k, r in results["runs"].items()}
    return fr.as_rows(read_family(fr.TASKS[task][0], {f"{task}-full": {**results, "runs": runs}}))


def test_frozen_frames_far_below_read_worse_and_the_sanity_check_holds():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.9, 1.0, 10)
    stiefel = base + rng.normal(0.001, 0.001, 10)
    results = judged({"baseline": base, "stiefel": stiefel, "frozen": stiefel - rng.normal(0.5, 0.01, 10)})
    rows = rows_of("mqar", results)  # its declared margin: 2 pp
    a = fr.answers(rows)
    assert a["frozen"]["verdict"] == "lower" and a["frozen"]["reading"] == "worse"
    assert -52 < a["frozen"]["mean"] < -48  # percentage points
    assert fr.sanity(a["frozen"]) == "holds"
    assert a["tuned_baseline"]["verdict"] == "equivalent"  # 0.1 pp apart, margin 2 pp
    assert a["qk_norm"] is None and fr.sanity(None) == "not yet run"
    assert len(rows) == 3  # stiefel-baseline, frozen-baseline, frozen-stiefel: one family, Holm across it


def test_a_lower_loss_reads_better_and_an_equal_frozen_arm_fails_the_sanity_check():
    rng = np.random.default_rng(1)
    loss = rng.uniform(1.0, 1.1, 10)
    stiefel = loss - rng.normal(0.3, 0.01, 10)
    results = judged({"baseline": loss, "stiefel": stiefel, "frozen": stiefel + rng.normal(0, 1e-3, 10)}, "val_loss")
    endpoint = fr.TASKS["induction"][1]
    a = fr.answers(rows_of("induction", results))  # its declared margin: 0.05 nats
    assert a["tuned_baseline"]["verdict"] == "lower" and a["tuned_baseline"]["reading"] == "better"
    assert fr.sanity(a["frozen"]) == "fails"
    assert rw.result_text(a["tuned_baseline"], endpoint).startswith("lower (better), -0.29")


def test_curves_band_the_seeds_and_cells_place_each_run_at_its_lr_and_decay():
    results = judged({"stiefel": [0.2, 0.6], "frozen": [0.1, 0.1]})
    c = fr.curves(results, "val_acc")["stiefel"]
    assert c["steps"] == [50, 100] and c["low"] == [0.1, 0.2] and c["high"] == [0.3, 0.6] and c["n"] == 2
    sweep = {"config": {"task": {"weight_decay": 0.1}}, "runs": {"stiefel@qklr=0.01/100": results["runs"]["stiefel/0"]}}
    sweep["runs"]["stiefel@qklr=0.01/100"] = {**results["runs"]["stiefel/0"], "qk_lr": 1e-2}
    dmap = {"config": {"task": {"weight_decay": 0.1}}, "runs": {"stiefel@wd=1/0": {**results["runs"]["stiefel/1"]}}}
    dmap["runs"]["stiefel@wd=1/0"]["weight_decay"] = 1.0
    cells = fr.lr_decay_cells(results, sweep, dmap, None)
    assert set(cells) == {(3e-3, 0.1), (0.0, 0.1), (1e-2, 0.1), (3e-3, 1.0)}
    cell = fr.cell_curves(cells, 1e-2, 0.1, "val_acc")
    assert set(cell) == {"stiefel", "frozen"}  # frozen frames stand in every cell of their decay
    from stiefel_book.widgets.routing import lr_decay_explorer

    ex = lr_decay_explorer(cells, "val_acc", "query accuracy")
    assert "Stiefel rule: final 0.4 (2 seeds)" in ex.set(lr=3e-3, weight_decay=0.1).text
    assert "Frozen frames" in ex.text and "stiefel" not in ex.text and "frozen" not in ex.text
    assert "no run at this cell" in ex.set(lr=1e-2, weight_decay=1.0).text
    assert ex.children[0].layout.flex_flow == "row wrap"
    assert lr_decay_explorer(cells, "val_acc", "query accuracy", lr=1e-2, weight_decay=0.1).values == {
        "lr": 1e-2, "weight_decay": 0.1}
    with pytest.raises(ValueError, match="not among"):
        lr_decay_explorer(cells, "val_acc", "query accuracy", lr=5e-2)


def test_the_explorer_reads_the_committed_ten_seed_runs():
    """The routing explorer's cells are the committed full-scale files (ten judged seeds an arm),
    not a live run at small scale."""
    from stiefel_book.widgets.routing import lr_decay_explorer

    cells = fr.committed_cells("induction")
    assert len(cells[(1e-2, 1.0)]["stiefel"]) == 10 and len(cells[(3e-2, 1.0)]["baseline"]) == 10
    assert len(cells[(0.0, 3.0)]["frozen"]) == 10
    ex = lr_decay_explorer(cells, "val_loss", "loss on the repeat (nats)", lr=1e-2, weight_decay=1.0)
    assert "The Stiefel rule: final" in ex.text and "(10 seeds)" in ex.text
    # at the task's decay the judged seeds alone: never pooled with the sweep's selection seeds
    assert len(cells[(1e-2, 0.1)]["stiefel"]) == 10 and len(cells[(0.0, 0.1)]["frozen"]) == 10
    assert max(len(h) for arms in cells.values() for h in arms.values()) == 10
    assert "(16 seeds)" not in ex.set(lr=1e-2, weight_decay=0.1).text and "(10 seeds)" in ex.text


def test_a_cell_shows_judged_seeds_or_selection_seeds_never_both():
    """The sweep's selection seeds stand only where no judged seed of that arm ran, and a seed that
    two files hold (the decay map and the judged runs at the task's decay) counts once."""
    results = judged({"stiefel": [0.2, 0.6], "baseline": [0.1, 0.3]})
    for run in results["runs"].values():
        run["qk_lr"] = 1e-2
    selection = {**results["runs"]["stiefel/0"], "qk_lr": 1e-2}
    sweep = {"config": {"task": {"weight_decay": 0.1}},
             "runs": {f"{arm}@qklr=0.01/{seed}": selection for arm in ("stiefel", "muon") for seed in (100, 101, 102)}}
    dmap = {"config": {"task": {"weight_decay": 0.1}}, "runs": {"stiefel@wd=0.1/0": results["runs"]["stiefel/0"]}}
    cells = fr.judged_first(sweep, results, dmap)
    assert {arm: len(h) for arm, h in cells[(1e-2, 0.1)].items()} == {"baseline": 2, "stiefel": 2, "muon": 3}
    assert len(fr.lr_decay_cells(sweep, results, dmap)[(1e-2, 0.1)]["stiefel"]) == 5  # pooled: 3 selection + 2 judged


def sweep_file(scores: dict[str, dict[float, list[float]]], metric: str = "val_acc", steps: int = 100) -> dict:
    """A sweep's results file: ``scores[arm][lr][i]`` is the late metric of selection seed 100 + i."""
    runs = {}
    for arm, rungs in scores.items():
        for lr, values in rungs.items():
            for i, v in enumerate(values):
                history = [{"epoch": s, metric.lstrip("-"): v} for s in (10, 90, steps)]
                runs[f"{arm}@qklr={lr:g}/{100 + i}"] = {"history": history}
    task = {"steps": steps, "lr": 1e-3}
    return {"config": {"task": task, "seeds": [100, 101], "metric": metric}, "runs": runs}


def test_the_sweep_rows_choose_the_best_rung_and_mark_an_edge():
    sweep = sweep_file(
        {
            "baseline": {3e-4: [0.5, 0.6], 1e-3: [0.9, 0.8], 3e-3: [0.4, 0.4]},
            "stiefel": {3e-4: [0.2, 0.2], 1e-3: [0.5, 0.5], 3e-3: [0.9, 1.0]},
            "muon": {3e-4: [0.2, 0.2], 1e-3: [0.5]},  # 1e-3 lacks a seed: not scored yet
        }
    )
    rows = {r["arm"]: r for r in fr.sweep_rows(sweep, ("baseline", "stiefel", "muon", "qk_norm"))}
    assert rows["baseline"]["chosen"] == 1e-3 and rows["baseline"]["interior"]
    assert abs(rows["baseline"]["scores"][1e-3] - 0.85) < 1e-12
    assert rows["stiefel"]["chosen"] == 3e-3 and not rows["stiefel"]["interior"]  # its best rung is the grid's top
    assert rows["muon"]["scores"] == {3e-4: 0.2} and rows["qk_norm"]["chosen"] is None


def test_a_lower_is_better_sweep_keeps_its_metric_sign_and_chooses_the_lowest():
    sweep = sweep_file({"baseline": {3e-4: [2.0, 2.0], 1e-3: [1.5, 1.6], 3e-3: [1.9, 1.8]}}, metric="-val_bpc")
    (row,) = fr.sweep_rows(sweep, ("baseline",))
    assert row["chosen"] == 1e-3 and row["interior"] and abs(row["scores"][1e-3] - 1.55) < 1e-12


def test_an_inconclusive_sanity_check_is_not_shown_rather_than_failed():
    assert fr.sanity({"reading": "inconclusive"}) == "not shown"
    assert fr.sanity({"reading": "better"}) == "fails" and fr.sanity({"reading": "equivalent"}) == "fails"


def test_the_sweep_figure_draws_a_line_per_arm_and_circles_each_choice():
    import matplotlib

    matplotlib.use("Agg")
    from stiefel_book.plots.routing import sweep_figure

    sweep = sweep_file(
        {"baseline": {3e-4: [0.5, 0.6], 1e-3: [0.9, 0.8], 3e-3: [0.4, 0.4]}, "stiefel": {3e-4: [0.2, 0.2]}}
    )
    rows = fr.sweep_rows(sweep, ("baseline", "stiefel"))
    fig = sweep_figure({"recall": (rows, "late accuracy (%)", 100.0)})
    (ax,) = fig.axes[:1]
    drawn = [np.round(line.get_ydata(), 9).tolist() for line in ax.lines]
    assert drawn == [[55.0, 85.0, 40.0], [20.0]]
    circled = [np.round(c.get_offsets()[0], 9).tolist() for c in ax.collections]
    assert circled == [[1e-3, 85.0], [3e-4, 20.0]]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["3e-4", "1e-3", "3e-3"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["AdamW", "the Stiefel rule"]  # under the panels


def test_the_learning_curves_put_the_tasks_side_by_side_with_one_legend():
    import matplotlib

    matplotlib.use("Agg")
    from stiefel_book.plots.routing import learning_curves

    results = judged({"baseline": [0.9, 0.8], "stiefel": [0.7, 1.0]})
    curves = fr.curves(results, "val_acc")
    fig = learning_curves({"recall": (curves, "accuracy"), "induction": (curves, "accuracy")})
    first, second = fig.axes
    assert first.get_position().x1 < second.get_position().x0  # side by side
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["AdamW", "the Stiefel rule"]
    assert np.allclose(first.lines[1].get_ydata(), [0.425, 0.85])  # the Stiefel rule's mean at steps 50 and 100


def test_both_arms_at_the_ceiling_on_every_seed_qualify_the_verdict_with_its_regime():
    assert not fr.at_ceiling({"baseline": (10, 10), "stiefel": (9, 10)}) and not fr.at_ceiling({})
    assert rw.ceiling_note({"baseline": (10, 10), "stiefel": (9, 10)}, 0.9) is None
    note = rw.ceiling_note({"baseline": (10, 10), "stiefel": (10, 10), "frozen": (0, 10)}, 0.9)
    assert "90 %" in note


def test_the_count_beside_a_verdict_names_its_threshold_and_an_induction_head_in_words():
    counts = fr.past({"baseline": {0: 0.2, 1: 0.95}, "frozen": {0: 0.1, 1: 0.3}}, 0.5)
    assert counts == {"baseline": (1, 2), "frozen": (0, 2)}
    text = rw.count_text(counts, 0.5, "induction_max", label)
    assert "induction head" in text and "0.5" in text and "AdamW 1 of 2" in text
    assert "90 %" in rw.count_text(counts, 0.9, "val_acc", label)
    assert rw.count_text({}, 0.9, "val_acc", label) == ""


def test_the_routing_claim_is_pending_before_any_run_then_names_each_tasks_verdict():
    from stiefel_book.claim_new import routing_verdict

    assert routing_verdict({"mqar": [], "induction": [], "charlm": []}).word == "pending"
    rng = np.random.default_rng(4)
    loss = rng.uniform(0.1, 0.2, 10)
    results = judged({"baseline": loss + 2.0, "stiefel": loss, "frozen": loss + 4.0, "qk_norm": loss + 2.0}, "val_loss")
    rows = rows_of("induction", results)
    v = routing_verdict({"mqar": [], "induction": rows, "charlm": []})
    assert v.word == "new"
    assert "lower (better), -2 nats" in v.headline and "not yet run" in v.headline and "holds" in v.sentence
    assert v.tuned.word == "lower"  # its tuned axis: the verdict word the judged task measured, not parsed text


def test_a_new_results_tuned_word_is_its_axis_not_its_headline():
    from stiefel_book.claim_box import Axis, Verdict
    from stiefel_book.claim_new import shared_word
    from stiefel_book.claims_table import ClaimsTable

    v = Verdict("new", "higher here, lower there", "", tuned=Axis("inconclusive", "the readings"))
    assert ClaimsTable._axis_words(v) == ("—", "inconclusive")
    assert ClaimsTable._axes(v) == ("— (not in the preprint)", "the readings")
    assert ClaimsTable._axis_words(Verdict("new", "higher", "")) == ("—", "—")
    assert shared_word({"a": "lower", "b": "lower"}) == "lower" and shared_word({}) == "—"
    assert shared_word({"a": "lower", "b": "higher", "c": "lower"}) == "lower (a, c); higher (b)"


def test_soft_solvers_are_the_runs_that_solve_the_repeat_with_no_head_past_the_threshold():
    def run(acc, head):
        return {"final": {"val_acc": acc, "induction_max": head}}

    results = {
        "runs": {
            "qk_norm/0": run(0.98, 0.44),
            "qk_norm/1": run(0.05, 0.05),
            "qk_norm/2": run(0.99, 0.46),
            "stiefel/0": run(0.97, 0.9),
            "frozen/0": run(0.03, 0.06),
        }
    }
    assert fr.soft_solvers(results) == {"qk_norm": (2, 0.46)}
    assert fr.soft_solvers(None) == {}


def decay_map_file(losses: dict[str, dict[float, list[float]]]) -> dict:
    """An ``induction_decay_map`` file: ``losses[arm][λ][seed]`` is the final loss on the repeat."""
    runs = {}
    for arm, by_decay in losses.items():
        for wd, finals in by_decay.items():
            for seed, v in enumerate(finals):
                history = [{"epoch": s, "val_loss": v + 1.0 / s} for s in (100, 200)]
                runs[f"{arm}@wd={wd:g}/{seed}"] = {"history": history, "final": history[-1]}
    return {"config": {"weight_decays": [0.0, 1.0], "seeds": list(range(10))}, "runs": runs}


def test_the_routing_map_reads_lower_loss_as_better_on_the_seeds_every_cell_finished():
    from stiefel_book import protocol
    from stiefel_book.findings import routing_map as rm
    from stiefel_book.plots.regimes import decay_map_figure

    rng = np.random.default_rng(2)
    base = {wd: list(0.3 + rng.normal(0, 0.001, 6)) for wd in (0.0, 1.0)}
    stiefel = {wd: [v + rng.normal(0, 0.001) for v in vs] for wd, vs in base.items()}
    frozen = {wd: [v + 4.0 for v in vs] for wd, vs in base.items()}
    stiefel[1.0] = stiefel[1.0][:5]  # seed 5 unfinished in one cell: no cell reads it
    cells = rm.map_cells(
        decay_map_file({"baseline": base, "stiefel": stiefel, "frozen": frozen}),
        protocol.load().families["routing_decay_map"],
        lr=1e-2,
        lr_factors=[1.0] * 200,
    )
    assert {c.comparison.n for c in cells} == {5}
    words = {(c.b, c.weight_decay): c.verdict for c in cells}
    assert words[("frozen", 0.0)] == words[("frozen", 1.0)] == "lower"  # 4 nats less loss: better
    assert words[("baseline", 0.0)] == "equivalent"  # ~0.001 nats apart, margin 0.05
    budget = {c.weight_decay: c.budget for c in cells}
    assert budget[0.0] == 0.0 and abs(budget[1.0] - 2.0) < 1e-12  # Σ lr·λ over the 200 steps
    fig = decay_map_figure(cells, unit="nats", digits=2, lower_is_better=True, step_name="step", quantity="loss")
    assert "(200)" in fig.axes[0].get_title()
    assert rm.seeds_read(None) == []


def test_a_decided_difference_under_the_margin_says_so_and_a_wide_one_does_not():
    row = {"verdict": "higher", "mean": 0.017}
    assert fr.under_margin(row, 0.02) and not fr.under_margin({**row, "mean": -0.03}, 0.02)
    assert "±0.02 bits" in rw.margin_note(row, 0.02, "bits per character")
    assert rw.margin_note({**row, "mean": 0.03}, 0.02, "bits per character") is None
    assert rw.margin_note({**row, "verdict": "inconclusive"}, 0.02, "bits per character") is None
    assert rw.margin_note(None, 0.02, "bits per character") is None


def test_the_maps_cell_at_the_task_decay_is_the_judged_runs_only_when_their_configuration_is_the_maps():
    from stiefel_book.findings import routing_map as rm

    task = {"lr": 3e-3, "weight_decay": 0.1, "qk_lrs": [["stiefel", 1e-2]], "seeds": [0, 1]}
    dmap = {"config": {"task": task, "weight_decays": [0.0, 0.1], "seeds": [0, 1]}, "runs": {"stiefel@wd=0/0": {}}}
    judged = {"config": {**task, "seeds": list(range(10))}, "runs": {"stiefel/0": {"x": 1}, "stiefel/1": {"x": 2}}}
    merged = rm.with_judged(dmap, judged)
    assert merged["runs"]["stiefel@wd=0.1/1"] == {"x": 2} and "stiefel@wd=0.1/0" not in dmap["runs"]
    other = {**judged, "config": {**judged["config"], "qk_lrs": [["stiefel", 3e-2]]}}  # another lr: not the map's cell
    assert rm.with_judged(dmap, other) is dmap and rm.with_judged(None, judged) is None


def test_the_summary_answers_each_question_once_grouping_the_tasks_by_reading():
    from stiefel_book.wording.routing import summary

    rng = np.random.default_rng(6)
    loss = rng.uniform(0.3, 0.4, 10)
    tie = {"baseline": loss, "stiefel": loss + rng.normal(0, 0.3, 10), "frozen": loss + 4, "qk_norm": loss + 3}
    win = {"baseline": loss + 1, "stiefel": loss, "frozen": loss + 4, "qk_norm": loss + 3}
    tie_rows, win_rows = (rows_of("induction", judged(v, "val_loss")) for v in (tie, win))
    assert summary({"mqar": [], "induction": []}, label) == ""
    text = summary({"mqar": tie_rows, "induction": tie_rows, "charlm": []}, label, notes={"mqar": "a note"})
    assert "on none of" in text and text.index("the induction task (a note)") < text.index("Frozen")  # notes follow
    assert text.endswith("Not yet run: the character model.")
    mixed = summary({"mqar": tie_rows, "induction": win_rows}, label)
    assert "on none of" not in mixed and mixed.index("the induction task") < mixed.index("cannot be told")


def test_the_maps_mean_rows_give_each_arms_level_and_blank_a_cell_missing_a_seed():
    from stiefel_book.findings import routing_map as rm

    results = decay_map_file({"baseline": {0.0: [1.0, 3.0], 1.0: [0.5]}, "stiefel": {0.0: [0.2, 0.4], 1.0: [0.1, 0.3]}})
    rows = dict(rm.mean_rows(results, [0, 1], ("baseline", "stiefel")))
    assert np.allclose(rows["stiefel"], [0.305, 0.205])  # the final record is the loss + 1/200
    assert np.isclose(rows["baseline"][0], 2.005) and rows["baseline"][1] is None  # seed 1 missing at λ = 1


def test_the_summary_gives_each_other_arm_its_own_sentence_of_at_most_two_results():
    """Issue 51: no generated sentence chains more than two results (the other arms were one
    sentence of three, joined by semicolons)."""
    import re

    from stiefel_book import declared
    from stiefel_book.wording.routing import summary

    text = summary(declared.routing(), label, notes=declared.routing_notes())
    sentences = re.split(r"(?<=\.) (?=[A-Z])", text)
    assert all(s.count(";") == 0 and s.count(", and ") <= 1 for s in sentences), sentences
    no_decay = [s for s in sentences if s.startswith(label("no_decay_qk"))]
    assert len(no_decay) == 1 and "better" in no_decay[0] and "equivalent" in no_decay[0]
