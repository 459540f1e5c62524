"""Every chapter opens with the launch cell (tools/launch_cell.py), and the cell works as a hosted
kernel meets it: a fresh venv with torch, numpy, matplotlib and ipywidgets (and the kernel that
runs the notebook) but no stiefel_core, a chapter executed in that kernel from its first cell,
the library installed by the cell from a copy of this checkout (``STIEFEL_INSTALL_SOURCE``).

The fresh venv links this environment's installed files in (as tests/test_packaging.py does),
and pip runs with ``--no-index`` (``PIP_NO_INDEX``): nothing is downloaded, and pip fails if
``stiefel-core[chapters]`` asks for anything the venv does not hold. The chapters' other
requirements (scipy, tqdm, pillow, pyyaml) are linked in too, since offline pip could not fetch them;
the test checks that the venv did not hold stiefel_core before the cell ran. About a minute:
marker ``packaging``.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import launch_cell  # noqa: E402
from clean_venv import closure, link_distribution  # noqa: E402
from processes import run_bounded  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "p4_equivariance"  # a short chapter: certificates and a static explorer, no results files
HOSTED = ["torch", "numpy", "matplotlib", "ipywidgets"]  # what a hosted kernel has
KERNEL = ["ipykernel", "nbclient", "nbformat"]  # what runs the notebook
CHAPTER_EXTRAS = [
    "scipy",
    "tqdm",
    "pillow",
    "pyyaml",
]  # stiefel-core[chapters] beyond HOSTED, linked in: pip here is offline
BUILD = ["pip", "setuptools"]  # the cell runs pip, which builds the checkout with setuptools


def test_every_chapter_opens_with_the_launch_cell():
    twins = launch_cell.chapters()
    assert len(twins) >= 12
    for twin in twins:
        assert launch_cell.with_launch_cell(twin.stem, twin.read_text()) == twin.read_text(), (
            f"{twin.name}: its first cell is not the launch cell: run python tools/launch_cell.py --write, then make "
            "sync"
        )
        notebook = nbformat.read(ROOT / "book" / f"{twin.stem}.ipynb", as_version=4)
        first = next(c for c in notebook.cells if c.cell_type == "code")
        assert first.source == launch_cell.cell_source(twin.stem) and "remove-cell" in first.metadata.get("tags", [])
        assert first.outputs == [], f"book/{twin.stem}.ipynb: the launch cell printed where stiefel_core is installed"


def test_the_launch_cell_clones_the_repository_of_the_launch_buttons():
    source = launch_cell.cell_source("cifar10_patches")
    assert launch_cell.repository_url() in source and "[chapters]" in source and "load_cifar10(download=True)" in source
    assert "load_cifar10" not in launch_cell.cell_source("primer")
    compile(source, "launch cell", "exec")


@pytest.mark.packaging
def test_a_chapter_runs_from_its_first_cell_in_a_fresh_kernel_without_the_library(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    for dist in closure([*HOSTED, *KERNEL, *CHAPTER_EXTRAS, *BUILD]):
        if dist.metadata["Name"].lower().replace("_", "-") not in ("stiefel-core", "stiefel-book"):
            link_distribution(dist, site)
    checkout = tmp_path / "stiefel-attention-book"  # a copy: pip's build leaves nothing in the worktree
    checkout.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, checkout / name)
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "stiefel_core", checkout / "stiefel_core", ignore=skip)
    shutil.copytree(ROOT / "bookpkg", checkout / "bookpkg", ignore=skip)  # the book's package, beside the library
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_", "JUPYTER"))}
    env.update(
        STIEFEL_INSTALL_SOURCE=str(checkout),
        PIP_NO_INDEX="1",
        PIP_NO_CACHE_DIR="1",
        PIP_NO_BUILD_ISOLATION="0",  # pip reads "0" here as: no isolated build env (it would download setuptools)
        STIEFEL_PROFILE="ci",
        TQDM_DISABLE="1",
        MPLBACKEND="module://matplotlib_inline.backend_inline",
        HOME=str(tmp_path),
        OMP_NUM_THREADS="1",
    )
    probe = subprocess.run(
        [python, "-c", "import importlib.util as u; print(u.find_spec('stiefel_core'), u.find_spec('stiefel_book'))"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=tmp_path,
    )
    assert probe.stdout.strip() == "None None"  # the kernel meets the chapter without either package
    notebook = tmp_path / f"{CHAPTER}.ipynb"
    shutil.copy(ROOT / "book" / f"{CHAPTER}.ipynb", notebook)
    script = (
        "import sys, nbformat, nbclient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "nbclient.NotebookClient(nb, kernel_name='python3', timeout=600).execute()\n"
        "nbformat.write(nb, sys.argv[1])\n"
    )
    run = run_bounded([python, "-c", script, notebook], 900, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stderr[-4000:]
    executed = nbformat.read(notebook, as_version=4)
    first = next(c for c in executed.cells if c.cell_type == "code")
    printed = "".join(o.get("text", "") for o in first.outputs)
    assert f"installed from {checkout}; profile: ci" in printed
    where = subprocess.run(
        [python, "-c", "import stiefel_core, stiefel_book; print(stiefel_core.__file__); print(stiefel_book.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=tmp_path,
    )
    assert all(line.startswith(str(site)) for line in where.stdout.split())  # installed into the kernel's own env
