#!/usr/bin/env bash
# Fail when a notebook book/NAME.ipynb and its twin twins/NAME.md disagree, or one lacks the other.
#
# jupytext has no check-only flag, so this runs `jupytext --sync` on copies of the pairs (mtimes
# kept, since --sync takes its inputs from the newer file) and `git diff --no-index --exit-code`
# between the copies before and after. The working tree is never touched, and uncommitted edits
# that are in sync pass. Repair a failure with `make sync`.
#
# usage: tools/check_pairing.sh [PYTHON]   (default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:-.venv/bin/python}
py="$(cd "$(dirname "$py")" && pwd)/$(basename "$py")"  # absolute, without resolving the venv link

shopt -s nullglob
notebooks=(book/*.ipynb)
twins=(twins/*.md)
if (( ${#notebooks[@]} + ${#twins[@]} == 0 )); then
    echo "pairing: no notebooks in book/ yet, nothing to check"
    exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for side in before after; do
    mkdir -p "$tmp/$side/book" "$tmp/$side/twins"
    cp -p jupytext.toml "$tmp/$side/"
    for f in "${notebooks[@]}" "${twins[@]}"; do cp -p "$f" "$tmp/$side/$f"; done
done

(cd "$tmp/after" && "$py" -m jupytext --quiet --sync "${notebooks[@]}" "${twins[@]}")

if ! git --no-pager diff --no-index --exit-code "$tmp/before" "$tmp/after"; then
    echo "pairing: the files above are out of sync with their twins (or lack one); run 'make sync' and commit both" >&2
    exit 1
fi
echo "pairing: ${#notebooks[@]} notebook(s) in sync with their twins"
