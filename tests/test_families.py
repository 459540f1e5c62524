"""The family reader (stiefel_book.families): on the committed results files its rows equal what the
findings modules compute for each structured family; on hand-made results it applies the declared
rule (the pairs, Holm within the family, the margin, the direction) and refuses what it cannot apply."""

import math
from pathlib import Path

import numpy as np
import pytest

from stiefel_book import families as fam
from stiefel_book import protocol, results_files
from stiefel_book.findings.advice import reading
from stiefel_book.stats import holm

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "book" / "results"
TOL = 1e-12


def _load(stem):
    path = results_files.find(RESULTS, stem)
    return results_files.read(path) if path else None


@pytest.fixture(scope="module")
def files():
    stems = {s for f in protocol.load().families.values() if f.measure for s in f.results + f.reads}
    return {s: _load(s) for s in stems | {"grokking_fair_peers-full"}}


def read(name, files):
    f = protocol.family(name)
    return fam.read_family(name, {s: files[s] for s in f.results + f.reads})


def same(rows, old, mean, ci, extra=()):
    """``rows`` equal the old copy's dict rows (keys ``mean``/``ci`` named as that copy names them):
    the same comparisons in the same order, n, verdict, the numbers to 1e-12."""
    assert [(r.arm, r.reference) for r in rows] == [(o["arm"], o["reference"]) for o in old]
    for r, o in zip(rows, old, strict=True):
        assert (r.n, r.verdict) == (o["n"], o["verdict"]), (r, o)
        assert abs(r.difference - o[mean]) < TOL and np.allclose(r.interval, o[ci], rtol=0, atol=TOL)
        assert abs(r.p_corrected - o["p_holm"]) < TOL
        for new, key in extra:
            assert (
                getattr(r, new) == pytest.approx(o[key], rel=0, abs=TOL)
                if isinstance(o[key], float)
                else (getattr(r, new) == o[key])
            ), (new, r, o)


def test_every_structured_family_is_tested_here():
    structured = {n for n, f in protocol.load().families.items() if f.measure}
    assert structured == {
        "routing_mqar",
        "routing_induction",
        "routing_charlm",
        "charlm_long",
        "grokking_checked",
        "grokking_fair",  # the fair fight's three: read by declared.family_dicts; tests/test_fair_fight.py
        "grokking_fair_scale",
        "grokking_fair_ablation",
        "cifar10_fair",
        "cifar10_fair_decay",
        "peers_cifar10",
        "routing_mqar_qk_norm_tuned",  # read in tests/test_routing_qk_temp.py (no runs yet)
        "routing_induction_qk_norm_tuned",
        "cifar10_val_controls",
        "routing_mqar_fresh",  # a count family: test_a_count_family_tests_its_primary_alone_then_holm_over_the_rest
    }


def test_the_long_character_model_family_reads_eleven_comparisons_from_its_runs():
    """charlm_long (declared before its runs): every arm against AdamW and the Stiefel rule, lower
    bits per character better; a hand-made file of 10 seeds where manifold Muon is 0.05 lower."""
    arms = ("baseline", "stiefel", "frozen", "no_decay_qk", "qk_norm", "muon", "manifold_muon")
    rng = np.random.default_rng(0)
    runs = {
        f"{arm}/{seed}": {"final": {"val_bpc": 2.4 - 0.05 * (arm == "manifold_muon") + 0.002 * rng.standard_normal()}}
        for arm in arms
        for seed in range(10)
    }
    rows = fam.read_family("charlm_long", {"charlm_long-full": {"config": {}, "runs": runs}})
    assert len(rows) == 11 and {r.n for r in rows} == {10}
    row = fam.find(rows, "manifold_muon", "baseline")
    assert row.difference == pytest.approx(-0.05, abs=0.01) and row.verdict == "lower"
    assert fam.find(rows, "stiefel", "baseline").verdict == "equivalent"


def routing_rows_as_they_were(values, endpoint, margin, alpha):
    """findings.routing.family_rows as it was written by hand before the reader replaced it (commit
    e3a48ea): the oracle the reader must equal on the routing families."""
    from scipy import stats

    from stiefel_book.stats import family_verdicts

    family, pairs = {}, {}
    for ref in ("baseline", "stiefel"):
        for arm in ("baseline", "stiefel", "frozen", "no_decay_qk", "qk_norm", "muon"):
            if arm == ref or arm not in values or ref not in values or (ref, arm) in pairs:
                continue
            seeds = sorted(set(values[arm]) & set(values[ref]))
            pairs[(arm, ref)] = seeds
            family[f"{arm} - {ref}"] = [endpoint.scale * (values[arm][s] - values[ref][s]) for s in seeds]
    verdicts = family_verdicts(family, margin, alpha)
    rows = []
    for (arm, ref), seeds in pairs.items():
        v, d = verdicts[f"{arm} - {ref}"], np.asarray(family[f"{arm} - {ref}"])
        half = float(stats.t.ppf(1 - alpha / 2, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d)))
        row = {"arm": arm, "reference": ref, "n": len(seeds), "mean": v.mean_difference, "p_holm": v.p_adjusted}
        rows.append({**row, "ci": (v.mean_difference - half, v.mean_difference + half), "verdict": v.word})
        rows[-1]["reading"] = reading(v.word, endpoint.higher_is_better)
    return rows


@pytest.mark.parametrize("task", ["mqar", "induction", "charlm"])
def test_routing_families_equal_findings_routing(files, task):
    from stiefel_book import declared
    from stiefel_book.findings import routing as fr

    name, endpoint = fr.TASKS[task]
    f = protocol.family(name)
    values = fr.finals(files[f"{task}-full"], metric=endpoint.metric)
    old = routing_rows_as_they_were(values, endpoint, f.margin, f.alpha)
    rows = read(name, files)
    same(rows, old, "mean", "ci")
    assert [r.reading for r in rows] == [o["reading"] for o in old]
    assert declared.routing(current=False)[task] == fr.as_rows(rows)  # the family as the reader reads it
    assert (endpoint.metric, endpoint.unit, endpoint.scale, endpoint.higher_is_better) == (
        f.measure.metric,
        f.measure.unit,
        f.measure.scale,
        f.measure.higher_is_better,
    )  # the chapter's endpoint is the declared one


OLD_FAIR = [("p_raw", "p"), ("p_equivalence", "tost_p_holm"), ("past", "past"), ("p_past", "mcnemar_p")]


def test_cifar10_families_equal_their_findings(files):
    from stiefel_book.findings import cifar10_decays as cd
    from stiefel_book.findings import cifar10_tuned as ct
    from stiefel_book.findings import fair_fight as ff
    from stiefel_book.findings import peers as p

    f = protocol.load().families
    fair = f["cifar10_fair"]
    old = ct.fair_rows(files["cifar10_fair-full"], files["cifar10_fair_peers-full"], fair.margin / 100, fair.alpha)
    same(read("cifar10_fair", files), old, "mean_pp", "ci_pp", OLD_FAIR[:2])
    decay = f["cifar10_fair_decay"]
    old = cd.decay_row(files["cifar10_fair_decay-full"], decay.margin / 100, decay.alpha)
    same(read("cifar10_fair_decay", files), [old], "mean_pp", "ci_pp", OLD_FAIR[:2])
    peers = f["peers_cifar10"]  # as declared.peers_cifar10 computes it, before its rows are reordered
    values = ff.finals(files["cifar10_peers-full"], metric="test_acc")
    old = ff.family_rows(values, p.PEERS, ("stiefel", "baseline"), peers.margin / 100, peers.alpha)
    same(read("peers_cifar10", files), old, "mean_pp", "ci_pp", OLD_FAIR[:2])


def test_the_cifar10_controls_family_reads_each_control_against_both_arms_in_pp_with_holm_over_six():
    """No runs yet (declared before them): a hand-made file of its five arms on the judged starts."""
    gain = {"baseline": 0.0, "stiefel": 0.06, "qk_norm": 0.059, "no_decay_qk": 0.03, "frozen": -0.01}
    runs = {
        f"{arm}/{s}": {"final": {"test_acc": 0.45 + g + 0.002 * ((s * (i + 3)) % 5)}, "history": []}
        for i, (arm, g) in enumerate(gain.items())
        for s in (*range(12), 100)  # a selection start's run is never paired
    }
    rows = fam.read_family("cifar10_val_controls", {"cifar10_val_controls-full": {"config": {}, "runs": runs}})
    assert [(r.arm, r.reference) for r in rows] == [
        (a, ref) for ref in ("stiefel", "baseline") for a in ("qk_norm", "no_decay_qk", "frozen")
    ]
    assert all(r.n == 12 and r.unit == "pp" and r.regime == "final" for r in rows)
    assert fam.find(rows, "no_decay_qk", "baseline").difference == pytest.approx(3.0, abs=0.5)
    assert (
        fam.find(rows, "frozen", "stiefel").verdict == "lower"
        and fam.find(rows, "qk_norm", "baseline").verdict == "higher"
    )
    assert np.allclose([r.p_corrected for r in rows], holm([r.p_raw for r in rows]))


# --- hand-made families and results -----------------------------------------------------------

FAMILY = """\
  {name}:
    declared: "2026-12-01T10:00Z"
    results: [toy-full]
    comparisons: "a and b against r"
    endpoint:
      why: "final loss"
      metric: loss
      at: {at}
      test: paired_t
      unit: nats
      direction: lower_is_better
    correction: holm
    alpha: 0.05
    margin: {margin}
    margin_unit: nats
    margin_reason: "a reason"
    encoded: "2026-12-06, in fields"
    compare: {compare}
{extra}"""


def write(tmp_path, name="toy", margin=0.5, at="final", compare="{arms: [a, b], references: [r]}", extra=""):
    path = tmp_path / f"{name}.yml"
    text = FAMILY.format(name=name, margin=margin, at=at, compare=compare, extra=extra)
    path.write_text("version: 1\nfamilies:\n" + text)
    return path


def results(**arms):
    """``{"toy-full": results}`` with one run per seed of each arm, its final ``loss`` the value given."""
    runs = {
        f"{arm}/{s}": {"final": {"loss": v}, "history": [{"epoch": 7, "loss": v + 1}]}
        for arm, vs in arms.items()
        for s, v in enumerate(vs)
    }
    return {"toy-full": {"config": {}, "runs": runs}}


R = [1.0, 2.0, 3.0, 4.0, 5.0]


def test_pairs_by_seed_and_holm_within_the_family(tmp_path):
    data = results(
        r=R, a=[x - 1.0 + 0.1 * (-1) ** i for i, x in enumerate(R)], b=[x + 0.05 * i for i, x in enumerate(R)]
    )
    rows = fam.read_family("toy", data, path=write(tmp_path))
    assert [(r.arm, r.reference, r.n) for r in rows] == [("a", "r", 5), ("b", "r", 5)]
    assert rows[0].difference == pytest.approx(-0.98) and rows[0].verdict == "lower" and rows[0].reading == "better"
    assert np.allclose([r.p_corrected for r in rows], holm([r.p_raw for r in rows]))
    alone = fam.read_family("toy", data, path=write(tmp_path, compare="{pairs: [[a, r]]}"))
    assert alone[0].p_corrected == alone[0].p_raw < rows[0].p_corrected  # the family's size is what Holm corrects for


def test_the_margin_decides_equivalent_or_inconclusive(tmp_path):
    data = results(r=R, a=[x + 0.01 * (-1) ** i for i, x in enumerate(R)], b=R)
    wide = fam.read_family("toy", data, path=write(tmp_path, margin=0.5, compare="{pairs: [[a, r]]}"))
    narrow = fam.read_family("toy", data, path=write(tmp_path, margin=0.001, compare="{pairs: [[a, r]]}"))
    assert (wide[0].verdict, narrow[0].verdict) == ("equivalent", "inconclusive")
    assert wide[0].p_raw == narrow[0].p_raw and wide[0].p_equivalence < 0.05 < narrow[0].p_equivalence


def test_a_missing_arm_keeps_its_place_and_the_endpoints_epoch_and_seeds_are_the_declared_ones(tmp_path):
    data = results(r=R, a=[x - 1 for x in R])
    rows = fam.read_family("toy", data, path=write(tmp_path))
    assert (rows[1].n, rows[1].verdict, rows[1].p_corrected) == (0, "inconclusive", 1.0) and math.isnan(
        rows[1].difference
    )
    assert rows[0].p_corrected == pytest.approx(min(1.0, 2 * rows[0].p_raw))
    at_epoch = fam.read_family("toy", results(r=R, a=R), path=write(tmp_path, at=7))
    assert at_epoch[0].regime == "epoch 7" and at_epoch[0].difference == 0.0
    seeds = fam.read_family("toy", data, path=write(tmp_path, extra="    judged_seeds: [0, 1, 2]\n"))
    assert seeds[0].n == 3


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(compare="{arms: [a, b]}"), "compare needs both arms and references"),
        (dict(compare="{pairs: [[a, a]]}"), "compare.pairs must be"),
        (dict(compare="{pairs: [[a, r], [r, a]]}"), "names a pair of arms twice"),
        (dict(at="the end"), "endpoint.at must be"),
        (dict(extra="    judged: yes\n"), "unknown keys"),
    ],
)
def test_a_malformed_family_is_refused_with_one_clear_error(tmp_path, change, message):
    with pytest.raises(protocol.ProtocolError, match=message):
        protocol.load(write(tmp_path, **change))


def test_a_malformed_endpoint_or_a_family_in_words_is_refused(tmp_path):
    path = write(tmp_path)
    for old, new, message in [
        ("test: paired_t", "test: t_test", "test be one of"),
        ("unit: nats\n      direction", "unit: bits\n      direction", "must be the margin's unit"),
        ('    encoded: "2026-12-06, in fields"\n', "", "needs compare and encoded"),
    ]:
        path.write_text(write(tmp_path).read_text().replace(old, new, 1))
        with pytest.raises(protocol.ProtocolError, match=message):
            protocol.load(path)
    words = tmp_path / "words.yml"
    words.write_text(
        write(tmp_path).read_text().split("    endpoint:")[0]
        + '    endpoint: "final loss"\n    correction: holm\n    alpha: 0.05\n'
        + '    margin_pp: 2.0\n    margin_reason: "r"\n'
    )
    with pytest.raises(fam.FamilyError, match="declared in words only"):
        fam.read_family("toy", results(r=R), path=words)


def test_results_that_do_not_fit_the_family_are_refused(tmp_path):
    path = write(tmp_path)
    with pytest.raises(fam.FamilyError, match="lacks the files"):
        fam.read_family("toy", {}, path=path)
    with pytest.raises(fam.FamilyError, match="records no 'loss'"):
        fam.read_family("toy", {"toy-full": {"runs": {"a/0": {"final": {"acc": 1.0}}}}}, path=path)


def test_table_lays_out_every_row(tmp_path):
    rows = fam.read_family("toy", results(r=R, a=[x - 1 for x in R], b=R), path=write(tmp_path))
    text = fam.table(rows)
    assert len(text.splitlines()) == 2 + len(rows) and "lower" in text and "nats" in text


def test_the_routing_words_from_the_readers_rows_are_those_of_the_old_rows(files):
    from stiefel_book.claim_new import routing_verdict
    from stiefel_book.findings import routing as fr
    from stiefel_book.labels import label
    from stiefel_book.wording.routing import result_text, summary

    old, new = {}, {}
    for task, (name, endpoint) in fr.TASKS.items():
        f = protocol.family(name)
        old[task] = routing_rows_as_they_were(
            fr.finals(files[f"{task}-full"], metric=endpoint.metric), endpoint, f.margin, f.alpha
        )
        new[task] = fr.as_rows(read(name, files))
    assert summary(new, label) == summary(old, label)
    for task, (_, endpoint) in fr.TASKS.items():  # the words and numbers the chapter's sentences read
        assert [result_text(r, endpoint) for r in new[task]] == [result_text(r, endpoint) for r in old[task]]
    assert routing_verdict(new) == routing_verdict(old)


def count_family(tmp_path, compare="{arms: [a, b], references: [r], primary: [a, r]}", margin="null", past=0.9):
    text = write(tmp_path, compare=compare).read_text()
    text = text.replace("test: paired_t", "test: mcnemar").replace(
        "unit: nats\n      direction", "unit: seeds\n      direction"
    )
    text = (
        text.replace("margin: 0.5", f"margin: {margin}")
        .replace("margin_unit: nats", "margin_unit: seeds")
        .replace("    encoded:", f"    count_past: {past}\n    encoded:")
    )
    path = tmp_path / "count.yml"
    path.write_text(text)
    return path


def test_a_count_family_tests_its_primary_alone_then_holm_over_the_rest(tmp_path):
    """The McNemar rule (routing_mqar_fresh): seeds past count_past, the primary pair at the full α, the
    others Holm among themselves; higher or lower only past α, never equivalent."""
    solved = [1.0] * 12
    data = {
        "toy-full": {
            "config": {},
            "runs": {
                **{f"r/{s}": {"final": {"loss": 0.0}} for s in range(12)},  # the reference solves none
                **{f"a/{s}": {"final": {"loss": v}} for s, v in enumerate(solved)},  # a solves all 12
                **{f"b/{s}": {"final": {"loss": 1.0 if s < 7 else 0.0}} for s in range(12)},  # b solves 7
            },
        }
    }
    rows = fam.read_family("toy", data, path=count_family(tmp_path))
    a, b = rows
    assert (a.past, b.past, a.difference, b.difference) == ((12, 0), (7, 0), 12.0, 7.0)
    assert a.p_corrected == a.p_raw == pytest.approx(2 / 2**12)  # the primary: alone, uncorrected
    assert b.p_corrected == pytest.approx(2 / 2**7)  # the only other pair: Holm over one
    assert (a.verdict, b.verdict) == ("higher", "higher") and math.isnan(a.interval[0])
    three = fam.read_family(
        "toy",
        {
            "toy-full": {
                **data["toy-full"],
                "runs": {
                    **data["toy-full"]["runs"],
                    **{f"c/{s}": {"final": {"loss": 1.0 if s < 7 else 0.0}} for s in range(12)},
                },
            }
        },
        path=count_family(tmp_path, compare="{arms: [a, b, c], references: [r], primary: [a, r]}"),
    )
    assert three[0].p_corrected == a.p_corrected and three[1].p_corrected == pytest.approx(2 * 2 / 2**7)
    fewer = {f"{k[0]}/{k[2:]}": v for k, v in data["toy-full"]["runs"].items()}
    fewer = {k: ({"final": {"loss": 1.0}} if k.startswith("r/") and int(k[2:]) < 10 else v) for k, v in fewer.items()}
    even = fam.read_family("toy", {"toy-full": {"config": {}, "runs": fewer}}, path=count_family(tmp_path))
    assert even[0].past == (12, 10) and even[0].verdict == "inconclusive"  # 2 discordant seeds: p = 0.5


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(margin="0.5"), "has no margin"),
        (dict(compare="{arms: [a, b], references: [r], primary: [b, a]}"), "compare.primary must be one of"),
    ],
)
def test_a_malformed_count_family_is_refused(tmp_path, change, message):
    with pytest.raises(protocol.ProtocolError, match=message):
        protocol.load(count_family(tmp_path, **change))
    text = write(tmp_path, compare="{arms: [a, b], references: [r], primary: [a, r]}")
    with pytest.raises(protocol.ProtocolError, match="with the mcnemar test"):
        protocol.load(text)


def test_a_task_judged_again_at_its_checked_rate_reads_that_judgement():
    """MQAR's current rows are its 30 fresh seeds' (routing_mqar_fresh, on accuracy against routing_mqar's
    margin); the character model's its ten seeds at 4,500 steps (charlm_long, manifold Muon among the arms);
    induction's its own family's."""
    from stiefel_book import declared
    from stiefel_book.families import read_family
    from stiefel_book.findings import routing as fr

    current, own = declared.routing(), declared.routing(current=False)
    assert current["mqar"] == fr.as_rows(declared.mqar_fresh()["accuracy"]) != own["mqar"]
    assert {r["n"] for r in current["mqar"]} == {30} and {r["n"] for r in own["mqar"]} == {10}
    assert current["charlm"] == fr.as_rows(read_family("charlm_long")) != own["charlm"]
    assert {r["n"] for r in current["charlm"]} == {10} and {r["n"] for r in own["charlm"]} == {5}
    assert "manifold_muon" in {r["arm"] for r in current["charlm"]} - {r["arm"] for r in own["charlm"]}
    assert current["induction"] == own["induction"]
    assert declared.judged_file("mqar") == "mqar_fresh" and declared.judged_sweep("mqar") == "mqar_checked_qk_lr"
    assert declared.judged_file("charlm") == "charlm_long" and declared.judged_sweep("charlm") == "charlm_long_qk_lr"
    assert declared.judged_file("induction") == "induction" and declared.judged_sweep("induction") == "induction_qk_lr"


def test_qk_norm_at_its_tuned_temperature_is_read_by_its_family():
    """induction_qk_norm_tuned's runs at the temperature sweep's choice, read against AdamW and the Stiefel rule."""
    from stiefel_book import declared
    from stiefel_book.results import load_results

    tuned = declared.qk_norm_tuned("induction")
    config = load_results("induction_qk_norm_tuned", "full")["config"]
    assert (tuned["temperature"], tuned["qk_lr"]) == (config["qk_temperature"], config["qk_lr"])
    pairs = [(r.arm, r.reference) for r in tuned["rows"]]
    assert pairs == [("qk_norm_tuned", "baseline"), ("qk_norm_tuned", "stiefel")]
    assert tuned["n"] == 10 and 0 <= tuned["solved"] <= 10
    assert declared.qk_norm_tuned("charlm") is None  # no such family's runs: nothing to read
