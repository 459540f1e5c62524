"""The claims table and the README's generated blocks."""

import json
import re

import pytest

from stiefel_book import claims, claims_table, results_files
from stiefel_book.results import checkout_root
from tools import readme as readme_tool

PACKAGE_ROOT = checkout_root()


def _measured() -> tuple[list, list, list]:
    """Every claim measured once (rows, verdicts, short names), as claims_table does; a table of it takes any link."""
    table = claims_table.claims_table()
    return table.rows, table.verdicts, table.shorts


def _table(measured, link=None) -> claims_table.ClaimsTable:
    rows, verdicts, shorts = measured
    link = link or (lambda chapter: f"{chapter}.ipynb")
    return claims_table.ClaimsTable(list(rows), link, list(verdicts), list(shorts))


@pytest.fixture(scope="module")
def committed():
    """The claims measured once on the committed results (measuring takes most of this file's time)."""
    return _measured()


@pytest.fixture(scope="module")
def without_results(tmp_path_factory):
    """The claims measured once with no results files at all."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("STIEFEL_RESULTS", str(tmp_path_factory.mktemp("no_results")))
        return _measured()


def test_the_readme_is_what_the_results_and_certificates_say(committed, monkeypatch):
    monkeypatch.setattr(readme_tool, "claims_table", lambda link=None: _table(committed, link))
    readme = (PACKAGE_ROOT / "README.md").read_text()
    assert readme_tool.render_readme(readme) == readme, (
        "README is stale: run `python -m stiefel_book claims --write-readme`"
    )


def test_every_claim_is_measured_or_says_why_not(without_results):
    table = _table(without_results)  # no results files at all
    assert len(table.rows) == len(claims.CLAIMS)
    for claim, preprint, measured, chapter in table.rows:
        assert measured.startswith(("certified", "not yet measured")), (claim, measured)
    assert "| Claim |" in table._repr_markdown_()


def test_the_benchmark_block_lists_recorded_measurements(tmp_path):
    (tmp_path / "x.json").write_text(
        json.dumps(
            {"command": "python benchmarks/x.py", "date": "2026-11-29", "device": "cpu", "lines": ["ratio a / b: 2.00"]}
        )
    )
    block = readme_tool.bench_block(tmp_path)
    assert "ratio a / b: 2.00" in block and "python benchmarks/x.py" in block
    assert "No benchmark" in readme_tool.bench_block(tmp_path / "empty")


def test_without_results_every_verdict_is_certified_or_pending(without_results):
    table = _table(without_results)
    assert {v.word for v in table.verdicts} <= {"certified", "pending"}
    assert all(v.baseline is None and v.tuned is None for v in table.verdicts)  # no axis without runs
    short = table.short_markdown()
    assert short.startswith("| Claim |") and "<details>" in table._repr_markdown_()
    assert "baseline" in short.splitlines()[0] and "tuned" in short.splitlines()[0]  # the two axes' columns
    # one short line a claim: the claim in a few words, each axis a word; the full texts behind the toggle
    body = short.splitlines()[2:]
    assert len(body) == len(claims.CLAIMS) and all(len(c.short) <= 40 for c in claims.CLAIMS)
    assert all(
        cell.strip() in {"—", "higher", "lower", "equivalent", "inconclusive", "not shown"}
        for line in body
        for cell in line.split("|")[2:4]
    )
    assert all(c.claim in table.details_markdown() for c in claims.CLAIMS)
    assert "p1_steepest_descent]" not in short, "a chapter link shows its title, not its file name"


def test_labels_name_arms_and_grid_arms_in_words():
    from stiefel_book.labels import label

    assert label("no_decay_qk").endswith("without decay on W_Q, W_K")
    assert label("stiefel@wd=0.3") == "the Stiefel rule, λ = 0.3"
    assert "fixed orthonormal scale" in label("fixed_scale")


@pytest.fixture
def read_once():
    """Each results file parsed once in the test: the pages it compares read the same files again."""
    with results_files.reading_once():
        yield


def test_the_map_has_one_count_everywhere(committed, read_once):
    """The intro, the regimes chapter (takeaways, verdict, What changed), the claims table and the
    README quote the decay map's count from one function (wording.regimes.count_text)."""
    from stiefel_book import claim_verdicts, pages
    from stiefel_book.experiments import get_config, load_results
    from stiefel_book.findings import decay_map
    from stiefel_book.wording.regimes import count_text

    dmap = load_results("grokking_decay_map", "full")
    cells = decay_map.regimes_cells(dmap, get_config("grokking_decay_map", "full").task, pages.regimes_rules())
    assert [c.epoch for c in cells] == [dmap["config"]["task"]["epochs"]] * len(dmap["config"]["weight_decays"])
    count = count_text(cells)
    at = next(i for i, c in enumerate(claims.CLAIMS) if c.chapter == "book/regimes")
    regimes_measured, regimes_verdict = committed[0][at][2], committed[1][at]  # its measure(), its verdict()
    assert count in regimes_measured
    chapter = "".join(  # the regimes chapter's stored outputs (its takeaways, What changed), which nbval guards
        "".join(out.get("data", {}).get("text/markdown", ""))
        for cell in json.loads((PACKAGE_ROOT / "book" / "regimes.ipynb").read_text())["cells"]
        for out in cell.get("outputs", [])
    )
    assert count in chapter
    assert count in (PACKAGE_ROOT / "README.md").read_text()
    tuned = decay_map.tuned_cells(
        load_results("grokking_decay_map_tuned", "full"),
        get_config("grokking_decay_map", "full").task,
        pages.regimes_rules(),
    )
    if tuned is not None:  # the map at tuned lrs leads, with the same count everywhere
        tuned_count = count_text(tuned)
        assert tuned_count in regimes_measured
        assert f"reads {claim_verdicts.count_short(tuned)}" in regimes_verdict.sentence  # the same count, in brief
        assert tuned_count in chapter and tuned_count in (PACKAGE_ROOT / "README.md").read_text()
    else:
        assert count in regimes_verdict.sentence
    words = {w for c in cells for w in [c.verdict]}
    assert words <= {"higher", "lower", "equivalent", "inconclusive"}


def test_the_grokking_sentence_says_its_baseline_was_untuned_until_the_tuned_runs_exist():
    from stiefel_book import claim_verdicts as summary
    from stiefel_book import declared
    from stiefel_book.findings import p97_tuned

    results, family = declared.grokking()
    untuned = summary.grokking_verdict(results, family, None)
    assert "untuned" in untuned.sentence and "has not run yet" in untuned.sentence

    def run(epoch, end=0.999):
        history = [{"epoch": e, "val_acc": end if e >= epoch else 0.4} for e in range(0, 20_001, 1000)]
        return {"history": history, "final": history[-1], "provenance": {}}

    runs = {f"{arm}/{s}": run(3000 + 1000 * (arm == "stiefel")) for arm in ("baseline", "stiefel") for s in range(6)}
    rows = p97_tuned.fair_rows({"runs": runs}, 0.05, 0.02)
    tuned = summary.grokking_verdict(results, family, rows, {"baseline": 3e-6, "stiefel": 3e-4})
    assert "has not run yet" not in tuned.sentence
    assert "3e-6" in tuned.sentence and "3e-4" in tuned.sentence  # the tuned rates are named
    assert "equivalent" in tuned.sentence  # every run ends at 99.9 %
    assert "could be decided" in tuned.sentence  # 6 seeds under Holm over 7 cannot decide time
    assert "4,000" in tuned.headline and "3,000" in tuned.headline
    assert tuned.word == "not reproduced"  # nothing higher at either rate


def test_the_record_behind_a_finding_is_collapsed_and_the_finding_is_not():
    from stiefel_book.pages import admonition

    shut = admonition("What changed", ["a line"], "note", collapsed=True).data
    assert ":class: note dropdown\n" in shut and shut.endswith("- a line\n:::\n")
    assert ":class: tip\n" in admonition("Key takeaways", ["a finding"]).data


# --- two axes per claim (issue 52) ----------------------------------------------------------------


class _Family:
    margin, alpha, margin_unit = 0.5, 0.05, "pp"


def _row(verdict, mean, n, half):
    return {"verdict": verdict, "mean_pp": mean, "n": n, "ci_pp": (mean - half, mean + half)}


def test_an_inconclusive_family_that_could_not_reach_its_margin_reads_not_shown():
    from stiefel_book import claim_axes as ca

    weak = ca.row_reading("λ = 1", _row("inconclusive", -0.4, 4, 1.5), 13, _Family(), 2)
    assert weak.shown.startswith("not shown") and "smallest detectable effect" in weak.shown
    strong = ca.row_reading("λ = 1", _row("inconclusive", -0.1, 30, 0.05), 1, _Family(), 2)
    assert strong.shown == "inconclusive"  # it could have decided: the word stands
    assert ca.axis([weak]).word == "not shown" and ca.axis([weak, strong]).word == "inconclusive"
    floor = ca.time_reading("p = 97", "inconclusive", 6, 7, 0.05, (6, 6))
    assert floor.shown.startswith("not shown") and "6 of 6" in floor.text()
    assert ca.time_reading("p = 97", "inconclusive", 12, 1, 0.05, None).shown == "inconclusive"


def test_a_claim_reads_a_cross_only_where_an_axis_decided_against_it():
    from stiefel_book import claim_axes as ca
    from stiefel_book.claim_box import MARKS, Axis

    higher, lower, same, unshown = (Axis(w, "") for w in ("higher", "lower", "equivalent", "not shown"))
    assert ca.overall(higher, higher) == "reproduced" and ca.overall(higher, unshown) == "partly"
    assert ca.overall(lower, unshown) == "not reproduced" and ca.overall(unshown, same) == "not reproduced"
    assert ca.overall(unshown, unshown) == "not shown" and MARKS["not shown"] != MARKS["not reproduced"]
    assert ca.overall(None, None) == "pending"
    decided = ca.row_reading("", _row("lower", -0.3, 12, 0.1), 4, _Family(), 2)
    assert ca.axis([ca.row_reading("", _row("inconclusive", 0, 3, 2), 4, _Family()), decided]).word == "lower"


def test_every_experiment_claim_has_both_axes_from_the_results(committed):
    table = _table(committed)
    with_axes = [v for v in table.verdicts if v.baseline is not None]
    assert len(with_axes) >= 5
    words = {"higher", "lower", "equivalent", "inconclusive", "not shown"}
    assert all(v.baseline.word in words and v.tuned.word in words for v in with_axes)
    cifar = next(v for c, v in zip(claims.CLAIMS, table.verdicts) if c.chapter == "book/cifar10_patches")
    assert "0.05" not in str(cifar.baseline) + str(cifar.tuned)  # λ = 0.05, set after the runs, on neither axis
    for v in with_axes:  # a claim decided against on no axis never reads ✗
        if v.mark == "✗":
            assert {v.baseline.word, v.tuned.word} & {"lower", "equivalent"}


# --- one result a line in the verdict boxes (issue 51, item 5) -------------------------------------

_WORDS = re.compile(r"\b(higher|lower|equivalent|inconclusive|not shown)\b")


def _results_in(line: str) -> int:
    """How many results a line holds: its verdict words, or its ``;``-joined parts, whichever is more."""
    return max(len(_WORDS.findall(line)), line.count(";") + 1)


def test_a_verdict_box_gives_each_reading_a_line_of_its_own():
    from stiefel_book import claim_axes as ca
    from stiefel_book.claim_box import Verdict, claim_item

    readings = [
        ca.row_reading(f"task {i}", _row(w, m, 12, 0.1), 3, _Family())
        for i, (w, m) in enumerate([("inconclusive", 0.1), ("higher", 0.9), ("lower", -0.8)])
    ]
    map_three = ca.Reading(
        "",
        "higher",
        "",
        "",
        (("higher", "at 1 of 3", "λ = 0"), ("lower", "at 1 of 3", "λ = 1"), ("inconclusive", "at 1 of 3", "")),
    )
    v = Verdict("partly", "a; b; c", "", baseline=ca.axis(readings), tuned=ca.axis([map_three]))
    item = claim_item("A claim", "its words", v)
    lines = item.splitlines()
    assert max(map(_results_in, lines)) <= 2, item
    assert "a; b; c" not in item  # the headline chains results: the box reads the axes instead
    base = next(line for line in lines if "baseline" in line)
    assert "**higher**" in base and "task 1" in base  # the axis's word, with the reading that decided it
    assert sum("task" in line for line in lines) == 3 and sum("at 1 of 3" in line for line in lines) == 3
    cert = claim_item("P1", "certified", Verdict("certified", "one number: 1e-12", ""))
    assert len(cert.splitlines()) == 1 and "1e-12" in cert  # a certificate keeps its one line


def test_what_we_measure_gives_each_result_a_line_and_keeps_a_bracket_whole():
    from stiefel_book.claim_box import Verdict, claim_item, record_parts

    assert record_parts("a: 1 (b; c); d [e; f]; g") == ["a: 1 (b; c)", "d [e; f]", "g"]
    assert record_parts("one (x; y)") == ["one (x; y)"] and record_parts("") == []
    item = claim_item("P1", "certified", Verdict("certified", "1e-12", ""), record="r1; r2 (s; t); r3")
    lines = item.splitlines()
    assert [line.strip() for line in lines[-3:]] == ["- r1", "- r2 (s; t)", "- r3"]  # one result a line
    assert claim_item("P1", "c", Verdict("certified", "1e-12", ""), record="only").count("\n") == 1


def test_no_line_of_a_verdict_box_holds_more_than_two_results(committed):
    from stiefel_book import pages
    from stiefel_book.claim_box import claim_item

    boxes = {}
    for (claim, preprint, _, chapter), v in zip(committed[0], committed[1]):
        boxes.setdefault(chapter, []).append(claim_item(claim, preprint, v))
    for chapter, items in boxes.items():
        for line in "\n".join(items).splitlines():
            assert _results_in(line) <= 2, (chapter, line)
    assert sum("\n" in item for items in boxes.values() for item in items) >= 5  # the claims with axes: nested
    peers = pages.chapter_verdict("peers").data  # the chapter's box is these items
    assert all(item in peers for item in boxes["book/peers"])


def test_p97_at_its_checked_rate_joins_the_tuned_axis_once_every_judged_run_is_in(tmp_path, monkeypatch):
    """grokking_p97_checked: off the axis while running; then time first, the final accuracy only behind it."""
    from stiefel_book import axes
    from stiefel_book.results import write_results

    def run(epoch_at_90, end):
        history = [
            {"epoch": e, "val_acc": end if epoch_at_90 is not None and e >= epoch_at_90 else 0.4}
            for e in range(0, 10_001, 500)
        ]
        return {"history": history, "final": history[-1]}

    def write(runs):
        write_results({"config": {}, "runs": runs}, tmp_path / "grokking_p97_checked-full.json")

    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path))
    sooner = {f"stiefel/{s}": run(1000 + 10 * s, 1.0) for s in range(12)} | {
        f"baseline/{s}": run(None, 0.4) for s in range(12)
    }
    write({k: v for k, v in sooner.items() if k != "baseline/11"})  # one run short: not read
    assert axes._p97_checked() == []
    write(sooner)
    time, final = axes._p97_checked()
    assert time.where == final.where == "p = 97 at the checked model rate"
    assert time.word == "higher" and "first to 90 % on 12 of 12 seeds" in time.numbers
    assert final.word == "higher" and "final accuracy +60.0 pp" in final.numbers
    tied = {f"{arm}/{s}": run(2000, 1.0) for arm in ("stiefel", "baseline") for s in range(12)}
    write(tied)
    (time,) = axes._p97_checked()  # the gate stays shut: the final accuracy is not tested, so not on the axis
    assert time.word == "inconclusive" and "first to 90 % on 0 of 12 seeds" in time.numbers
