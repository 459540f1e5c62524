"""The declared protocol (book/protocol.yml): it loads, its families say what they must, and no
run predates a rule that claims to precede it (the check of the issue on inference). The check
itself is tested on small synthetic protocols and results that must fail and must pass."""

import hashlib
import json
from pathlib import Path

import pytest

from stiefel_book import protocol, protocol_audit, results_files
from stiefel_book.results import provenance

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
EXISTING = [
    "controls_p31",
    "controls_p97_time",
    "grokking_p97",
    "decay_map",
    "decay_map_controls",
    "trust_region",
    "ablation_grokking",
    "ablation_cifar10",
    "cifar10_protocol",
    "cifar10_long",
    "cifar10_size",
    "peers_grokking",
    "peers_cifar10",
]


def test_the_books_protocol_holds():
    p = protocol.load()
    assert protocol_audit.violations(p, BOOK / "results", BOOK) == []


def test_the_books_protocol_declares_its_families():
    p = protocol.load()
    assert set(EXISTING) | {"grokking_fair", "routing_mqar", "routing_induction", "routing_charlm"} <= set(p.families)
    for name in EXISTING:  # every existing family's margin and correction came after its runs
        f = p.families[name]
        assert f.set_after_runs and f.after_runs and f.correction == "holm" and f.alpha == 0.05
        assert f.results and all(results_files.find(BOOK / "results", stem) for stem in f.results), name
        assert f.chapters and all((BOOK / f"{c}.ipynb").exists() for c in f.chapters), name
    for name in ("controls_p31", "ablation_grokking", "cifar10_protocol"):  # the three, with their commits
        assert "commit" in p.families[name].record and "commit" not in p.families[name].after_runs
    assert protocol.margin("grokking_fair") == 2.0 and protocol.margin("cifar10_protocol") == 0.5
    assert protocol.alpha("decay_map") == 0.05
    with pytest.raises(protocol.ProtocolError, match="no equivalence margin"):
        protocol.margin("controls_p97_time")
    with pytest.raises(protocol.ProtocolError, match="declares no family 'nope'"):
        protocol.family("nope")


def test_hash_is_the_files_sha256(tmp_path):
    path = BOOK / "protocol.yml"
    assert protocol.protocol_hash() == hashlib.sha256(path.read_bytes()).hexdigest()[:12] == protocol.load().hash
    assert protocol.protocol_hash(tmp_path / "none.yml", missing_ok=True) is None
    with pytest.raises(protocol.ProtocolError, match="no protocol file"):
        protocol.protocol_hash(tmp_path / "none.yml")


def test_new_runs_record_the_protocols_hash(tmp_path, monkeypatch):
    import torch

    assert provenance(torch.device("cpu"), 1.0)["protocol"] == protocol.protocol_hash()
    monkeypatch.setenv("STIEFEL_PROTOCOL", str(tmp_path / "absent.yml"))
    assert provenance(torch.device("cpu"), 1.0)["protocol"] is None


# --- synthetic protocols ----------------------------------------------------------------------

FAMILY = """\
  {name}:
    declared: "{declared}"
    comparisons: "a − b"
    endpoint: "final accuracy"
    correction: holm
    alpha: 0.05
    margin_pp: 2.0
    margin_reason: "a reason"
    results: [toy-full]
{extra}"""


def write_protocol(tmp_path: Path, *families: str) -> Path:
    path = tmp_path / "protocol.yml"
    path.write_text("version: 1\nfamilies:\n" + "".join(families))
    return path


def family_text(name="toy", declared="2026-12-01T10:00Z", **extra) -> str:
    lines = "".join(f"    {k}: {json.dumps(v)}\n" for k, v in extra.items())
    return FAMILY.format(name=name, declared=declared, extra=lines)


def write_results(tmp_path: Path, dates: dict[str, str | None]) -> Path:
    runs = {key: {"final": {}, "provenance": {} if date is None else {"date": date}} for key, date in dates.items()}
    folder = tmp_path / "results"
    folder.mkdir(exist_ok=True)
    (folder / "toy-full.json").write_text(json.dumps({"runs": runs}))
    return folder


def write_chapter(tmp_path: Path, name: str, text: str) -> None:
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "source": ["print(note)"],
                "outputs": [{"output_type": "stream", "name": "stdout", "text": [text]}],
            }
        ]
    }
    (tmp_path / f"{name}.ipynb").write_text(json.dumps(notebook))


def check(tmp_path, *families, dates):
    loaded = protocol.load(write_protocol(tmp_path, *families))
    return protocol_audit.violations(loaded, write_results(tmp_path, dates), tmp_path)


def test_a_run_before_the_declaration_fails(tmp_path):
    dates = {"a/0": "2026-12-01T09:59:59+00:00", "a/1": "2026-12-01T11:00:00+00:00"}
    problems = check(tmp_path, family_text(), dates=dates)
    assert len(problems) == 1 and "a/0" in problems[0] and "set_after_runs" in problems[0]


def test_runs_after_the_declaration_pass(tmp_path):
    dates = {"a/0": "2026-12-01T10:00:01+00:00", "b/0": "2026-12-02T00:00:00+00:00"}
    assert check(tmp_path, family_text(), dates=dates) == []


def test_a_date_only_declaration_is_compared_by_day(tmp_path):
    family = family_text(declared="2026-12-01, before the runs")
    assert check(tmp_path, family, dates={"a/0": "2026-12-01T00:00:01+00:00"}) == []
    assert len(check(tmp_path, family, dates={"a/0": "2026-11-30T23:59:59+00:00"})) == 1


def test_a_run_without_a_date_fails(tmp_path):
    problems = check(tmp_path, family_text(), dates={"a/0": None})
    assert len(problems) == 1 and "no provenance date" in problems[0]


def test_only_the_familys_arms_are_governed(tmp_path):
    family = family_text(arms=["stiefel"])
    early = "2026-11-01T00:00:00+00:00"
    assert check(tmp_path, family, dates={"other/0": early}) == []
    assert len(check(tmp_path, family, dates={"stiefel/0": early, "stiefel@wd=1/0": early})) == 2


def test_set_after_runs_lets_early_runs_pass_but_then_needs_the_chapters_note(tmp_path):
    early = {"a/0": "2026-11-01T00:00:00+00:00"}
    after = dict(set_after_runs=True, after_runs="the rule came after the runs", chapters=["ch"])
    write_chapter(tmp_path, "ch", "The verdicts below use a rule that was not declared first.")
    assert check(tmp_path, family_text(**after), dates=early) == []  # chapters not yet marked by the lead
    problems = check(tmp_path, family_text(**after, chapters_checked=True), dates=early)
    assert len(problems) == 1 and "set after the runs" in problems[0]
    write_chapter(tmp_path, "ch", "Note: this rule was Set after the\n runs (see the protocol).")
    assert check(tmp_path, family_text(**after, chapters_checked=True), dates=early) == []
    missing = check(tmp_path, family_text(**{**after, "chapters": ["absent"]}, chapters_checked=True), dates=early)
    assert len(missing) == 1 and "not found" in missing[0]


def test_a_run_adopted_from_a_file_the_family_adopts_is_exempt_and_no_other(tmp_path):
    early = "2026-11-01T00:00:00+00:00"
    runs = {
        "a/0": {"final": {}, "provenance": {"date": early, "adopted_from": "long-full"}},
        "a/1": {"final": {}, "provenance": {"date": early, "adopted_from": "other-full"}},
        "a/2": {"final": {}, "provenance": {"date": early}},
    }
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "toy-full.json").write_text(json.dumps({"runs": runs}))
    family = family_text(adopts=["long-full"], amended="2026-12-02T10:00Z: runs of long-full are adopted")
    problems = protocol_audit.violations(protocol.load(write_protocol(tmp_path, family)), folder, tmp_path)
    assert [p.split()[3] for p in problems] == ["a/1", "a/2"]
    assert protocol.load(write_protocol(tmp_path, family)).families["toy"].adopts == ("long-full",)


def test_a_missing_results_file_is_no_run(tmp_path):
    p = protocol.load(write_protocol(tmp_path, family_text()))
    assert protocol_audit.violations(p, tmp_path / "empty", tmp_path) == []


@pytest.mark.parametrize(
    "text, message",
    [
        ("version: 1\nfamilies: {}\n", "non-empty 'families'"),
        ("families:\n" + family_text(), "'version'"),
        ("version: 1\nfamilies: [\n", "not valid YAML"),
        ("version: 1\nfamilies:\n" + family_text(declared="last week"), "ISO date"),
        ("version: 1\nfamilies:\n" + family_text(declared="2026-13-01"), "not a valid date"),
        ("version: 1\nfamilies:\n" + family_text(set_after_run=True), r"unknown keys \['set_after_run'\]"),
        ("version: 1\nfamilies:\n" + family_text(set_after_runs=True), "after_runs must say"),
        ("version: 1\nfamilies:\n" + family_text(set_after_runs="yes"), "true or false"),
        ("version: 1\nfamilies:\n" + family_text().replace("holm", "bonferroni"), "correction must be one of"),
        ("version: 1\nfamilies:\n" + family_text().replace("alpha: 0.05", "alpha: 5"), "alpha must be"),
        ("version: 1\nfamilies:\n" + family_text().replace("margin_pp: 2.0", "margin_pp: -1"), "positive number"),
        ("version: 1\nfamilies:\n" + family_text().replace("margin_pp: 2.0", "margin: 2.0"), "margin_unit"),
        (
            "version: 1\nfamilies:\n" + family_text().replace('    endpoint: "final accuracy"\n', ""),
            r"missing \['endpoint'\]",
        ),
        ("version: 1\nfamilies:\n" + family_text(results="toy-full"), "list of names"),
        ("version: 1\nfamilies:\n" + family_text(count_metric="induction_max"), "needs count_past"),
        ("version: 1\nsweeps:\n  s: {grid: x}\nfamilies:\n" + family_text(), "each with 'declared'"),
        ("version: 1\nfamilies:\n" + family_text(adopts=["long-full"]), "adopts needs amended"),
        ("version: 1\nfamilies:\n" + family_text(amended="later: a change"), "starts with its date"),
        (
            "version: 1\nfamilies:\n"
            + family_text(set_after_runs=True, after_runs="the rule (commit 0123abc) came after"),
            "in words: move the commits and code names",
        ),
        ("version: 1\nfamilies:\n" + family_text(record=""), "record must be a sentence"),
    ],
)
def test_invalid_protocols_say_what_is_wrong(tmp_path, text, message):
    path = tmp_path / "protocol.yml"
    path.write_text(text)
    with pytest.raises(protocol.ProtocolError, match=message):
        protocol.load(path)


def test_a_missing_file_says_where_to_put_it(tmp_path):
    with pytest.raises(protocol.ProtocolError, match="book/protocol.yml"):
        protocol.load(tmp_path / "absent.yml")


# --- power (issue 52) ---------------------------------------------------------------------------

POWER = {
    "value": 11,
    "unit": "pp",
    "of": "the Stiefel rule − AdamW: 20 pairs",
    "declared": "2026-12-06T09:00Z, after the runs it describes",
}


def test_every_family_of_the_book_states_its_power_and_the_old_ones_say_it_came_after():
    p = protocol.load()
    for name, f in p.families.items():
        assert f.power is not None, name
        stated = protocol._declared(f.power["declared"], name)[0]
        if protocol._day(stated) > protocol._day(f.declared):
            assert "after the runs" in f.power["declared"], name


def test_the_new_families_power_is_what_the_stats_compute():
    from stiefel_book.stats import power

    p97, mqar = (protocol.family(n) for n in ("grokking_p97_primary", "routing_mqar_fresh"))
    assert len(p97.judged_seeds) == 12 and p97.power["floor_p"] == pytest.approx(power.floor_p(12), rel=0.01)
    assert p97.power["floor_p"] < p97.alpha < power.holm_floor(6, 7)  # 12 seeds can decide; 6 under Holm could not
    fresh = set(mqar.judged_seeds)
    assert (
        len(fresh) == 30
        and not fresh & set(range(10))
        and not fresh & set(protocol.family("routing_mqar").selection_seeds)
    )
    assert mqar.power["value"] == round(30 * power.mcnemar_smallest_difference(30, 0.6))
    assert mqar.power["floor_p"] == pytest.approx(power.floor_p(power.pairs_for_floor(mqar.alpha)), rel=0.01)
    controls, rejudge = (protocol.family(n) for n in ("cifar10_val_controls", "cifar10_val_rejudge"))
    assert len(controls.pairs) == 6 and controls.margin == 0.5 and len(controls.judged_seeds) == 12
    assert controls.power["value"] == round(power.smallest_detectable_effect(12, 0.649, len(controls.pairs)), 2)
    assert controls.power["equivalence_margin"] == round(power.smallest_equivalence_margin(12, 0.649, 6), 2)
    assert rejudge.power["value"] == round(power.smallest_detectable_effect(12, 0.649, 2), 2)
    assert rejudge.power["range"][0] == round(power.smallest_detectable_effect(12, 0.458, 2), 2)
    for f in (controls, rejudge):  # declared before their runs, with their power, apart from the selection starts
        assert not f.set_after_runs and f.power["declared"].startswith(f.declared_text[:17])
        assert not set(f.judged_seeds) & set(f.selection_seeds)


def test_a_family_declared_before_its_runs_must_state_its_power(tmp_path):
    path = write_protocol(tmp_path, family_text(declared="2026-12-06T10:00Z, before any run"))
    with pytest.raises(protocol.ProtocolError, match="must state its power"):
        protocol.load(path)
    ok = family_text(
        declared="2026-12-06T10:00Z", smallest_detectable_effect={**POWER, "declared": "2026-12-06T10:00Z"}
    )
    assert protocol.load(write_protocol(tmp_path, ok)).families["toy"].power["value"] == 11
    late = family_text(declared="2026-12-06T10:00Z", smallest_detectable_effect={**POWER, "declared": "2026-12-07"})
    with pytest.raises(protocol.ProtocolError, match="after the runs|not later"):
        protocol.load(write_protocol(tmp_path, late))


@pytest.mark.parametrize(
    "power, message",
    [
        ({**POWER, "declared": "2026-12-06T09:00Z, computed later"}, "after the runs"),
        ({**POWER, "value": -1}, "positive number"),
        ({**POWER, "value": None}, "value .* or floor_p"),
        ({**POWER, "floor_p": 2}, "floor_p must be a probability"),
        ({k: v for k, v in POWER.items() if k != "of"}, "must be a mapping with"),
    ],
)
def test_a_bad_power_statement_says_what_is_wrong(tmp_path, power, message):
    with pytest.raises(protocol.ProtocolError, match=message):
        protocol.load(write_protocol(tmp_path, family_text(smallest_detectable_effect=power)))


def test_an_old_family_may_state_its_power_after_its_runs_when_it_says_so(tmp_path):
    text = family_text(smallest_detectable_effect=POWER)  # declared 2026-12-01, power 2026-12-06
    assert protocol.load(write_protocol(tmp_path, text)).families["toy"].power["of"].startswith("the Stiefel")
