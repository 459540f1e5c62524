"""The grokking family's verdict words, on hand-made histories whose answers are known."""

import math

from stiefel_book.findings import grokking


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


def results(runs):
    return {"runs": {key: {"history": h} for key, h in runs.items()}}


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
