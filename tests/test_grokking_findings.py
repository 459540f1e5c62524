"""What the grokking chapter reads from a log: grokking epoch, loss spikes, endpoint stability,
and the declared family's verdict words, on hand-made histories whose answers are known."""

import math

from stiefel_book.findings import grokking, grokking_runs


def history(grok_at, spikes_at=(), final=1.0, dip=None, epochs=20_000, every=20):
    records = []
    for epoch in range(0, epochs + 1, every):
        val = 0.05 if epoch < grok_at else 1.0
        if dip and dip[0] <= epoch < dip[0] + 100:
            val = dip[1]
        loss = 10.0 if epoch in spikes_at else 1e-6
        records.append({"epoch": epoch, "val_acc": val, "train_loss": loss})
    records[-1]["val_acc"] = final
    return records


def test_run_summary_reads_grokking_spikes_and_stability():
    x = grokking_runs.run_summary(history(4000, spikes_at=(6000, 9000), dip=(16000, 0.5)))
    assert x["grokked_at"] == 4000 and x["spikes"] == 2 and x["after_grokking_min"] == 0.5
    assert x["last_quarter_min"] == 0.5 and math.isclose(x["last_quarter_held"], 1 - 5 / 251)
    assert grokking_runs.run_summary(history(10**9, final=0.05))["grokked_at"] is None


def results(runs):
    return {"runs": {key: {"history": h} for key, h in runs.items()}}


def test_runs_table_has_a_row_per_run():
    table = grokking.runs_table(
        results({"baseline/0": history(10**9, final=0.05), "stiefel/0": history(4000, spikes_at=(6000,))})
    )
    assert [row[:4] for row in table.rows] == [
        ["AdamW, seed 0", "never", "-", 0],
        ["The Stiefel rule, seed 0", "4,000", "100.0", 1],
    ]
    assert len(grokking.runs_table(None)) == 0


def test_frame_table_reads_norm_range_and_final_angles():
    def run(norms, angle):
        return {
            "history": [
                {"norm/attn.W_Q": n, "norm/attn.W_K": n, "angle_mean/W_Q": angle, "angle_mean/W_K": 2 * angle}
                for n in norms
            ]
        }

    table = grokking.frame_table(
        {
            "runs": {
                "baseline/0": run([3.0, 1.0, 2.0], 60.0),
                "stiefel/0": run([2.0, 2.0], 3.0),
                "stiefel/1": run([2.0], 5.0),
            }
        }
    )
    assert table.rows == [
        ["AdamW (1 seed)", "W_Q", "1.000", "3.000", "60.0", "60.0"],
        ["AdamW (1 seed)", "W_K", "1.000", "3.000", "120.0", "120.0"],
        ["The Stiefel rule (2 seeds)", "W_Q", "2.000", "2.000", "4.0", "5.0"],
        ["The Stiefel rule (2 seeds)", "W_K", "2.000", "2.000", "8.0", "10.0"],
    ]


def test_the_declared_family_reads_four_words_with_holm_across_endpoint_and_time():
    from types import SimpleNamespace

    family = SimpleNamespace(margin=2.0, alpha=0.05)
    sooner = {  # every seed ends at 100 %: the Stiefel rule gets there 3,000 epochs sooner in each of 7 pairs
        f"{arm}/{s}": history(4000 + 100 * s + (3000 if arm == "baseline" else 0))
        for arm in ("stiefel", "baseline")
        for s in range(7)
    }
    rows = grokking.family_rows(results(sooner), family)
    assert rows["endpoint"]["verdict"] == "equivalent"
    # exact paired permutation p = 2 / 2^7, doubled by Holm over the family's two comparisons: 0.031 < 0.05
    assert rows["time"]["verdict"] == "higher" and rows["time"]["never"] == (0, 0)
    six = {k: v for k, v in sooner.items() if not k.endswith("/6")}
    time = grokking.family_rows(results(six), family)["time"]
    assert math.isclose(time["p"], 2 / 64) and math.isclose(time["p_holm"], 4 / 64)  # 6 pairs cannot pass Holm
    assert grokking.family_rows(results(six), family)["time"]["verdict"] == "inconclusive"
    like_preprint = results(
        {
            **{f"stiefel/{s}": history(4000, final=0.97 - 0.01 * s) for s in range(5)},
            **{f"baseline/{s}": history(7000, final=0.6 + 0.02 * s) for s in range(5)},
        }
    )
    rows = grokking.family_rows(like_preprint, family)
    assert rows["endpoint"]["verdict"] == "higher" and rows["endpoint"]["past"] == (5, 0)
