"""How tests/data/study_snapshot.json.gz was made: run at commit 672452d (the six sweep modules as they were,
before the study engine) as `/work/nbrun.sh py tests/data/make_study_snapshot.py OUT.json`, then gzipped
(sorted keys, compact separators, mtime 0). It cannot run after the port: it calls the old modules' own functions."""
import json, sys, dataclasses
from pathlib import Path
from stiefel_book.experiments.results import load_results
from stiefel_book.experiments import fair_fight as ff, p97_fair as p97, cifar10_fair as cf, cifar10_judged as cj
from stiefel_book.experiments import cifar10_decay as cd, decay_map_sweep as dms, decay_map_tuned as dmt
from stiefel_book.experiments import routing_sweep as rs, routing_decay_map as rdm
from stiefel_book.experiments.runner import get_config

R = Path("book/results")

def fk(d):  # float keys -> repr strings
    return {repr(float(k)): v for k, v in d.items()}

def attempt(f):
    try:
        return {"ok": f()}
    except ValueError as e:
        return {"error": type(e).__name__ + ": " + str(e)}

def pick(c):
    return None if c is None else {"lr": c["lr"], "score": c["score"], "interior": c["interior"], "scores": fk(c["scores"])}

def resolved(config):
    out = {"qk_lrs": [list(x) for x in config.qk_lrs]}
    if hasattr(config, "gaps"):
        out["gaps"] = [list(x) for x in config.gaps]
        out["weight_decay"] = config.task.weight_decay
    return out

def partial(results, keep):
    return {**results, "runs": {k: v for k, v in results["runs"].items() if keep(k)}}

def sweep_block(results, arms, scores, pending, chosen, config, start=None):
    out = sweep_block1(results, arms, scores, pending, chosen, config)
    thinned = partial(results, lambda k, keys=sorted(results["runs"]): keys.index(k) % 7 != 3)
    out["__thinned"] = sweep_block1(thinned, arms, scores, pending, chosen, config)
    if start is not None:
        first = set(start)
        out["__start_only"] = sweep_block1(partial(results, lambda k: k.rpartition("/")[0] in first), arms, scores, pending, chosen, config)
    return out

def sweep_block1(results, arms, scores, pending, chosen, config):
    return {arm: {"scores": fk(scores(results, arm)), "pending": list(pending(results, config, arm)),
                  "chosen": attempt(lambda: pick(chosen(results, arm)))} for arm in arms}

snap = {}
r = load_results("grokking_qk_lr", "full", R)
snap["grokking_qk_lr"] = {
    "arms": sweep_block(r, ff.SWEPT_ARMS, ff.sweep_scores, ff.pending_rungs, ff.chosen, ff.SWEEP_PROFILES["full"], ff.start_arms(ff.SWEEP_PROFILES["full"])),
    "start": {p: list(ff.start_arms(c)) for p, c in ff.SWEEP_PROFILES.items()},
    "pending_none": {p: [list(ff.pending_rungs(None, c, a)) for a in ff.SWEPT_ARMS] for p, c in ff.SWEEP_PROFILES.items()},
}
snap["judged"] = {}
for name in ("grokking_fair", "grokking_fair_scale", "grokking_fair_peers", "grokking_fair_ablation", "grokking_p97_fair",
             "cifar10_fair", "cifar10_fair_peers", "cifar10_fair_decay", "grokking_decay_map_per_decay",
             "grokking_decay_map_tuned", "mqar", "induction", "charlm", "induction_decay_map"):
    from stiefel_book.experiments.runner import EXPERIMENTS
    e = EXPERIMENTS[name]
    if name == "induction_decay_map":
        res = attempt(lambda: resolved(e.resolve(get_config(name, "full"), R).task))
    else:
        res = attempt(lambda: resolved(e.resolve(get_config(name, "full"), R)))
    snap["judged"][name] = res
r = load_results("grokking_p97_qk_lr", "full", R)
c = p97.SWEEP_PROFILES["full"]
snap["grokking_p97_qk_lr"] = {
    "arms": sweep_block(r, p97.ARMS, p97.sweep_scores, p97._pending, p97.chosen, c, p97.start_arms(c)),
    "pending_arms": p97.pending_arms(r, c),
    "pending_arms_none": {p: p97.pending_arms(None, c2) for p, c2 in p97.SWEEP_PROFILES.items()},
    "start": {p: list(p97.start_arms(c2)) for p, c2 in p97.SWEEP_PROFILES.items()},
}
r = load_results("cifar10_qk_lr", "full", R)
c = cf.PROFILES["full"]
snap["cifar10_qk_lr"] = {
    "arms": sweep_block(r, cf._cells(c), cf.sweep_scores, cf.pending, cf.chosen, c, cf.start_arms(c)),
    "start": {p: list(cf.start_arms(c2)) for p, c2 in cf.PROFILES.items()},
    "decay_choices": attempt(lambda: {repr(k): {a: pick(v) for a, v in d.items()} for k, d in cd.decay_choices(r).items()}),
}
r = load_results("cifar10_peers_qk_lr", "full", R)
c = cj.PEER_SWEEP_PROFILES["full"]
snap["cifar10_peers_qk_lr"] = {
    "arms": sweep_block(r, cj.PEERS, cj.peer_sweep_scores, cj._pending, cj.peer_chosen, c, cj.peer_start_arms(c)),
    "start": {p: list(cj.peer_start_arms(c2)) for p, c2 in cj.PEER_SWEEP_PROFILES.items()},
}
r = load_results("grokking_decay_qk_lr", "full", R)
c = dms.SWEEP_PROFILES["full"]
snap["grokking_decay_qk_lr"] = {
    "arms": sweep_block(r, dms._cells(c), dms.sweep_scores, dms.pending, dms.chosen, c, dms.start_arms(c)),
    "start": {p: list(dms.start_arms(c2)) for p, c2 in dms.SWEEP_PROFILES.items()},
}
for name, (profiles, _) in rs.SWEEPS.items():
    r = load_results(name, "full", R)
    snap[name] = {
        "arms": sweep_block(r, rs.SWEPT_ARMS, rs.sweep_scores, rs.pending_rungs, rs.chosen, profiles["full"], rs.start_arms(profiles["full"])),
        "start": {p: list(rs.start_arms(c2)) for p, c2 in profiles.items()},
    }
json.dump(snap, open(sys.argv[1], "w"), indent=0, sort_keys=True)
