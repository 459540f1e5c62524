"""CIFAR-10 readers on tiny generated copies of every supported format, plus the shared copy."""

from __future__ import annotations

import codecs
import collections
import hashlib
import io
import os
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from stiefel_book.data import (
    CLASSES,
    CIFAR10Data,
    DataError,
    channel_stats,
    cifar10,
    load_cifar10,
    normalize,
    normalize_images,
    safety,
)

TRAIN_PER_CLASS, TEST_PER_CLASS = 2, 1
SHARED_COPY = Path(__file__).resolve().parents[2] / "shared" / "data" / "cifar10-jpeg.tar.xz"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    """No test sees the user's data or cache unless it sets them itself."""
    monkeypatch.delenv("STIEFEL_CIFAR10", raising=False)
    monkeypatch.setenv("STIEFEL_CACHE", str(tmp_path / "default-cache"))


def _tiny(per_class: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    labels = np.repeat(np.arange(10, dtype=np.int64), per_class)
    images = np.random.default_rng(seed).integers(0, 256, (len(labels), 32, 32, 3), dtype=np.uint8)
    return images, labels


TRAIN, TEST = _tiny(TRAIN_PER_CLASS, 0), _tiny(TEST_PER_CLASS, 1)


def _py2_pickle(obj: object) -> bytes:
    """Pickle like the original Python 2 files: protocol 2, numpy named ``numpy.core``."""
    return pickle.dumps(obj, protocol=2).replace(b"numpy._core.multiarray", b"numpy.core.multiarray")


def _batch(images: np.ndarray, labels: np.ndarray) -> bytes:
    data = images.transpose(0, 3, 1, 2).reshape(len(images), 3072)  # R, G, B planes
    return _py2_pickle(
        {b"batch_label": b"tiny", b"labels": labels.tolist(), b"data": data, b"filenames": [b"x.png"] * len(images)}
    )


def make_official_folder(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``root/cifar-10-batches-py`` with tiny batches; their MD5s replace the official ones."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    order = np.arange(len(TRAIN[1])).reshape(5, -1)  # five train batches of 4
    blobs = {f"data_batch_{i + 1}": _batch(TRAIN[0][rows], TRAIN[1][rows]) for i, rows in enumerate(order)}
    blobs["test_batch"] = _batch(*TEST)
    for name, blob in blobs.items():
        (folder / name).write_bytes(blob)
    (folder / "batches.meta").write_bytes(_py2_pickle({b"label_names": list(CLASSES)}))
    monkeypatch.setattr(cifar10, "OFFICIAL_MD5", {n: hashlib.md5(b).hexdigest() for n, b in blobs.items()})
    return folder


def make_tar(folder: Path, archive: Path) -> Path:
    mode = {".gz": "w:gz", ".xz": "w:xz", ".tar": "w"}[archive.suffix]
    with tarfile.open(archive, mode) as tar:
        tar.add(folder, arcname=folder.name if archive.name.startswith("cifar-10") else ".")
    return archive


def _colour(label: int, index: int) -> tuple[int, int, int]:
    return (20 * label + 10, 40 * index + 20, 128)


def make_jpeg_folder(root: Path) -> Path:
    """``train/<class>/NNNN.jpg`` and ``test/<class>/NNNN.jpg`` of flat colours (exact after JPEG)."""
    for split, per_class in (("train", TRAIN_PER_CLASS), ("test", TEST_PER_CLASS)):
        for label, name in enumerate(CLASSES):
            (root / split / name).mkdir(parents=True)
            for index in range(per_class):
                Image.new("RGB", (32, 32), _colour(label, index)).save(
                    root / split / name / f"{index:04d}.jpg", quality=95
                )
    return root


def _assert_jpeg_copy(data: CIFAR10Data) -> None:
    assert data.source_kind == "jpeg"
    assert data.train_images.shape == (20, 32, 32, 3) and data.test_images.shape == (10, 32, 32, 3)
    np.testing.assert_array_equal(data.train_labels, np.repeat(np.arange(10), TRAIN_PER_CLASS))
    for images, labels, per_class in (
        (data.train_images, data.train_labels, TRAIN_PER_CLASS),
        (data.test_images, data.test_labels, TEST_PER_CLASS),
    ):
        for row, label in enumerate(labels):
            expected = _colour(int(label), row % per_class)
            assert np.abs(images[row].mean((0, 1)) - expected).max() < 2


# --- the official format ----------------------------------------------------------------


@pytest.mark.parametrize("form", ["archive", "folder", "parent folder"])
def test_official_copy_is_read_exactly(form, tmp_path, monkeypatch):
    folder = make_official_folder(tmp_path / "src", monkeypatch)
    source = {
        "archive": make_tar(folder, tmp_path / "cifar-10-python.tar.gz"),
        "folder": folder,
        "parent folder": folder.parent,
    }[form]
    data = load_cifar10(source, cache_dir=tmp_path / "cache", progress=False)
    assert data.source_kind == "official" and data.source == str(Path(source).resolve())
    np.testing.assert_array_equal(data.train_images, TRAIN[0])
    np.testing.assert_array_equal(data.train_labels, TRAIN[1])
    np.testing.assert_array_equal(data.test_images, TEST[0])
    assert data.test_labels.dtype == np.int64 and data.train_images.dtype == np.uint8
    if form == "archive":
        digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()
        assert data.source_hash == f"sha256:{digest}"
        assert data.provenance()["source_hash"] == data.source_hash


# the published MD5s (https://www.cs.toronto.edu/~kriz/cifar.html and the archive's batches)
PUBLISHED_MD5 = {
    "archive": "c58f30108f718f92721af3b95e74349a",
    "data_batch_1": "c99cafc152244af753f735de768cd75f",
    "test_batch": "40351d587109b95175f43aff81a1287e",
}
OFFICIAL_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"


def test_default_checksums_are_the_published_ones():
    assert cifar10.OFFICIAL_ARCHIVE_MD5 == PUBLISHED_MD5["archive"]
    assert cifar10.OFFICIAL_MD5["data_batch_1"] == PUBLISHED_MD5["data_batch_1"]
    assert cifar10.OFFICIAL_MD5["test_batch"] == PUBLISHED_MD5["test_batch"]
    assert len(cifar10.OFFICIAL_MD5) == 6


class _Payload:
    """Unpickling this would run code: it creates the folder ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (str(self.marker),))


def test_checksum_mismatch_is_never_unpickled(tmp_path, monkeypatch):
    folder = make_official_folder(tmp_path / "src", monkeypatch)
    marker = tmp_path / "pwned"
    (folder / "data_batch_3").write_bytes(pickle.dumps({b"data": _Payload(marker)}))
    unpickled = []
    monkeypatch.setattr(cifar10, "restricted_loads", lambda raw: unpickled.append(raw))
    with pytest.raises(DataError, match="data_batch_3 has MD5 .* not unpickled"):
        load_cifar10(folder, cache_dir=tmp_path / "cache", progress=False)
    assert not marker.exists() and unpickled == []  # no batch at all was unpickled


def test_matching_checksum_still_cannot_run_code(tmp_path, monkeypatch):
    folder = make_official_folder(tmp_path / "src", monkeypatch)
    marker = tmp_path / "pwned"
    evil = pickle.dumps({b"data": _Payload(marker)}, protocol=2)
    (folder / "test_batch").write_bytes(evil)
    monkeypatch.setitem(cifar10.OFFICIAL_MD5, "test_batch", hashlib.md5(evil).hexdigest())
    with pytest.raises(DataError, match="test_batch could not be unpickled safely.*posix.mkdir"):
        load_cifar10(folder, cache_dir=tmp_path / "cache", progress=False)
    assert not marker.exists()


def test_missing_batch_and_malformed_batch(tmp_path, monkeypatch):
    folder = make_official_folder(tmp_path / "src", monkeypatch)
    bad = _py2_pickle({b"data": np.zeros((2, 10), np.uint8), b"labels": [0, 1]})
    (folder / "test_batch").write_bytes(bad)
    monkeypatch.setitem(cifar10.OFFICIAL_MD5, "test_batch", hashlib.md5(bad).hexdigest())
    with pytest.raises(DataError, match="test_batch is not a CIFAR-10 batch"):
        load_cifar10(folder, cache_dir=tmp_path / "cache", progress=False)
    (folder / "data_batch_5").unlink()
    with pytest.raises(DataError, match="missing: data_batch_5"):
        load_cifar10(folder, cache_dir=tmp_path / "cache", progress=False)


# --- the JPEG format --------------------------------------------------------------------


@pytest.mark.parametrize("form", ["folder", ".tar.xz", ".tar.gz", ".tar", "nested .tar.xz"])
def test_jpeg_copy(form, tmp_path):
    folder = make_jpeg_folder(tmp_path / "cifar10-jpeg")
    if form == "folder":
        source = folder
    elif form == "nested .tar.xz":  # members under a top folder: cifar10-jpeg/train/...
        source = tmp_path / "nested.tar.xz"
        with tarfile.open(source, "w:xz") as tar:
            tar.add(folder, arcname="cifar10-jpeg")
    else:
        source = make_tar(folder, tmp_path / f"copy{form}")
    data = load_cifar10(source, cache_dir=tmp_path / "cache", progress=False)
    _assert_jpeg_copy(data)
    reference = load_cifar10(folder, cache_dir=tmp_path / "cache2", progress=False)
    np.testing.assert_array_equal(data.train_images, reference.train_images)  # same order


def test_jpeg_missing_class_wrong_size_and_broken_file(tmp_path):
    folder = make_jpeg_folder(tmp_path / "jpeg")
    Image.new("RGB", (16, 16)).save(folder / "test" / "cat" / "0000.jpg")
    with pytest.raises(DataError, match="16x16, not a 32x32"):
        load_cifar10(folder, cache_dir=tmp_path / "cache", progress=False)
    (folder / "test" / "cat" / "0000.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    with pytest.raises(DataError, match="0000.jpg is not a readable JPEG"):
        load_cifar10(folder, cache_dir=tmp_path / "cache", progress=False)
    for file in (folder / "test" / "cat").iterdir():
        file.unlink()
    with pytest.raises(DataError, match="no test images of class cat"):
        load_cifar10(folder, cache_dir=tmp_path / "cache", progress=False)


# --- unsafe, truncated and missing sources ----------------------------------------------


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", data: bytes = b"x"):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, io.BytesIO(data) if kind == tarfile.REGTYPE else None


@pytest.mark.parametrize(
    "member, reason",
    [
        (_member("../evil.jpg"), "climbs out"),
        (_member("train/../../evil.jpg"), "climbs out"),
        (_member("/tmp/stiefel-evil.jpg"), "absolute path"),
        (_member("train/cat/link.jpg", tarfile.SYMTYPE, "../../../outside.jpg"), "is a link"),
        (_member("train/cat/hard.jpg", tarfile.LNKTYPE, "/etc/passwd"), "is a link"),
        (_member("train/cat/dev.jpg", tarfile.CHRTYPE), "device"),
    ],
)
def test_malicious_archive_is_refused_and_writes_nothing(member, reason, tmp_path):
    folder = make_jpeg_folder(tmp_path / "work" / "jpeg")
    archive = tmp_path / "work" / "evil.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(folder, arcname=".")  # a valid copy first, the bad member last
        tar.addfile(*member)
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(DataError, match=f"unsafe archive .*{reason}"):
        load_cifar10(archive, cache_dir=tmp_path / "work" / "cache", progress=False)
    assert sorted(p for p in tmp_path.rglob("*")) == before  # not even a cache file
    assert not Path("/tmp/stiefel-evil.jpg").exists()


@pytest.mark.parametrize(
    "name, safe",
    [
        ("train/cat/0001.jpg", True),
        ("./cifar-10-batches-py/data_batch_1", True),
        ("a..b/c..jpg", True),
        ("..\\evil.jpg", False),
        ("train\\..\\..\\evil", False),
        ("C:evil.jpg", False),
        ("\\\\server\\share\\evil", False),
        ("/etc/passwd", False),
    ],
)
def test_tar_member_names(name, safe):
    assert (safety.tar_member_problem(tarfile.TarInfo(name)) is None) == safe


def test_restricted_unpickler_allows_arrays_only():
    array = np.arange(6, dtype=np.uint8).reshape(2, 3)
    loaded = safety.restricted_loads(_py2_pickle({b"data": array, "n": [1, 2.5, "x"]}))
    np.testing.assert_array_equal(loaded[b"data"], array)
    assert loaded["n"] == [1, 2.5, "x"]

    class Rot13:
        def __reduce__(self):
            return (codecs.encode, ("abc", "rot13"))

    for payload in (Rot13(), _Payload(Path("never")), collections.OrderedDict(a=1)):
        with pytest.raises(pickle.UnpicklingError, match="refusing"):
            safety.restricted_loads(pickle.dumps(payload, protocol=2))


@pytest.mark.parametrize("suffix", [".tar.gz", ".tar.xz"])
def test_truncated_archive(suffix, tmp_path, monkeypatch):
    if suffix == ".tar.gz":
        archive = make_tar(make_official_folder(tmp_path / "src", monkeypatch), tmp_path / "cifar-10-python.tar.gz")
    else:
        archive = make_tar(make_jpeg_folder(tmp_path / "jpeg"), tmp_path / "copy.tar.xz")
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(DataError, match="truncated") as caught:
        load_cifar10(archive, cache_dir=tmp_path / "cache", progress=False)
    assert "STIEFEL_CIFAR10" in str(caught.value) and "download=True" in str(caught.value)


def test_not_an_archive_and_empty_folder(tmp_path):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"hello")
    with pytest.raises(DataError, match="not a readable tar archive"):
        load_cifar10(junk, cache_dir=tmp_path / "cache", progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="holds no CIFAR-10 data"):
        load_cifar10(tmp_path / "empty", cache_dir=tmp_path / "cache", progress=False)


def test_missing_source_says_how_to_get_the_data(tmp_path):
    for source in (tmp_path / "nowhere", None):
        with pytest.raises(DataError) as caught:
            load_cifar10(source, cache_dir=tmp_path / "cache")
        message = str(caught.value)
        assert isinstance(caught.value, ValueError)
        for hint in ("STIEFEL_CIFAR10", "cifar-10-python.tar.gz", "download=True"):
            assert hint in message
    assert "does not exist" in str(pytest.raises(DataError, load_cifar10, tmp_path / "x").value)


# --- environment, cache and download ----------------------------------------------------


def test_environment_variables_are_honoured(tmp_path, monkeypatch):
    folder = make_jpeg_folder(tmp_path / "jpeg")
    monkeypatch.setenv("STIEFEL_CIFAR10", str(folder))
    monkeypatch.setenv("STIEFEL_CACHE", str(tmp_path / "my-cache"))
    data = load_cifar10(progress=False)
    _assert_jpeg_copy(data)
    assert data.source == str(folder.resolve())
    assert len(list((tmp_path / "my-cache" / "cifar10").glob("cifar10-*.npz"))) == 1


def test_cache_is_hit_on_second_load(tmp_path, monkeypatch):
    folder = make_jpeg_folder(tmp_path / "jpeg")
    decoded = []
    decode = cifar10._decode_jpeg
    monkeypatch.setattr(cifar10, "_decode_jpeg", lambda *a: decoded.append(1) or decode(*a))
    first = load_cifar10(folder, cache_dir=tmp_path / "cache", progress=False)
    assert len(decoded) == 30
    second = load_cifar10(folder, cache_dir=tmp_path / "cache", progress=False)
    assert len(decoded) == 30  # nothing decoded again
    assert second.source_kind == "jpeg" and second.source_hash == first.source_hash
    np.testing.assert_array_equal(first.train_images, second.train_images)
    np.testing.assert_array_equal(first.test_labels, second.test_labels)
    # A changed source is a new key; a broken cache file is decoded again and replaced.
    Image.new("RGB", (32, 32), (1, 2, 3)).save(folder / "test" / "cat" / "0000.jpg")
    third = load_cifar10(folder, cache_dir=tmp_path / "cache", progress=False)
    assert len(decoded) == 60 and third.source_hash != first.source_hash
    for file in (tmp_path / "cache").glob("*.npz"):
        file.write_bytes(b"broken")
    assert load_cifar10(folder, cache_dir=tmp_path / "cache", progress=False).source_kind == "jpeg"
    assert len(decoded) == 90
    assert load_cifar10(folder, cache_dir=tmp_path / "cache", progress=False).source_kind == "jpeg"
    assert len(decoded) == 90
    assert not list((tmp_path / "cache").glob("*.tmp"))


def test_download_fetches_verifies_and_reuses(tmp_path, monkeypatch):
    archive = make_tar(make_official_folder(tmp_path / "src", monkeypatch), tmp_path / "cifar-10-python.tar.gz")
    fetched = []

    def fake_fetch(url, dest, progress):
        fetched.append(url)
        Path(dest).write_bytes(archive.read_bytes())

    monkeypatch.setattr(cifar10, "_fetch", fake_fetch)
    monkeypatch.setattr(cifar10, "OFFICIAL_ARCHIVE_MD5", hashlib.md5(archive.read_bytes()).hexdigest())
    cache = tmp_path / "cache"
    data = load_cifar10(download=True, cache_dir=cache, progress=False)
    assert fetched == [OFFICIAL_URL]
    assert data.source_kind == "official"
    assert data.source == str((cache / "cifar-10-python.tar.gz").resolve())
    np.testing.assert_array_equal(data.train_images, TRAIN[0])
    load_cifar10(download=True, cache_dir=cache, progress=False)  # verified, not fetched again
    load_cifar10(cache_dir=cache, progress=False)  # an earlier download is found
    assert len(fetched) == 1
    into_folder = load_cifar10(tmp_path / "new", download=True, cache_dir=cache, progress=False)
    assert into_folder.source == str((tmp_path / "new" / "cifar-10-python.tar.gz").resolve())
    assert len(fetched) == 2


def test_download_with_wrong_checksum_or_no_network(tmp_path, monkeypatch):
    monkeypatch.setattr(cifar10, "_fetch", lambda url, dest, progress: Path(dest).write_bytes(b"evil"))
    cache = tmp_path / "cache"
    with pytest.raises(DataError, match="downloaded archive has MD5 .* not the published"):
        load_cifar10(download=True, cache_dir=cache, progress=False)
    assert list(cache.iterdir()) == []  # nothing unverified is kept

    def offline(url, dest, progress):
        raise OSError("network is unreachable")

    monkeypatch.setattr(cifar10, "_fetch", offline)
    with pytest.raises(DataError, match="Downloading .* failed: network is unreachable"):
        load_cifar10(download=True, cache_dir=cache, progress=False)


# --- normalisation ----------------------------------------------------------------------


def test_channel_stats_and_normalize(tmp_path, monkeypatch):
    data = load_cifar10(
        make_official_folder(tmp_path / "src", monkeypatch), cache_dir=tmp_path / "cache", progress=False
    )
    mean, std = channel_stats(data.train_images)
    pixels = data.train_images.reshape(-1, 3).astype(np.float64) / 255
    np.testing.assert_allclose(mean, pixels.mean(0), rtol=1e-12)
    np.testing.assert_allclose(std, pixels.std(0), rtol=1e-12)
    norm = normalize(data)
    assert norm.train_x.shape == (20, 3, 32, 32) and norm.train_x.dtype == torch.float32
    assert norm.train_x.is_contiguous() and norm.test_y.dtype == torch.int64
    torch.testing.assert_close(norm.train_x.mean((0, 2, 3)), torch.zeros(3), atol=1e-5, rtol=0)
    torch.testing.assert_close(norm.train_x.std((0, 2, 3), correction=0), torch.ones(3), atol=1e-5, rtol=0)
    x = normalize_images(torch.from_numpy(data.test_images[:1]), norm.mean, norm.std)
    pixel = (data.test_images[0, 5, 7] / 255 - mean) / std  # channel-last pixel (5, 7)
    torch.testing.assert_close(x[0, :, 5, 7], torch.tensor(pixel, dtype=torch.float32))


# --- the shared JPEG copy ---------------------------------------------------------------


def _shared_source() -> str | None:
    return os.environ.get("STIEFEL_CIFAR10") or (str(SHARED_COPY) if SHARED_COPY.exists() else None)


_SHARED = _shared_source()  # read before the autouse fixture clears the variable


@pytest.mark.slow  # decodes 60,000 JPEGs: about 20 s on two CPU cores
@pytest.mark.skipif(_SHARED is None, reason="no CIFAR-10 copy: set STIEFEL_CIFAR10")
def test_shared_copy(tmp_path):
    data = load_cifar10(_SHARED, cache_dir=tmp_path / "cache", progress=False)
    assert data.train_images.shape == (50_000, 32, 32, 3)
    assert data.test_images.shape == (10_000, 32, 32, 3)
    assert np.bincount(data.train_labels).tolist() == [5000] * 10
    assert np.bincount(data.test_labels).tolist() == [1000] * 10
    mean, _ = channel_stats(data.train_images)
    np.testing.assert_allclose(mean, (0.4913, 0.4821, 0.4465), atol=1e-3)
    if data.source_kind == "jpeg":  # results files can say the JPEG copy was used
        assert data.source_hash.startswith(("sha256:", "listing-sha256:"))
