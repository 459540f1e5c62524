"""The claims table and the README's generated blocks."""

import json

from stiefel_book import claims
from stiefel_book.experiments.results import checkout_root
from tools import readme as readme_tool

PACKAGE_ROOT = checkout_root()


def test_the_readme_is_what_the_results_and_certificates_say():
    readme = (PACKAGE_ROOT / "README.md").read_text()
    assert readme_tool.render_readme(readme) == readme, (
        "README is stale: run `python -m stiefel_book claims --write-readme`"
    )


def test_every_claim_is_measured_or_says_why_not(tmp_path, monkeypatch):
    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path))  # no results files at all
    table = claims.claims_table()
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


def test_without_results_every_verdict_is_certified_or_pending(tmp_path, monkeypatch):
    monkeypatch.setenv("STIEFEL_RESULTS", str(tmp_path))
    table = claims.claims_table()
    assert {v.word for v in table.verdicts} <= {"certified", "pending"}
    short = table.short_markdown()
    assert "| Claim | The preprint | Verdict |" in short and "<details>" in table._repr_markdown_()
    assert "p1_steepest_descent]" not in short, "a chapter link shows its title, not its file name"


def test_a_claim_word_gathers_the_verdicts_it_rests_on():
    from stiefel_book.findings.summary import word_of

    assert word_of(["reproduced", "reproduced"]) == "reproduced"
    assert word_of(["not reproduced: the baseline is better", "not measured"]) == "not reproduced"
    assert word_of(["reproduced", "not reproduced: the gap narrows"]) == "partly"
    assert word_of(["qualitatively reproduced: it moves even less"]) == "partly"
    assert word_of(["not measured"]) == "pending"


def test_labels_name_arms_and_grid_arms_in_words():
    from stiefel_book.labels import label

    assert label("no_decay_qk") == "AdamW without decay on W_Q, W_K"
    assert label("stiefel@wd=0.3") == "the Stiefel rule, λ = 0.3"
    assert label("fixed_scale") == "a fixed orthonormal scale is what helps"


def test_the_map_has_one_count_everywhere():
    """The intro, the regimes chapter (takeaways, verdict, What changed), the claims table and the
    README quote the decay map's count from one function (findings.decay_map.count_text)."""
    from stiefel_book import pages
    from stiefel_book.experiments import get_config, load_results
    from stiefel_book.findings import decay_map, summary

    dmap = load_results("grokking_decay_map", "full")
    cells = summary.regimes_cells(dmap, get_config("grokking_decay_map", "full").task, pages.regimes_rules())
    assert [c.epoch for c in cells] == [dmap["config"]["task"]["epochs"]] * len(dmap["config"]["weight_decays"])
    count = decay_map.count_text(cells)
    regimes_claim = next(c for c in claims.CLAIMS if c.chapter == "book/regimes")
    assert count in regimes_claim.measure()
    assert count in pages.takeaways("regimes").data and count in pages.what_changed("regimes").data
    assert count in (PACKAGE_ROOT / "README.md").read_text()
    tuned = decay_map.tuned_cells(
        load_results("grokking_decay_map_tuned", "full"),
        get_config("grokking_decay_map", "full").task,
        pages.regimes_rules(),
    )
    if tuned is not None:  # the map at tuned lrs leads, with the same count everywhere
        tuned_count = decay_map.count_text(tuned)
        assert tuned_count in regimes_claim.measure()
        assert f"reads {summary.count_short(tuned)}" in regimes_claim.verdict().sentence  # the same count, in brief
        assert (
            tuned_count in pages.takeaways("regimes").data and tuned_count in (PACKAGE_ROOT / "README.md").read_text()
        )
    else:
        assert count in regimes_claim.verdict().sentence
    words = {w for c in cells for w in [c.verdict]}
    assert words <= {"higher", "lower", "equivalent", "inconclusive"}


def test_the_grokking_sentence_says_its_baseline_was_untuned_until_the_tuned_runs_exist():
    from stiefel_book import declared
    from stiefel_book.findings import p97_tuned, summary

    results, family = declared.grokking()
    untuned = summary.grokking_verdict(results, family, None)
    assert untuned.sentence.endswith(
        "Both trained W_Q, W_K at the task's rate (0.001), so AdamW's was untuned; the comparison at tuned rates has "
        "not run yet."
    )

    def run(epoch, end=0.999):
        history = [{"epoch": e, "val_acc": end if e >= epoch else 0.4} for e in range(0, 20_001, 1000)]
        return {"history": history, "final": history[-1], "provenance": {}}

    runs = {f"{arm}/{s}": run(3000 + 1000 * (arm == "stiefel")) for arm in ("baseline", "stiefel") for s in range(6)}
    rows = p97_tuned.fair_rows({"runs": runs}, 0.05, 0.02)
    tuned = summary.grokking_verdict(results, family, rows, {"baseline": 3e-6, "stiefel": 3e-4})
    assert "the comparison at tuned rates has not run yet" not in tuned.sentence
    assert "(AdamW 3e-6, the Stiefel rule 3e-4; 6 paired seeds)" in tuned.sentence
    assert "final accuracy equivalent (+0.0 pp)" in tuned.sentence  # every run ends at 99.9 %
    assert tuned.sentence.endswith("(with 6 paired seeds and 7 comparisons no difference of time could be decided).")
    assert "at tuned lrs: time to 90 % inconclusive (median epoch 4,000 against 3,000)" in tuned.headline
    assert tuned.word == "not reproduced"  # nothing higher at either rate


def test_the_record_behind_a_finding_is_collapsed_and_the_finding_is_not():
    from stiefel_book.pages import admonition

    shut = admonition("What changed", ["a line"], "note", collapsed=True).data
    assert ":class: note dropdown\n- a line\n:::" in shut
    assert ":class: tip\n" in admonition("Key takeaways", ["a finding"]).data
