#!/usr/bin/env bash
# Long CPU runs in the background, beside a checkout that keeps changing:
#
#   tools/background_runs.sh DIR "CMD; CMD; ..." ["CMD; ..." ...]
#
# Each quoted list is one chain, run in order on one core (one thread) by `python -m stiefel_book
# CMD --profile full`; give one chain per free core. The runs use a worktree of this checkout's
# HEAD pinned in DIR/wt (made once; delete it to re-pin), write their results files to DIR/results
# (seeded from book/results, never overwriting a file already there) and their checkpoints to
# DIR/ckpt, so a finished run is skipped and an interrupted one resumes. Logs: DIR/chainN.log.
#
#   tools/background_runs.sh /tmp/runs "sweep grokking_p97_qk_lr --arms stiefel qk_norm" \
#       "sweep grokking_p97_qk_lr --arms baseline no_decay_qk; sweep cifar10_qk_lr --arms baseline@wd=0.05"
#
# Pause them while a chapter executes or `make test` runs, and go on after:
#   kill -STOP $(pgrep -f "stiefel_book (run|sweep)")    kill -CONT $(pgrep -f "stiefel_book (run|sweep)")
# Bring a results file back to the book (then re-execute the chapters that read it):
#   python tools/device_job.py merge DIR/results/NAME-full.json.gz    (the runs book/results/ lacks)
# A machine that is replaced between sessions loses DIR. Before it goes, keep what the chapters do
# not read yet: `tools/background_runs.sh --stash DIR` copies every results file of DIR that holds runs
# which book/results/ (and pending_results/) lack into pending_results/ (commit it); the next start seeds DIR from there first.
set -euo pipefail

root=$(git rev-parse --show-toplevel)
if [[ ${1:-} == --stash && $# -eq 2 ]]; then
  exec "$root/.venv/bin/python" "$root/tools/pending_results.py" stash "$2/results"
fi
if [[ $# -lt 2 ]]; then
  sed -n '2,23s/^# \{0,1\}//p' "$0" >&2
  exit 2
fi
dir=$(mkdir -p "$1" && cd "$1" && pwd)
shift
python="$root/.venv/bin/python"
[[ -x $python ]] || { echo "error: $python is missing: run make venv first" >&2; exit 1; }
if [[ ! -d $dir/wt ]]; then
  git -C "$root" worktree add --quiet --detach "$dir/wt" HEAD
fi
echo "runs pinned at $(git -C "$dir/wt" rev-parse --short HEAD) in $dir/wt"
mkdir -p "$dir/results" "$dir/ckpt"
"$python" "$root/tools/pending_results.py" seed "$dir/results" > /dev/null  # pending_results first, then the book's
cifar10=${STIEFEL_CIFAR10:-$(ls "$root"/../shared/data/cifar10-jpeg.tar.xz 2>/dev/null || true)}

n=0
for chain in "$@"; do
  n=$((n + 1))
  log="$dir/chain$n.log"
  (
    export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 STIEFEL_RESULTS="$dir/results" STIEFEL_CHECKPOINTS="$dir/ckpt" \
      STIEFEL_CIFAR10="$cifar10" PYTHONPATH="$dir/wt:$dir/wt/bookpkg" TQDM_MININTERVAL=30
    cd "$dir/wt"
    IFS=';' read -ra commands <<< "$chain"
    for command in "${commands[@]}"; do
      read -ra words <<< "$command"
      [[ ${#words[@]} -gt 0 ]] || continue
      echo "== $(date -u +%FT%TZ) ${words[*]}"
      status=0
      "$python" -m stiefel_book "${words[@]}" --profile full || status=$?
      echo "== exit $status $(date -u +%FT%TZ)"
    done
  ) >> "$log" 2>&1 < /dev/null &
  echo "chain $n (pid $!): $chain -> $log"
done
