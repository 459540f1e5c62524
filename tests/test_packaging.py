"""`pip install .` gives the library with its minimum requirements: the wheel's metadata holds no
exact pins and no book packages, and the library's own tests pass in a clean venv that has only
the wheel, its requirements (torch and torch's own) and the test runner.

The clean venv reuses this environment's installed torch 2.13.0 (and pytest, hypothesis) by
linking their files in, and installs the wheel with `pip --no-index`: no download, and pip
fails if the wheel asks for anything the clean venv does not have. numpy, matplotlib, Jupyter,
transformers are absent there, so a test that needed them would fail (or, for transformers, skip).
"""

import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from processes import run_bounded

ROOT = Path(__file__).resolve().parents[1]
LIBRARY_TESTS = ["test_optim.py", "test_contracts.py", "test_convert.py"]  # need torch alone
RUNNERS = ["pytest", "hypothesis"]

pytestmark = pytest.mark.packaging


def closure(names: list[str]) -> list:
    """The installed distributions ``names`` and everything they require, here."""
    seen, todo = {}, list(names)
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            dist = distribution(name)
        except Exception:
            continue  # an optional or platform-specific requirement that is not installed
        seen[key] = dist
        for req in dist.requires or []:
            r = Requirement(req)
            if r.marker is None or r.marker.evaluate({"extra": ""}):
                todo.append(r.name)
    return list(seen.values())


def link_distribution(dist, site: Path) -> None:
    """Link a distribution's top-level files (packages, modules, its .dist-info) into ``site``."""
    base = Path(dist.locate_file(""))
    tops = {Path(f).parts[0] for f in dist.files or [] if not Path(f).parts[0].startswith("..")}
    for top in tops:
        target = site / top
        if not target.exists() and (base / top).exists():
            target.symlink_to(base / top)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "stiefel_core", source / "stiefel_core", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    build = run_bounded([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out, source], 300)
    assert build.returncode == 0, build.stderr[-4000:]
    (built,) = out.glob("stiefel_core-*.whl")
    return built


def test_the_wheel_requires_torch_alone_with_a_lower_bound(wheel):
    with zipfile.ZipFile(wheel) as z:
        metadata = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    requires = [Requirement(line.split(":", 1)[1].strip()) for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    core = [r for r in requires if r.marker is None]
    assert [r.name for r in core] == ["torch"]
    assert all(spec.operator == ">=" for spec in core[0].specifier)
    extras = {str(r.marker).split('"')[1] for r in requires if r.marker is not None}
    assert {"book", "test", "dev"} <= extras
    assert not any(op == "==" for r in requires for op in (s.operator for s in r.specifier))  # no exact pins


def test_the_library_tests_pass_in_a_clean_venv_with_only_the_core_requirements(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    for dist in closure(["torch", *RUNNERS]):
        link_distribution(dist, site)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_"))}
    install = run_bounded([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-index",
                           "--no-cache-dir", wheel], 300, env=env)
    assert install.returncode == 0, install.stderr  # every requirement of the wheel is already there
    tests = tmp_path / "tests"
    tests.mkdir()
    for name in ["conftest.py", "foreign_models.py", *LIBRARY_TESTS]:
        shutil.copy(ROOT / "tests" / name, tests / name)
    (tests / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n    gpu: needs CUDA\n")
    probe = subprocess.run([python, "-c", "import stiefel_core, importlib.util as u; print(stiefel_core.__file__); "
                            "print([m for m in ('numpy', 'matplotlib', 'transformers', 'jupyter_core') if u.find_spec(m)])"],
                           cwd=tests, capture_output=True, text=True, env=env, check=True)
    location, present = probe.stdout.splitlines()
    assert location.startswith(str(site)) and present == "[]"
    run = run_bounded([python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *LIBRARY_TESTS], 600, cwd=tests, env=env)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "failed" not in run.stdout
