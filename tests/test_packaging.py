"""`pip install .` gives the library alone with its minimum requirements: the wheel holds only
``stiefel_core`` (the book's package is ``bookpkg/``, apart), its metadata torch alone, no pins,
and in a clean venv that has only the wheel and its requirements (torch and torch's own) the
library imports and trains: a model's frames stepped by ``configure_optimizer``, a bad gradient
named. (The unit suites run once, in the main environment.)

The clean venv reuses this environment's installed torch (by linking its files in) and installs
the wheel with `pip --no-index`: no download, and pip fails if the wheel asks for anything the
clean venv does not have. numpy, matplotlib, Jupyter, transformers are absent there, so library
code that needed them would fail.
"""

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from clean_venv import closure, link_distribution
from processes import run_bounded

ROOT = Path(__file__).resolve().parents[1]
USE = """
import torch
from torch import nn
from stiefel_core import NonFiniteGradientError, SelfAttention, configure_optimizer, stiefelize, unstiefelize
from stiefel_core.manifold import orthonormality_error

torch.manual_seed(0)
model = nn.Sequential(SelfAttention(16, 2), nn.Flatten(), nn.Linear(16 * 5, 3))
opt = configure_optimizer(model, lr=1e-2, weight_decay=0.1)
x, y = torch.randn(8, 5, 16), torch.randint(0, 3, (8,))
before = model[0].W_Q.detach().clone()
for _ in range(3):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
assert not torch.equal(before, model[0].W_Q) and orthonormality_error(model[0].W_Q.detach()).max() < 1e-5
model[2].weight.grad.fill_(float("nan"))
try:
    opt.step()
    raise SystemExit("a NaN gradient was stepped")
except NonFiniteGradientError as error:
    assert "2.weight" in str(error), error
mha = nn.Sequential(nn.MultiheadAttention(16, 2, batch_first=True))
stiefelize(mha)
unstiefelize(mha)
print("ok")
"""

pytestmark = pytest.mark.packaging


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    readme = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["readme"]
    for name in ("pyproject.toml", readme):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "stiefel_core", source / "stiefel_core", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    build = run_bounded(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out, source], 300
    )
    assert build.returncode == 0, build.stderr[-4000:]
    (built,) = out.glob("stiefel_core-*.whl")
    return built


def test_the_wheel_requires_torch_alone_with_a_lower_bound(wheel):
    with zipfile.ZipFile(wheel) as z:
        metadata = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    requires = [
        Requirement(line.split(":", 1)[1].strip())
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    ]
    core = [r for r in requires if r.marker is None]
    assert [r.name for r in core] == ["torch"]
    assert all(spec.operator == ">=" for spec in core[0].specifier)
    assert [r for r in requires if r.marker is not None] == []  # no extras: the book's live in bookpkg/
    assert not any(op == "==" for r in requires for op in (s.operator for s in r.specifier))  # no exact pins


def test_the_wheel_holds_the_library_alone(wheel):
    with zipfile.ZipFile(wheel) as z:
        top = {n.split("/")[0] for n in z.namelist() if ".dist-info/" not in n}
        modules = {n for n in z.namelist() if n.endswith(".py")}
    assert top == {"stiefel_core"}
    assert "stiefel_core/optim.py" in modules and not any("experiments" in n or "findings" in n for n in modules)


def test_the_installed_library_trains_in_a_clean_venv_with_only_the_core_requirements(wheel, tmp_path):
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
    for dist in closure(["torch"]):
        link_distribution(dist, site)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_"))}
    install = run_bounded(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-index", "--no-cache-dir", wheel],
        300,
        env=env,
    )
    assert install.returncode == 0, install.stderr  # every requirement of the wheel is already there
    probe = subprocess.run(
        [
            python,
            "-c",
            "import stiefel_core, importlib.util as u; print(stiefel_core.__file__); "
            "print([m for m in ('numpy', 'matplotlib', 'transformers', 'jupyter_core') if u.find_spec(m)])",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    location, present = probe.stdout.splitlines()
    assert location.startswith(str(site)) and present == "[]"
    use = run_bounded([python, "-c", USE], 300, cwd=tmp_path, env=env)
    assert use.returncode == 0 and use.stdout.strip() == "ok", use.stdout[-4000:] + use.stderr[-4000:]
