"""Sphinx extension for the built book's pages: MathJax served by the book itself, and no
script emitted twice.

MathJax comes from the npm package in node_modules/.

A reader's browser then loads nothing from a CDN (the book works offline, and the browser test,
which runs offline, sees every request succeed). `mathjax_path` in _config.yml points at
`vendor/mathjax/tex-mml-chtml.js` under _static; after each HTML build this copies the
package's combined component and the folders it loads from on demand (TeX extensions, fonts,
menu, accessibility) to `_static/vendor/mathjax/` in the output.

The files are not put under the book's own _static/ folder: Jupyter Book adds every .js file
found there to every page. `make book` and `make test` run `npm ci` first (package-lock.json);
a build without node_modules/ fails with one message that says so.

sphinx-thebe (which Jupyter Book always loads) registers its inline configuration script
(`const THEBE_JS_URL = ...`) with the application and the builder alike, once with the filename
None and once with '', so every page carried it twice, and the second copy threw "Identifier 'THEBE_JS_URL' has already
been declared".
Pages now list each script once.

Without ipywidgets JavaScript (`nb_ipywidgets_js: {}` in _config.yml) nothing reads the widget
state that myst-nb embeds in each page with widgets (40-100 kB of JSON a page): it is left out.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

COMPONENT = "tex-mml-chtml.js"
# What the combined component loads at run time, relative to its own folder.
FOLDERS = ("a11y", "adaptors", "input", "output", "sre", "ui")


def _source(app: Sphinx) -> Path:
    return Path(app.srcdir) / "node_modules" / "mathjax" / "es5"


def check(app: Sphinx) -> None:
    if app.builder.format != "html":
        return
    if not (_source(app) / COMPONENT).is_file():
        raise ExtensionError(
            f"MathJax is missing ({_source(app) / COMPONENT}): run `npm ci` in the repository root "
            "(`make book` does), so that the book serves MathJax itself instead of loading it from a CDN"
        )


def copy(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    source, target = _source(app), Path(app.outdir) / "_static" / "vendor" / "mathjax"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / COMPONENT, target / COMPONENT)
    for folder in FOLDERS:
        shutil.copytree(source / folder, target / folder, dirs_exist_ok=True)
    shutil.copy2(source.parent / "LICENSE", target / "LICENSE")


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def tidy_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    widgets_rendered = bool(getattr(app.config, "nb_ipywidgets_js", None))
    seen, unique = set(), []
    for script in scripts:
        attributes = getattr(script, "attributes", {})
        if attributes.get("type") == WIDGET_STATE and not widgets_rendered:
            continue
        # A script registered with filename None comes back as '' from the registry: one script.
        key = (
            str(getattr(script, "filename", script) or ""),
            tuple(sorted((k, str(v)) for k, v in attributes.items())),
        )
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", check)
    app.connect("html-page-context", tidy_scripts)
    app.connect("build-finished", copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
