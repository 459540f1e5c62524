"""Where the fair fight stands beyond p = 31 (findings.fair_progress), on constructed files."""

from stiefel_book.findings.fair_progress import progress_lines


def _run(acc):
    return {"history": [{"epoch": e, "test_acc": acc} for e in range(1, 11)], "final": {"test_acc": acc}}


def _run(acc):
    return {"history": [{"epoch": e, "test_acc": acc} for e in range(1, 11)], "final": {"test_acc": acc}}


def test_the_lines_follow_the_runs_and_say_what_has_not_run():
    config = {"seeds": [100, 101], "task": {"epochs": 10, "lr": 1e-3}, "weight_decays": [0.05, 0.3, 1.0]}
    sweep_runs = {
        f"{arm}@wd=1@qklr={lr:g}/{s}": _run(0.5 - abs(lr - 1e-3))
        for arm in ("baseline", "stiefel")
        for lr in (3e-4, 1e-3, 3e-3)
        for s in (100, 101)
    }
    sweep_runs |= {f"stiefel@wd=0.3@qklr={lr:g}/{s}": _run(0.5 + lr) for lr in (3e-4, 1e-3) for s in (100, 101)}
    fair = {"runs": {f"{arm}/{s}": _run(0.5) for arm in ("baseline", "stiefel", "frozen") for s in range(12)}}
    relatives = ("muon", "muon_no_decay", "geoopt_radam", "per_entry", "orthogonal_param")
    peers = {"runs": {f"{arm}/{s}": _run(0.5) for arm in relatives for s in range(3)}}
    lines = progress_lines({"config": config, "runs": sweep_runs}, fair, peers, {"runs": {"x/100": {}}}, None, 12, 6)
    ends = ["(chosen)", "(still growing)", "not yet run", "12 of 12 judged starts (complete)", "3 of 12 judged starts"]
    words = ["1e-3", "1e-3", "1e-3"]  # AdamW's and the Stiefel rule's choices at λ = 1, the leader at λ = 0.3
    ends += ["has settled", "1 run so far", "not yet run"]
    assert len(lines) == len(ends) and all(line.endswith(end) for line, end in zip(lines, ends))
    assert [w for line in lines[:2] for w in line.replace(",", " ").split() if w.endswith("e-3")] == words


def test_the_decay_of_largest_gap_is_named_once_every_cell_has_settled():
    config = {"seeds": [100], "task": {"epochs": 10, "lr": 1e-3}, "weight_decays": [0.05, 0.3, 1.0]}
    top = {("baseline", 1.0): 0.50, ("stiefel", 1.0): 0.49, ("baseline", 0.3): 0.47, ("stiefel", 0.3): 0.49}
    top |= {("baseline", 0.05): 0.46, ("stiefel", 0.05): 0.46}
    runs = {
        f"{arm}@wd={wd:g}@qklr={lr:g}/100": _run(best if lr == 1e-3 else 0.4)
        for (arm, wd), best in top.items()
        for lr in (3e-4, 1e-3, 3e-3)
    }
    judged = {"runs": {f"{arm}/{s}": _run(0.5) for arm in ("baseline", "stiefel") for s in range(4)}}
    lines = progress_lines({"config": config, "runs": runs}, None, None, None, None, 12, 6, judged)
    assert "λ = 0.3" in lines[-3] and "4 of 12" in lines[-3]
    top[("baseline", 1.0)] = 0.53  # now λ = 1 has the largest gap, -4 pp
    runs |= {"baseline@wd=1@qklr=0.001/100": _run(0.53)}  # now λ = 1 has the largest gap, -4 pp
    lines = progress_lines({"config": config, "runs": runs}, None, None, None, None, 12, 6)
    assert "λ = 1" in lines[-3] and "λ = 0.3" not in lines[-3]


def test_the_p97_lines_name_the_settled_rates_and_count_the_seeds_with_every_arm():
    def grokked(epoch):
        return {"history": [{"epoch": e, "val_acc": 0.95 if e >= epoch else 0.5} for e in range(0, 10_001, 500)]}

    times = {1e-4: 6000, 3e-4: 4000, 1e-3: 5000}  # every arm fastest at 3e-4: interior
    runs = {
        f"{arm}@qklr={lr:g}/{s}": grokked(t)
        for arm in ("baseline", "no_decay_qk", "stiefel", "qk_norm")
        for lr, t in times.items()
        for s in (100, 101)
    }
    sweep = {"config": {"task": {"lr": 1e-3, "epochs": 10_000}, "seeds": [100, 101], "threshold": 0.9}, "runs": runs}
    arms = ("baseline", "no_decay_qk", "stiefel", "qk_norm", "frozen")
    judged = {"runs": {f"{arm}/{s}": {} for arm in arms for s in (0, 1)} | {"stiefel/2": {}}}
    lines = progress_lines(None, None, None, sweep, judged, 12, 6)
    assert "24 runs" in lines[-2] and "interior" in lines[-2] and lines[-2].count("3e-4") == 4
    assert "11 runs so far" in lines[-1] and lines[-1].endswith("2 of 6 seeds with every arm")
