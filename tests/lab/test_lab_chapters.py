"""Every widget of the book as a reader moves it in JupyterLab: `make lab` starts the server, a
chapter that shows widgets is opened through the server's contents API (jupytext's contents
manager, as the lab opens it), the cells its widgets need (:func:`cells_widgets_need`) run one by
one in a kernel of a session, over the kernel websocket, and then each widget is driven the way the lab
drives it: a comm message that sets a slider's value or a menu's index, after which the kernel must
send the widget's Output new contents. Running every cell of every chapter is nbval's job
(`make test` runs it on the stored outputs); this test runs only what the widgets need.

Also checked: the server writes a notebook's text twin when a notebook is saved (jupytext pairing,
jupytext.toml), and the kernel is the project's Python.

The kernels run with STIEFEL_PROFILE=ci TQDM_DISABLE=1 PYTHONHASHSEED=0 and the inline
matplotlib backend, as nbval runs the chapters, and with one thread each: two chapters run at
once (LAB_TEST_KERNELS), one kernel a core. Minutes of CPU: `make test` runs it last,
`.venv/bin/python -m pytest -m lab tests/lab` alone.
"""

from __future__ import annotations

import ast
import datetime
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
import websocket

from toc import toc_pages  # tests/toc.py (tests/ is on sys.path through its conftest)

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[2]
SCRATCH = "_build/lab-test"  # under the repository root (git-ignored), for the pairing check
CELL_TIMEOUT = 600  # seconds, as nbval's --nbval-cell-timeout in the Makefile
KERNEL_ENV = {
    "STIEFEL_PROFILE": "ci",
    "TQDM_DISABLE": "1",
    "PYTHONHASHSEED": "0",
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    "OMP_NUM_THREADS": "1",  # one thread a kernel, and KERNELS kernels at once
    # The explorers' copies for the static page draw only what is asked for: this test drives
    # the live widgets, and the copies' outputs are never compared (bookpkg/stiefel_book/widgets/static.py).
    "STIEFEL_STATIC_EXPLORERS": "off",
}
KERNELS = int(os.environ.get("LAB_TEST_KERNELS", "2"))  # chapters run at the same time
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def toc_chapters() -> list[str]:
    """The notebooks of _toc.yml in reading order (book/NAME, for each book/NAME.ipynb)."""
    return [f for f in toc_pages() if (ROOT / f"{f}.ipynb").exists()]


def stored_widget_views(chapter: str) -> int:
    """How many widgets the chapter's stored outputs display."""
    cells = json.loads((ROOT / f"{chapter}.ipynb").read_text())["cells"]
    return sum(WIDGET_VIEW in output.get("data", {}) for cell in cells for output in cell.get("outputs", []))


def _names(source: str) -> tuple[set[str], set[str]] | None:
    """``(names the cell binds, names it reads)``, or ``None`` when it is not plain Python."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a magic or a shell line
        return None
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, (ast.Store, ast.Del)) else read).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
    return bound, read


def cells_widgets_need(cells: list[dict]) -> list[dict]:
    """The code cells a reader runs before moving the chapter's widgets: each cell whose stored
    outputs show a widget, and before it every cell that binds a name one of those reads (in
    turn, the cells those read from), in the chapter's order; a cell that is not plain Python is
    kept. Every other cell is nbval's to run."""
    code = [c for c in cells if c["cell_type"] == "code" and c["source"].strip()]
    shows = {i for i, c in enumerate(code) if any(WIDGET_VIEW in o.get("data", {}) for o in c.get("outputs", []))}
    needed, wanted = set(), set()
    for i in reversed(range(max(shows) + 1 if shows else 0)):
        names = _names(code[i]["source"])
        if i in shows or names is None or names[0] & wanted:
            needed.add(i)
            wanted |= names[1] if names else set()
    return [code[i] for i in sorted(needed)]


CHAPTERS = [chapter for chapter in toc_chapters() if stored_widget_views(chapter)]  # the others: nbval alone


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A Jupyter server started by `make lab`, and its REST API."""

    def __init__(self, tmp: Path):
        self.port, self.token = free_port(), uuid.uuid4().hex
        self.url = f"http://127.0.0.1:{self.port}"
        self.headers = {"Authorization": f"token {self.token}"}  # no shared Session: kernels run in threads
        env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
        env.update(KERNEL_ENV)
        # The server's own files in a temporary folder, away from the user's settings and kernels.
        env.update(
            JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
            JUPYTER_CONFIG_DIR=str(tmp / "config"),
            JUPYTER_DATA_DIR=str(tmp / "data"),
        )
        lab_args = " ".join(
            [
                "--no-browser",
                "--allow-root",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={ROOT}",
            ]
        )
        self.log = open(tmp / "lab.log", "w")
        self.process = subprocess.Popen(
            ["make", "--no-print-directory", "lab", f"LAB_ARGS={lab_args}"],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.log_path = tmp / "lab.log"
        deadline = time.monotonic() + 180
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"`make lab` exited with {self.process.returncode}:\n{self.log_path.read_text()[-3000:]}"
                )
            try:
                if requests.get(f"{self.url}/api/status", headers=self.headers, timeout=5).ok:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"`make lab` did not answer within 180 s:\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.5)

    def api(self, method: str, path: str, **kwargs):
        response = requests.request(method, f"{self.url}/api/{path}", headers=self.headers, timeout=120, **kwargs)
        assert response.ok, f"{method} /api/{path}: HTTP {response.status_code} {response.text[:500]}"
        return response.json() if response.content else None

    def close(self):
        try:
            os.killpg(self.process.pid, signal.SIGTERM)  # make, the server and its kernels
            self.process.wait(timeout=30)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.log.close()


class Kernel:
    """A session's kernel over the server's websocket (JSON messages, as the lab's first protocol)."""

    def __init__(self, lab: Lab, path: str):
        self.lab = lab
        self.session = lab.api(
            "POST",
            "sessions",
            json={"path": path, "type": "notebook", "name": Path(path).name, "kernel": {"name": "python3"}},
        )
        self.kernel_id, self.session_id = self.session["kernel"]["id"], uuid.uuid4().hex
        self.ws = websocket.create_connection(
            f"ws://127.0.0.1:{lab.port}/api/kernels/{self.kernel_id}/channels?session_id={self.session_id}",
            header=[f"Authorization: token {lab.token}"],
            timeout=CELL_TIMEOUT,
        )
        self.comm_updates: dict[str, list[dict]] = {}  # comm_id -> states the kernel sent

    def send(self, channel: str, msg_type: str, content: dict) -> str:
        msg_id = uuid.uuid4().hex
        self.ws.send(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "username": "lab-test",
                        "session": self.session_id,
                        "msg_type": msg_type,
                        "version": "5.3",
                        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                    },
                    "parent_header": {},
                    "metadata": {},
                    "content": content,
                    "channel": channel,
                    "buffers": [],
                }
            )
        )
        return msg_id

    def wait(self, msg_id: str, reply_type: str | None) -> tuple[list[dict], dict | None]:
        """The iopub outputs of a request until the kernel is idle again, and its shell reply."""
        outputs, reply, idle = [], None, False
        while not (idle and (reply is not None or reply_type is None)):
            msg = json.loads(self.ws.recv())
            kind, content = msg["msg_type"], msg["content"]
            if kind == "comm_msg" and content.get("data", {}).get("method") in ("update", "echo_update"):
                self.comm_updates.setdefault(content["comm_id"], []).append(content["data"]["state"])
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if kind == "status" and content["execution_state"] == "idle":
                idle = True
            elif kind == reply_type:
                reply = content
            elif kind in ("stream", "display_data", "execute_result", "error"):
                outputs.append({"output_type": kind, **content})
        return outputs, reply

    def execute(self, code: str) -> tuple[list[dict], dict]:
        msg_id = self.send(
            "shell",
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
        )
        return self.wait(msg_id, "execute_reply")

    def evaluate(self, code: str):
        """Run code whose last line prints one JSON document, and return that document."""
        outputs, reply = self.execute(code)
        errors = [o for o in outputs if o["output_type"] == "error"]
        assert reply["status"] == "ok" and not errors, ANSI.sub(
            "", "\n".join(e.get("evalue", "") + "\n" + "\n".join(e.get("traceback", [])) for e in errors)
        )
        text = "".join(o["text"] for o in outputs if o["output_type"] == "stream" and o["name"] == "stdout")
        return json.loads(text.strip().splitlines()[-1])

    def comm_update(self, comm_id: str, state: dict):
        """What the lab sends when a reader moves a control; returns when the kernel is idle again."""
        msg_id = self.send(
            "shell", "comm_msg", {"comm_id": comm_id, "data": {"method": "update", "state": state, "buffer_paths": []}}
        )
        self.wait(msg_id, None)

    def close(self):
        self.ws.close()
        self.lab.api("DELETE", f"sessions/{self.session['id']}")


# In the kernel: the widgets a displayed widget is made of, with what a frontend needs to move
# each control, and a digest of each Output widget's contents.
DESCRIBE = r"""
import hashlib as _h, json as _j, math as _m
import ipywidgets as _w
from ipywidgets.widgets.widget import _instances as _all

def _lab_test_tree(model_id):
    found, stack = [], [_all[model_id]]
    while stack:
        w = stack.pop()
        entry = {"id": w.model_id, "class": type(w).__name__}
        if isinstance(w, _w.Output):
            entry["outputs"] = _h.sha256(_j.dumps(w.outputs, sort_keys=True, default=str).encode()).hexdigest()
            entry["n_outputs"] = len(w.outputs)
        elif isinstance(w, _w.widgets.widget_selection._Selection):
            entry.update(kind="selection", index=w.index, n_options=len(w.options), label=w.label)
        elif isinstance(w, _w.FloatLogSlider):
            entry.update(kind="log", value=w.value, min=w.min, max=w.max, step=w.step, base=w.base)
        elif isinstance(w, (_w.FloatSlider, _w.IntSlider, _w.BoundedFloatText, _w.BoundedIntText)):
            entry.update(kind="linear", value=w.value, min=w.min, max=w.max, step=w.step)
        elif isinstance(w, (_w.Checkbox, _w.ToggleButton)):
            entry.update(kind="bool", value=w.value)
        found.append(entry)
        stack.extend(reversed(list(getattr(w, "children", ()))))
    return found
"""


def moved(control: dict) -> dict:
    """The synced state a reader's move of this control sends: one step, or the next option."""
    kind = control.get("kind")
    if kind == "selection":
        assert control["n_options"] > 1, f"{control['class']} {control['label']!r} has a single option"
        return {"index": (control["index"] + 1) % control["n_options"]}
    if kind == "linear":
        value = control["value"] + control["step"]
        if value > control["max"] + 1e-12:
            value = control["value"] - control["step"]
        return {"value": value}
    if kind == "log":
        exponent = math.log(control["value"], control["base"]) + control["step"]
        if exponent > control["max"] + 1e-9:
            exponent -= 2 * control["step"]
        return {"value": control["base"] ** exponent}
    if kind == "bool":
        return {"value": not control["value"]}
    raise AssertionError(f"no way to move a {control['class']}")


TIMINGS: dict[str, dict] = {}  # chapter -> seconds of wall and kernel CPU time, written below


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    server = Lab(tmp_path_factory.mktemp("lab"))
    yield server
    server.close()
    if TIMINGS:
        (ROOT / SCRATCH).mkdir(parents=True, exist_ok=True)
        (ROOT / SCRATCH / "timings.json").write_text(json.dumps(TIMINGS, indent=1) + "\n")


def test_lab_serves_jupyterlab_with_the_project_python(lab):
    page = requests.get(f"{lab.url}/lab", headers=lab.headers, timeout=60)
    assert page.ok and "JupyterLab" in page.text, page.status_code
    kernel = Kernel(lab, "book/intro.ipynb")
    try:
        seen = kernel.evaluate(
            "import json, os, sys; print(json.dumps([sys.prefix, os.getcwd(), os.environ.get('STIEFEL_PROFILE')]))"
        )
    finally:
        kernel.close()
    assert Path(seen[0]).resolve() == Path(sys.prefix).resolve(), (
        f"the lab's kernel runs {seen[0]}, not the project's .venv"
    )
    assert Path(seen[1]).resolve() == ROOT / "book"  # a chapter's kernel starts in book/, as in the lab
    assert seen[2] == "ci"


def test_saving_a_notebook_in_the_lab_writes_its_twin(lab):
    """jupytext's contents manager is active: a notebook saved under book/ gets its MyST twin."""
    name = f"pairing_check_{uuid.uuid4().hex[:8]}"
    notebook = f"{SCRATCH}/book/{name}.ipynb"
    twin = ROOT / SCRATCH / "twins" / f"{name}.md"
    content = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "cells": [
            {
                "cell_type": "markdown",
                "id": "a",
                "metadata": {},
                "source": "# Pairing check\n\nSaved through the contents API.",
            },
            {"cell_type": "code", "id": "b", "metadata": {}, "source": "1 + 1", "outputs": [], "execution_count": None},
        ],
    }
    try:
        (ROOT / SCRATCH).parent.mkdir(exist_ok=True)  # _build/ is absent from a fresh checkout
        lab.api("PUT", f"contents/{SCRATCH}", json={"type": "directory"})
        lab.api("PUT", f"contents/{SCRATCH}/book", json={"type": "directory"})
        lab.api("PUT", f"contents/{notebook}", json={"type": "notebook", "format": "json", "content": content})
        assert (ROOT / notebook).exists()
        assert twin.exists(), (
            f"saving {notebook} wrote no {twin.relative_to(ROOT)}: jupytext's pairing is not active in `make lab`"
        )
        text = twin.read_text()
        assert (
            "format_name: myst" in text and "# Pairing check" in text and "```{code-cell}" in text and "1 + 1" in text
        )
        # And the lab opens the twin as the same notebook.
        opened = lab.api("GET", f"contents/{SCRATCH}/twins/{name}.md", params={"type": "notebook"})
        assert [c["source"] for c in opened["content"]["cells"]] == [c["source"] for c in content["cells"]]
    finally:
        for path in (ROOT / notebook, twin):
            path.unlink(missing_ok=True)


def run_chapter(lab: Lab, chapter: str) -> None:
    """Run the cells a chapter's widgets need in its own kernel and move every control of its
    widgets; raise on a failure."""
    model = lab.api("GET", f"contents/{chapter}.ipynb")  # through jupytext's contents manager
    cells = cells_widgets_need(model["content"]["cells"])
    assert cells, f"{chapter} shows no widget in the notebook the lab opened"
    kernel = Kernel(lab, f"{chapter}.ipynb")
    started = time.monotonic()
    try:
        views = []
        for number, cell in enumerate(cells, 1):
            outputs, reply = kernel.execute(cell["source"])
            errors = [o for o in outputs if o["output_type"] == "error"]
            if reply["status"] != "ok" or errors:
                trace = ANSI.sub(
                    "", "\n".join("\n".join(e.get("traceback", [])) or e.get("evalue", "") for e in errors or [reply])
                )
                raise AssertionError(
                    f"{chapter}, code cell {number} failed in the lab's "
                    f"kernel:\n{cell['source'][:400]}\n---\n{trace[-3000:]}"
                )
            views += [o["data"][WIDGET_VIEW]["model_id"] for o in outputs if WIDGET_VIEW in o.get("data", {})]
        cpu = (
            "import json as _j, resource as _r; _u = _r.getrusage(_r.RUSAGE_SELF); "
            "print(_j.dumps(_u.ru_utime + _u.ru_stime))"
        )
        TIMINGS[chapter] = {
            "cells_wall_s": round(time.monotonic() - started, 1),
            "cells_kernel_cpu_s": round(kernel.evaluate(cpu), 1),
        }

        # Each widget the chapter shows: the lab gets one, and every control of it changes what
        # its Output shows.
        assert len(views) == stored_widget_views(chapter), (
            f"{chapter} displayed {len(views)} widgets; its stored outputs show {stored_widget_views(chapter)}"
        )
        TIMINGS[chapter]["widgets"] = len(views)
        if not views:
            return
        kernel.evaluate(DESCRIBE + "\nprint(1)")
        for view in views:
            tree = kernel.evaluate(f"print(_j.dumps(_lab_test_tree({view!r})))")
            controls = [w for w in tree if "kind" in w]
            outputs = [w for w in tree if "outputs" in w]
            assert controls, f"{chapter}: widget {tree[0]['class']} has no control a reader can move"
            assert outputs, f"{chapter}: widget {tree[0]['class']} has no Output"
            assert all(o["n_outputs"] > 0 for o in outputs), (
                f"{chapter}: widget {tree[0]['class']} shows nothing before a move"
            )
            for control in controls:
                before = {o["id"]: o["outputs"] for o in outputs}
                kernel.comm_updates.clear()
                state = moved(control)
                kernel.comm_update(control["id"], state)
                after_tree = {w["id"]: w for w in kernel.evaluate(f"print(_j.dumps(_lab_test_tree({view!r})))")}
                moved_control = after_tree[control["id"]]
                assert moved_control.get("index", moved_control.get("value")) != control.get(
                    "index", control.get("value")
                ), f"{chapter}: {control['class']} did not take the value {state}"
                changed = [i for i in before if after_tree[i]["outputs"] != before[i]]
                assert changed, f"{chapter}: moving {control['class']} to {state} left the widget's output as it was"
                sent = [i for i in changed if any("outputs" in s for s in kernel.comm_updates.get(i, []))]
                assert sent == changed, f"{chapter}: the kernel changed the Output but sent the lab no update of it"
                assert all(after_tree[i]["n_outputs"] > 0 for i in changed), (
                    f"{chapter}: after moving {control['class']} the output is empty"
                )
        TIMINGS[chapter]["total_wall_s"] = round(time.monotonic() - started, 1)
    finally:
        kernel.close()


@pytest.fixture(scope="module")
def chapter_failures(lab) -> dict[str, BaseException | None]:
    """Every chapter run, KERNELS at a time (the longest, late in the book, first)."""
    with ThreadPoolExecutor(max_workers=KERNELS) as pool:
        futures = {chapter: pool.submit(run_chapter, lab, chapter) for chapter in reversed(CHAPTERS)}
        return {chapter: future.exception() for chapter, future in futures.items()}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapters_widgets_respond(chapter_failures, chapter):
    if chapter_failures[chapter] is not None:
        raise chapter_failures[chapter]
