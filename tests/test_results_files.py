"""Results files are gzip JSON read transparently: the same contents give the same bytes, a plain
file alone is still read, both forms of one name are refused, a damaged gzip is named, a failed
write leaves nothing behind; the conversion tool and the stash; the checkout stays small."""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stiefel_book import results_files
from stiefel_book.results import DamagedResultsError, load_results, results_path, write_results

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import drop_runs  # noqa: E402

import compact_results  # noqa: E402
import pending_results  # noqa: E402

RESULTS = {
    "experiment": "grokking",
    "profile": "ci",
    "config": {"lr": 1e-3, "seeds": [0, 1]},
    "runs": {"stiefel/0": {"final": {"val_acc": 0.97, "loss": float("nan")}}, "baseline/1": {"final": {"x": 1}}},
}


def test_a_written_file_is_gzip_and_reads_back_equal(isolated):
    written = write_results(RESULTS, results_path("grokking", "ci"))
    assert written.name == "grokking-ci.json.gz" and written.read_bytes()[:2] == b"\x1f\x8b"
    loaded = load_results("grokking", "ci")
    assert json.dumps(loaded, sort_keys=True) == json.dumps(RESULTS, sort_keys=True)  # NaN too
    text = gzip.decompress(written.read_bytes()).decode()
    assert text.endswith("}\n") and text.startswith('{\n "config"')  # sorted keys, indent 1, as before


def test_the_same_contents_give_the_same_bytes(tmp_path):
    first = results_files.write(RESULTS, tmp_path / "a" / "x-ci.json.gz")
    os.utime(first, (0, 0))
    reordered = {key: RESULTS[key] for key in reversed(list(RESULTS))}
    second = results_files.write(reordered, tmp_path / "b" / "x-ci.json.gz")  # another folder, time, key order
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes()[4:8] == b"\0\0\0\0"  # no time stamp in the gzip header


def test_reading_once_parses_a_file_once_until_it_changes(tmp_path):
    path = results_files.write({"runs": {"a/0": {}}}, tmp_path / "x-full.json")
    assert results_files.read(path) is not results_files.read(path)  # outside the block: a fresh copy each time
    with results_files.reading_once():
        first = results_files.read(path)
        assert results_files.read(path) is first
        with results_files.reading_once():  # a block inside shares the outer one's
            assert results_files.read(path) is first
        results_files.write({"runs": {"a/0": {}, "b/0": {}}}, path)
        assert set(results_files.read(path)["runs"]) == {"a/0", "b/0"}  # changed since: read again
    assert results_files.read(path) is not results_files.read(path)


def test_a_plain_file_alone_is_still_read_and_a_write_replaces_it_by_gzip(isolated):
    plain = isolated / "results" / "grokking-ci.json"
    plain.parent.mkdir(parents=True)
    plain.write_text(json.dumps({"runs": {"stiefel/0": {"final": 1}}}))
    assert results_path("grokking", "ci") == plain
    assert load_results("grokking", "ci")["runs"] == {"stiefel/0": {"final": 1}}
    written = write_results({"runs": {"stiefel/0": {"final": 1}, "stiefel/1": {}}}, plain)
    assert not plain.exists() and written == plain.with_name("grokking-ci.json.gz")
    assert set(load_results("grokking", "ci")["runs"]) == {"stiefel/0", "stiefel/1"}


def test_both_forms_of_one_name_are_refused_naming_both_and_which_to_delete(isolated):
    gz = write_results({"runs": {"a/0": {}, "a/1": {}}}, isolated / "results" / "grokking-ci.json.gz")
    plain = gz.with_name("grokking-ci.json")
    plain.write_text(json.dumps({"runs": {"a/0": {}}}))
    with pytest.raises(results_files.TwoFormsError) as caught:
        load_results("grokking", "ci")
    assert str(gz) in str(caught.value) and f"delete {plain}" in str(caught.value)
    plain.write_text(json.dumps({"runs": {"a/0": {}, "a/1": {}, "a/2": {}}}))  # the plain one holds more
    with pytest.raises(results_files.TwoFormsError, match=f"delete {gz}"):
        load_results("grokking", "ci")
    assert gz.exists() and plain.exists()  # nothing deleted by the reader


@pytest.mark.parametrize("cut", ["truncated", "not gzip", "empty object", "a list"])
def test_a_damaged_results_file_is_one_named_error(isolated, cut):
    path = isolated / "results" / "grokking-ci.json.gz"
    path.parent.mkdir(parents=True)
    whole = results_files.encode(RESULTS)
    data = {
        "truncated": whole[: len(whole) // 2],
        "not gzip": b"{}",
        "empty object": gzip.compress(b"{}", mtime=0),
        "a list": gzip.compress(b"[]", mtime=0),
    }[cut]
    path.write_bytes(data)
    with pytest.raises(DamagedResultsError, match="damaged") as caught:
        load_results("grokking", "ci")
    assert str(path) in str(caught.value)
    assert path.read_bytes() == data  # left as it was


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    path = results_files.write(RESULTS, tmp_path / "x-ci.json.gz")
    before = path.read_bytes()
    with pytest.raises(TypeError):
        results_files.write({"runs": {"a/0": object()}}, path)  # contents JSON cannot hold

    def full_disk(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results_files.os, "replace", full_disk)  # the temporary file written, the rename fails
    with pytest.raises(OSError, match="No space"):
        results_files.write({"runs": {}}, path)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["x-ci.json.gz"]


def test_the_tool_converts_every_plain_file_in_place_and_check_finds_what_remains(tmp_path, capsys):
    folder = tmp_path / "results"
    folder.mkdir()
    smallest = min((ROOT / "book" / "results").glob("*.json*"), key=lambda p: p.stat().st_size)
    (folder / "real-full.json").write_text(json.dumps(results_files.read(smallest), indent=1, sort_keys=True) + "\n")
    (folder / "toy-full.json").write_text(json.dumps({"runs": {"x/0": {"v": float("nan"), "w": 0.1 + 0.2}}}))
    originals = {p.name: json.dumps(json.loads(p.read_text()), sort_keys=True) for p in folder.glob("*.json")}
    plain_bytes = (folder / "real-full.json").read_bytes()
    assert compact_results.main(["--check", str(folder)]) == 1
    assert compact_results.main([str(folder)]) == 0
    assert compact_results.main(["--check", str(folder)]) == 0
    assert sorted(p.name for p in folder.iterdir()) == ["real-full.json.gz", "toy-full.json.gz"]
    for name, text in originals.items():
        assert json.dumps(results_files.read(folder / (name + ".gz")), sort_keys=True) == text
    assert gzip.decompress((folder / "real-full.json.gz").read_bytes()) == plain_bytes  # the same text, byte for byte
    (folder / "toy-full.json").write_text(json.dumps({"runs": {}}))  # beside its gzip: refused, nothing touched
    assert compact_results.main([str(folder)]) == 1
    assert "two forms" in capsys.readouterr().err and (folder / "toy-full.json").exists()


def test_the_stash_and_the_seed_never_leave_two_forms_of_one_name(tmp_path):
    book, pending, runs = tmp_path / "book", tmp_path / "pending", tmp_path / "runs"
    book.mkdir()
    (book / "a-full.json").write_text(json.dumps({"runs": {"s/0": {}}}))  # an unconverted book file
    results_files.write({"runs": {"s/0": {}}}, book / "b-full.json.gz")
    assert sorted(pending_results.seed(runs, book, pending)) == ["a-full.json", "b-full.json.gz"]
    write_results({"runs": {"s/0": {}, "s/1": {}}}, runs / "a-full.json")  # a run added: now gzip
    assert pending_results.stash(runs, book, pending) == ["a-full"]
    assert sorted(p.name for p in pending.iterdir()) == ["a-full.json.gz"]
    assert pending_results.stash(runs, book, pending) == []  # already stashed
    (pending / "c-full.json").write_text(json.dumps({"runs": {"s/0": {}}}))
    fresh = tmp_path / "fresh"
    assert sorted(pending_results.seed(fresh, book, pending)) == ["a-full.json.gz", "b-full.json.gz", "c-full.json"]
    assert set(results_files.read(fresh / "a-full.json.gz")["runs"]) == {"s/0", "s/1"}  # the stash came first


def test_dropping_an_arm_removes_its_runs_at_every_grid_point_and_nothing_else(tmp_path, capsys):
    path = tmp_path / "sweep-full.json.gz"
    runs = {"manifold_muon@qklr=0.01/100": {}, "manifold_muon/3": {}, "muon@qklr=0.01/100": {}, "muon/3": {}}
    write_results({"config": {"lr": 0.01}, "runs": runs}, path)
    assert drop_runs.main(["manifold_muon", str(path)]) == 0
    assert set(results_files.read(path)["runs"]) == {"muon@qklr=0.01/100", "muon/3"}
    assert results_files.read(path)["config"] == {"lr": 0.01}
    before = path.read_bytes()
    assert drop_runs.drop(path, "manifold_muon") == [] and path.read_bytes() == before  # none left: untouched
    assert drop_runs.main(["muon", str(tmp_path / "missing-full.json.gz")]) == 1  # one clear error, nothing dropped
    assert "no such results file" in capsys.readouterr().err and len(results_files.read(path)["runs"]) == 2


def test_the_tracked_checkout_is_at_most_60_mib():
    """A device call carries the checkout whole (at most 64 MiB). Fails until the results files
    are converted (``python tools/compact_results.py``)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (a copy on a lent machine)")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = [ROOT / name for name in listed.decode().split("\0") if name]
    total = sum(path.stat().st_size for path in files if path.is_file())
    assert total <= 60 * 2**20, f"tracked files hold {total / 2**20:.1f} MiB"
