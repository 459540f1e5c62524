"""The built book as a reader's browser shows it: every page of the table of contents in headless
Chromium, served from _build/html on localhost.

Per page: nothing loaded from outside the book (it must work offline), no failed request, no
console error or uncaught exception, no Python traceback, no serious or critical axe-core
violation, every image decoded, an alt text that says what it shows on every figure a cell
drew (not a file name), MathJax typeset every formula without a TeX error, no sideways
scrolling on a phone, the previous/next links reach the neighbouring chapters in TOC order, and
after each widget its static explorer, whose every control the test moves through every position
(each shows a stored figure, and the figure changes). Then the search page finds a word known to
be in a chapter. What a first-time reader meets (issues 31, 51): the intro's first screen at 1280 x 800
answers "Should I use it?" in words, with no interval or p-value; every chapter has its Summary
in its first 1,600 px, its Exercises, its method section collapsed and last, and at most 12,000 px; no table
scrolls sideways at 1280 px; every experiment chapter's takeaways come before its first shown code; no
image is shown wider than its pixels allow at 1.5x (or it is SVG); no arm's code name in prose,
tables or printed output; the sidebar holds the book's parts.
Screenshots at 1280 px and at phone size go to _build/screenshots/ for a person to look at.

Run after the book build (`make test` does): `.venv/bin/python -m pytest -m browser tests/browser`.
Needs Debian's Chromium at /usr/bin/chromium (`tools/ensure_chromium.sh` installs it) and
node_modules/axe-core (`npm ci`). Playwright drives that Chromium; it never downloads its own.
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from toc import toc_pages  # tests/toc.py (tests/ is on sys.path through its conftest)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

# axe-core rules not enforced, each with the reason. Keep this short: fix what is ours instead.
AXE_EXCLUDED: dict[str, str] = {}

# A word the search must find, and a page it must list (both checked against the source below).
SEARCH_WORD, SEARCH_PAGE = "retraction", "book/primer"


PAGES = toc_pages()
DECISION = "book/should_i_use_it"  # the page that answers the reader's question
# Chapters (issue 51): every page but the intro (its first screen answers), the API reference and the references.
CHAPTERS = [page for page in PAGES if page != PAGES[0] and not page.startswith(("book/api", "book/references"))]
EXPERIMENTS = ["book/grokking", "book/cifar10_patches", "book/ablation", "book/regimes", "book/peers"]
PARTS = ["Foundations", "The five propositions", "Experiments", "The verdict", "In practice"]
# Pages whose cells and tables show code (the identifier check reads their prose and headers only).
CODE_PAGES = ("book/api", "book/api_optimizers", "book/api_manifold", "book/references", "book/use_on_your_model")
# Code names a reader must not meet in prose, tables or printed output (labels.py gives each its words).
IDENTIFIERS = [
    "no_decay_qk",
    "fixed_step_matched",
    "fixed_scale",
    "decay_hurts",
    "no_trust_region",
    "per_entry",
    "geoopt_radam",
    "orthogonal_param",
    "muon_no_decay",
    "no_projector",
    "stiefel@wd",
    "baseline@wd",
]


def widget_cells(page: str) -> int:
    """How many cells of a chapter show a live widget (its static copy must follow each)."""
    path = ROOT / f"{page}.ipynb"
    if not path.exists():
        return 0
    cells = json.loads(path.read_text())["cells"]
    return sum(
        any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in c.get("outputs", []))
        for c in cells
        if c["cell_type"] == "code"
    )


def source_text(page: str) -> str:
    """The Markdown cells of a chapter (book/NAME.ipynb), or the text of book/NAME.md."""
    path = ROOT / f"{page}.ipynb"
    if path.exists():
        cells = json.loads(path.read_text())["cells"]
        return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return (ROOT / f"{page}.md").read_text()


def has_math(page: str) -> bool:
    text = source_text(page)
    return bool(re.search(r"\$[^$\s]", text) or "```{math}" in text or "\\begin{" in text)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output to the test's own messages
        pass


@pytest.fixture(scope="module")
def base_url():
    if not (SITE / "index.html").exists():
        pytest.fail(f"{SITE / 'index.html'} is missing: build the book first (make book)")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium (tools/ensure_chromium.sh, which make test runs)"
        )
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `npm ci` in the repository root (make test does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS, headless=True)
        yield browser
        browser.close()


class Visit:
    """One page load in a fresh context, with everything that went wrong on the way recorded."""

    def __init__(self, browser, base_url: str, viewport: dict, **context_options):
        self.base_url = base_url
        self.context = browser.new_context(viewport=viewport, **context_options)
        # Anything from outside the served book is recorded and refused, so the result does not
        # depend on whether this machine happens to reach a CDN.
        self.external: list[str] = []
        self.context.route(
            lambda url: not url.startswith(base_url) and not url.startswith(("data:", "blob:")), self._refuse
        )
        self.page = self.context.new_page()
        self.console_errors: list[str] = []
        self.failed: list[str] = []
        self.page.on(
            "console", lambda m: m.type == "error" and self.console_errors.append(f"{m.text} ({m.location.get('url')})")
        )
        self.page.on("pageerror", lambda e: self.console_errors.append(f"uncaught: {e}"))
        self.page.on(
            "requestfailed", lambda r: r.url not in self.external and self.failed.append(f"{r.url}: {r.failure}")
        )
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.url}: HTTP {r.status}"))

    def _refuse(self, route):
        self.external.append(route.request.url)
        route.abort()

    def goto(self, path: str):
        response = self.page.goto(self.base_url + path, wait_until="load")
        assert response is not None and response.ok, f"{path}: {response and response.status}"
        # MathJax starts after load; wait until it has typeset the page (or is absent).
        self.page.wait_for_function(
            "() => !window.MathJax || (window.MathJax.startup && window.MathJax.startup.promise)"
        )
        self.page.evaluate("() => window.MathJax ? window.MathJax.startup.promise : null")
        # Images load lazily only when scrolled to: ask for all of them now and wait.
        self.page.evaluate(
            """() => Promise.all(Array.from(document.images, img => {
                   img.loading = 'eager';
                   return img.decode().catch(() => null);
               }))"""
        )
        return self

    def close(self):
        self.context.close()


def page_url_to_doc(url: str, base_url: str) -> str:
    path = urlsplit(url).path.lstrip("/")
    return re.sub(r"\.html$", "", path)


# In the page: move one control through the given positions as its input events do (an `input`
# event for a slider, `change` for a menu) and report what each position shows.
SWEEP_CONTROL = """async (control, positions) => {
    const root = control.closest('.static-explorer');
    const img = root.querySelector('img.static-explorer-figure');
    const readout = root.querySelector('.static-explorer-readout');
    const event = control.tagName === 'SELECT' ? 'change' : 'input';
    const shown = [];
    for (const position of positions) {
        control.value = position;
        control.dispatchEvent(new Event(event, {bubbles: true}));
        await img.decode().catch(() => null);
        shown.push({position, image: root.dataset.image, ok: img.complete && img.naturalWidth > 0, alt: img.alt,
                    frame: root.dataset.frame, readout: readout ? readout.textContent : ''});
    }
    return shown;
}"""


def move_every_control(p) -> list[str]:
    """Move every control of every static explorer on the page (_static/explorers.js) through each
    of its positions: each position must show a stored figure that decodes, the figure or its
    readout must change as the control moves (a setting may leave the picture as it was, e.g.
    eps = 1e-8 at c = 1), and the alt text must name each setting. One move a control is made as
    a reader makes it (Playwright's fill or select); the sweep through every position runs in the
    page with the same events, one round trip a control."""
    problems = []
    for n, root in enumerate(p.locator(".static-explorer").all(), 1):
        controls = root.locator("[data-control]").all()
        if not controls:
            problems.append(f"static explorer {n}: no controls were built (explorers.js did not run?)")
        for control in controls:
            name = control.get_attribute("data-control")
            if control.evaluate("e => e.tagName") == "SELECT":
                positions = control.evaluate("e => Array.from(e.options).filter(o => !o.disabled).map(o => o.value)")
                move = control.select_option
            else:
                positions = [str(i) for i in range(int(control.get_attribute("max")) + 1)]
                move = control.fill
            start = control.input_value()
            if len(positions) < 2:
                problems.append(f"static explorer {n}: {name} offers {len(positions)} position(s)")
                continue
            before = root.get_attribute("data-frame")
            move(next(q for q in positions if q != start))  # as a reader moves it
            if root.get_attribute("data-frame") == before:
                problems.append(f"static explorer {n}: moving {name} by hand left the setting at {before}")
            shown = control.evaluate(SWEEP_CONTROL, positions)
            for s in shown:
                if not s["ok"] or s["image"] is None:
                    problems.append(
                        f"static explorer {n}, {name} at position {s['position']}: no figure shown ({s['frame']})"
                    )
            views = {(s["image"], s["readout"]) for s in shown}
            alts = {s["alt"] for s in shown}
            if len(views) < 2 or len(alts) < len(positions):
                problems.append(
                    f"static explorer {n}: moving {name} through {len(positions)} positions showed "
                    f"{len(views)} different figure(s) with readout and {len(alts)} alt text(s)"
                )
            move(start)
    return problems


@pytest.mark.parametrize("page", PAGES)
def test_page(browser, base_url, page):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    index = PAGES.index(page)
    visit = Visit(browser, base_url, DESKTOP).goto(f"{page}.html")
    p = visit.page
    try:
        # Text: no traceback, no error output of a cell.
        body = p.inner_text("body")
        if "Traceback (most recent call last)" in body:
            problems.append("the page shows a Python traceback")
        if p.locator(".output.traceback, .output.error").count():
            problems.append("a cell output is an error")

        # Math: every formula typeset, none with a TeX error.
        math = p.evaluate(
            """() => {
                const nodes = Array.from(document.querySelectorAll('.math'));
                return {
                    formulas: nodes.length,
                    untypeset: nodes.filter(n => !n.querySelector('mjx-container')).map(n => n.textContent.slice(0, 80)),
                    containers: document.querySelectorAll('mjx-container').length,
                    errors: Array.from(document.querySelectorAll('mjx-merror'), n => n.getAttribute('data-mjx-error') || n.textContent),
                };
            }"""  # noqa: E501 (JavaScript evaluated in the page)
        )
        if has_math(page) and math["containers"] == 0:
            problems.append("the source has math but MathJax typeset none (no mjx-container)")
        if math["untypeset"]:
            problems.append(
                f"{len(math['untypeset'])} of {math['formulas']} formulas not typeset, e.g. {math['untypeset'][:3]}"
            )
        if math["errors"]:
            problems.append(f"TeX errors: {math['errors'][:5]}")

        # Images: every one decoded to a real picture.
        broken = p.evaluate(
            "() => Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
        )
        if broken:
            problems.append(f"images that did not load: {broken}")

        # Alt text: a figure a cell drew says what it shows. Without the cell's
        # `mystnb: image: alt:` metadata, myst-nb writes the image's path (a hash) as its alt.
        figures = p.evaluate(
            """() => Array.from(document.querySelectorAll('article .cell_output img'), img => ({
                   src: img.getAttribute('src') || '',
                   alt: (img.getAttribute('alt') || '').trim(),
                   code: (img.closest('.cell')?.querySelector('.cell_input pre')?.textContent || '').split('\\n'),
               })).map(f => ({...f, cell: f.code.find(l => /\\bfig\\b/.test(l)) || f.code.find(l => l.trim() && !l.startsWith('#')) || ''}))"""  # noqa: E501 (JavaScript evaluated in the page)
        )
        for number, figure in enumerate(figures, 1):
            alt = figure["alt"]
            if (
                not alt
                or " " not in alt
                or re.search(r"\.(png|svg|jpe?g|gif|webp)$", alt, re.I)
                or alt in figure["src"]
            ):
                problems.append(
                    f"figure {number} of {len(figures)} ({figure['src'].rsplit('/', 1)[-1][:16]}..., cell "
                    f"`{figure['cell'].strip()[:70]}`) "
                    f"has no alt text saying what it shows (alt={alt[:100]!r}): give its cell `mystnb: image: alt:` "
                    "metadata"
                )

        # Widgets: each explorer's copy for the static page follows it, and responds to every control.
        # (The live widget's own output is removed from the page: it needs a kernel.)
        views = max(widget_cells(page), p.locator('script[type="application/vnd.jupyter.widget-view+json"]').count())
        notes = p.locator(".widget-static-note").count()
        explorers = p.locator(".static-explorer").count()
        if notes or explorers != views:
            problems.append(
                f"{views} widget outputs, {explorers} static explorers after them, {notes} widgets with only a note"
            )
        problems += move_every_control(p)

        problems += reader_checks(p, page)

        # Previous / next: the neighbours in TOC order, and nothing past either end.
        for selector, neighbour in (("a.left-prev", index - 1), ("a.right-next", index + 1)):
            links = p.locator(f".prev-next-area {selector}")
            expected = PAGES[neighbour] if 0 <= neighbour < len(PAGES) else None
            found = (
                page_url_to_doc(urljoin(p.url, links.first.get_attribute("href")), base_url) if links.count() else None
            )
            if found != expected:
                problems.append(f"{selector} leads to {found}, expected {expected}")

        # Accessibility: axe-core, serious and critical violations.
        p.add_script_tag(path=str(AXE))
        results = p.evaluate(
            """(disabled) => axe.run(document, {
                   resultTypes: ['violations'],
                   rules: Object.fromEntries(disabled.map(id => [id, {enabled: false}])),
               })""",
            list(AXE_EXCLUDED),
        )
        for violation in results["violations"]:
            if violation["impact"] in ("serious", "critical"):
                targets = [" ".join(map(str, n["target"])) for n in violation["nodes"][:3]]
                problems.append(
                    f"axe {violation['impact']} {violation['id']} ({violation['help']}) on {len(violation['nodes'])} "
                    f"node(s), e.g. {targets}"
                )

        p.screenshot(path=str(SCREENSHOTS / f"{page.replace('/', '_')}-1280.png"), full_page=True)
    finally:
        visit.close()

    # The same page on a phone: readable without scrolling sideways.
    phone = Visit(browser, base_url, PHONE, is_mobile=True, has_touch=True, device_scale_factor=2).goto(f"{page}.html")
    try:
        # A page wider than the screen makes a mobile browser zoom out (the layout viewport
        # grows with it), so compare with the device's width, not with window.innerWidth.
        width = phone.page.evaluate("() => document.documentElement.scrollWidth")
        if width > PHONE["width"] + 1:
            wide = phone.page.evaluate(
                """(limit) => {
                    const clipped = e => {
                        for (let a = e.parentElement; a; a = a.parentElement)
                            if (getComputedStyle(a).overflowX !== 'visible') return true;
                        return false;
                    };
                    return Array.from(document.querySelectorAll('main *'))
                        .filter(e => e.getBoundingClientRect().right > limit + 1 && !clipped(e))
                        .slice(0, 5).map(e => `${e.tagName.toLowerCase()}.${e.className}: ${e.textContent.slice(0, 60)}`);
                }""",  # noqa: E501 (JavaScript evaluated in the page)
                PHONE["width"],
            )
            problems.append(f"on a {PHONE['width']} px phone the page is {width} px wide, e.g. {wide}")
        if page == PAGES[0]:  # the intro on a phone: the answer and when it holds, on the first screen
            problems += phone_first_screen(phone.page)
        phone.page.screenshot(path=str(SCREENSHOTS / f"{page.replace('/', '_')}-phone.png"), full_page=True)
        for v in (visit, phone):
            if v.external:
                problems.append(f"loaded from outside the book: {sorted(set(v.external))[:5]}")
            if v.failed:
                problems.append(f"failed requests: {v.failed[:5]}")
            if v.console_errors:
                problems.append(f"console errors: {v.console_errors[:5]}")
    finally:
        phone.close()

    assert not problems, f"{page}:\n  " + "\n  ".join(dict.fromkeys(problems))


def reader_checks(p, page: str) -> list[str]:
    """What a first-time reader meets at 1280 x 800 (issue 31)."""
    problems = []
    # Images: drawn for the page, at least 1.5 pixels a CSS pixel (or SVG).
    blurred = p.evaluate(
        """() => Array.from(document.querySelectorAll('article img'))
               .filter(i => !/\\.svg($|\\?)|^data:image\\/svg/.test(i.src) && i.naturalWidth > 0)
               .filter(i => i.getBoundingClientRect().width > i.naturalWidth / 1.5 + 1)
               .map(i => `${Math.round(i.getBoundingClientRect().width)} px shown of ${i.naturalWidth} px: ${(i.alt || i.src).slice(0, 60)}`)"""  # noqa: E501 (JavaScript evaluated in the page)
    )
    if blurred:
        problems.append(f"{len(blurred)} image(s) shown wider than their pixels / 1.5, e.g. {blurred[:3]}")
    # Words, not identifiers, in prose, tables and printed output (a code cell's input, code in code
    # font and the code blocks of prose may name them; the API reference, the references and the
    # how-to page's cells show code, and are checked in their prose and headers only).
    text = p.evaluate(
        """(outputs) => Array.from(document.querySelectorAll(
                   'article p, article li, article th, article td, article div.admonition, article .cell_output pre'))
               .filter(e => !e.closest('.cell_input, .static-explorer'))
               .filter(e => e.closest('.cell_output') ? outputs : !e.closest('pre, .highlight'))
               .filter(e => outputs || !e.closest('td'))
               .map(e => { const c = e.cloneNode(true); c.querySelectorAll('code, .math, mjx-container').forEach(x => x.remove());
                           return c.textContent; }).join('\\n')""",  # noqa: E501 (JavaScript evaluated in the page)
        page not in CODE_PAGES,
    )
    named = sorted({name for name in IDENTIFIERS if name in text})
    if named:
        problems.append(f"code names in prose, tables or printed output: {named}")
    # Every interval says its level (issue 51): a difference reads "-0.27 pp, unadjusted 95 % CI [...]".
    bare = re.findall(r"\d (?:pp|points|nats per token|bits per character) \[[+\-−]?\d", text)
    if bare:
        problems.append(f"intervals without their level: {bare[:3]}")
    # One search box or button on the page.
    searches = p.evaluate("""() => Array.from(document.querySelectorAll('.search-button__button, .bd-sidebar-primary .bd-search'))
                                 .filter(e => e.offsetParent !== null).length""")  # noqa: E501 (JavaScript evaluated in the page)
    if searches != 1:
        problems.append(f"{searches} search boxes or buttons shown, expected one")
    # The sidebar: the book's parts, in order.
    captions = [c.strip() for c in p.locator(".bd-sidebar-primary p.caption").all_inner_texts()]
    if captions != PARTS:
        problems.append(f"the sidebar's parts are {captions}, expected {PARTS}")
    if page == PAGES[0]:  # the intro: the answer, in words, on the first screen (issue 51)
        problems += first_screen_answers(p)
    if page in CHAPTERS:  # every chapter: its Summary first, its Exercises, its method collapsed, a readable length
        problems += chapter_checks(p)
    problems += tables_that_scroll(p)
    problems += verdict_tables_without_glossary(p)
    if page in EXPERIMENTS:  # the takeaways before the first code a reader sees
        order = p.evaluate(
            """() => {
                const take = Array.from(document.querySelectorAll('.admonition')).find(a => /Key takeaways/.test(a.textContent));
                const code = Array.from(document.querySelectorAll('.cell:not(.tag_hide-input) .cell_input')).find(c => c.offsetParent);
                if (!take) return 'none';
                return !code || (take.compareDocumentPosition(code) & Node.DOCUMENT_POSITION_FOLLOWING) ? 'before' : 'after';
            }"""  # noqa: E501 (JavaScript evaluated in the page)
        )
        if order != "before":
            problems.append(f"the chapter's key takeaways: {order} its first shown code cell")
    return problems



# On the intro's first screen: an interval ("[+1.6, +10.5]") or a p-value ("p = 0.03", "Holm p") is
# the record, not the answer; both belong behind the toggle below it.
INTERVAL = re.compile(r"\[\s*[+\-\u2212]?\d[\d.,]*\s*(pp|%)?\s*,\s*[+\-\u2212]?\d")
P_VALUE = re.compile(r"\bp\s*=\s*0?\.\d|\bHolm p\b|\bp-value", re.IGNORECASE)


def first_screen_answers(p) -> list[str]:
    """The intro's first 1280 x 800 screen: the heading "Should I use it?", the answer under it
    in words (a paragraph of 200 characters or more that starts within the screen), and no
    interval or p-value anywhere on that screen."""
    found = p.evaluate(
        """() => {
            const h = Array.from(document.querySelectorAll('h2')).find(h => /Should I use it/.test(h.textContent));
            if (!h) return null;
            const o = h.closest('section').querySelector('.cell_output');
            const seen = Array.from(document.querySelectorAll('article p, article li, article td, article th, article figcaption'))
                .filter(e => e.offsetParent !== null && e.getBoundingClientRect().top < innerHeight)
                .map(e => e.innerText).join('\\n');
            return {top: h.getBoundingClientRect().y, y: o ? o.getBoundingClientRect().y : null,
                    text: o ? o.innerText.length : 0, seen};
        }"""  # noqa: E501 (JavaScript evaluated in the page)
    )
    if not found or found["top"] > DESKTOP["height"] or found["y"] is None or found["y"] > DESKTOP["height"] * 0.8:
        return [f"the intro's first screen does not answer \"Should I use it?\" ({found and dict(found, seen='...')})"]
    problems = []
    if found["text"] < 200:
        problems.append(f"the intro's answer is {found['text']} characters: write it in sentences")
    for name, pattern in (("an interval", INTERVAL), ("a p-value", P_VALUE)):
        match = pattern.search(found["seen"])
        if match:
            problems.append(f"the intro's first screen shows {name}: {match.group(0)!r} (put it behind the toggle)")
    return problems


# The intro's answer and when it holds (issue 51, item 1), a key word or two each.
ANSWER_WORDS = re.compile(r"\bnot\b[^.]*\baccuracy\b", re.IGNORECASE)
WHEN_WORDS = re.compile(r"\bcannot tune\b", re.IGNORECASE)


def phone_first_screen(p) -> list[str]:
    """The intro's first 390 x 844 screen: the heading "Should I use it?", then the answer and when
    it holds, each whole on that screen (paragraphs whose bottom is within it), and no interval or
    p-value there."""
    seen = p.evaluate(
        """() => {
            const h = Array.from(document.querySelectorAll('h2')).find(h => /Should I use it/.test(h.textContent));
            if (!h || h.getBoundingClientRect().bottom > innerHeight) return null;
            return Array.from(document.querySelectorAll('article p, article li'))
                .filter(e => e.offsetParent !== null && e.getBoundingClientRect().bottom <= innerHeight)
                .map(e => e.innerText).join('\\n');
        }"""  # noqa: E501 (JavaScript evaluated in the page)
    )
    if seen is None:
        return [f"on a {PHONE['width']} px phone the intro's first screen does not show \"Should I use it?\""]
    problems = [
        f"on a {PHONE['width']} px phone the intro's first screen does not show {what} (key words {words.pattern!r})"
        for what, words in (("the answer", ANSWER_WORDS), ("when it holds", WHEN_WORDS))
        if not words.search(seen)
    ]
    for name, pattern in (("an interval", INTERVAL), ("a p-value", P_VALUE)):
        match = pattern.search(seen)
        if match:
            problems.append(f"on a phone the intro's first screen shows {name}: {match.group(0)!r}")
    return problems


def chapter_checks(p) -> list[str]:
    """A chapter as a reader meets it at 1280 px: a Summary heading within the first 1,600 px, an
    Exercises heading, at most 12,000 px of page (closed toggles do not count), and where it has a
    "Method and reproducibility" section, that section last and nothing of it shown until opened."""
    found = p.evaluate(
        """() => {
            const heads = Array.from(document.querySelectorAll('article h2'));
            const top = name => { const h = heads.find(h => h.textContent.trim().startsWith(name));
                                  return h ? h.getBoundingClientRect().top + scrollY : null; };
            const method = heads.find(h => h.textContent.trim().startsWith('Method and reproducibility'));
            let shown = 0;
            if (method) {
                const section = method.closest('section');
                shown = Array.from(section.children).filter(e => e !== method && !e.matches('span, .toggle-details, details'))
                    .filter(e => !e.matches('.tag_hide-cell, .tag_remove-cell, .dropdown, .toggle'))
                    .filter(e => e.offsetParent !== null && e.getBoundingClientRect().height > 120).length;
            }
            return {summary: top('Summary'), exercises: top('Exercises'), height: document.documentElement.scrollHeight,
                    method: method ? heads.indexOf(method) : null, last: heads.length - 1, shown};
        }"""  # noqa: E501 (JavaScript evaluated in the page)
    )
    problems = []
    if found["summary"] is None or found["summary"] > 1600:
        problems.append(f"the Summary is not within the first 1,600 px (at {found['summary']})")
    if found["exercises"] is None:
        problems.append("no Exercises section")
    if found["height"] > 12000:
        problems.append(f"the page is {found['height']} px tall at 1280 px (at most 12,000)")
    if found["method"] is not None and found["method"] != found["last"]:
        problems.append("the Method and reproducibility section is not the last section")
    if found["shown"]:
        problems.append(f"{found['shown']} block(s) of the Method and reproducibility section are open (collapse them)")
    return problems


def tables_that_scroll(p) -> list[str]:
    """Tables at 1280 px: none wider than its column (the theme would give it a sideways scroll bar).
    Tables inside closed toggles are opened first: a reader who opens one meets the same table."""
    wide = p.evaluate(
        """() => { document.querySelectorAll('details').forEach(d => d.open = true);
                   document.querySelectorAll('.toggle-hidden, .tag_hide-output .cell_output, .tag_hide-cell .cell_output')
                     .forEach(e => { e.classList.remove('toggle-hidden'); e.style.display = ''; });
                   const out = Array.from(document.querySelectorAll('article table'))
                     .filter(t => t.offsetParent !== null && t.parentElement.scrollWidth > t.parentElement.clientWidth + 1)
                     .map(t => `${t.parentElement.scrollWidth} px in ${t.parentElement.clientWidth}: ${t.textContent.trim().slice(0, 50)}`);
                   document.querySelectorAll('details').forEach(d => d.open = false);
                   return out; }"""  # noqa: E501 (JavaScript evaluated in the page)
    )
    return [f"{len(wide)} table(s) scroll sideways at 1280 px, e.g. {wide[:2]}"] if wide else []


def verdict_tables_without_glossary(p) -> list[str]:
    """Every table with a verdict column is followed, within the next two blocks, by a link to the
    glossary of the statistics words (issue 51, item 6)."""
    bare = p.evaluate(
        """() => Array.from(document.querySelectorAll('article table'))
            .filter(t => Array.from(t.querySelectorAll('th')).some(th => /verdict/i.test(th.textContent)))
            .filter(t => {
                let block = t.closest('.cell') || t.closest('.pst-scrollable-table-container') || t;
                while (block.parentElement && !block.nextElementSibling) block = block.parentElement;
                for (let e = block.nextElementSibling, i = 0; e && i < 2; e = e.nextElementSibling, i++)
                    if (e.querySelector('a[href*="decision-glossary"]')) return false;
                return true;
            })
            .map(t => t.textContent.trim().replace(/\\s+/g, ' ').slice(0, 60))"""  # noqa: E501 (JavaScript evaluated in the page)
    )
    return [f"{len(bare)} verdict table(s) with no glossary link after them, e.g. {bare[:2]}"] if bare else []


def test_the_decision_page_is_in_practice():
    """"Should I use it?" is a page of the book, under In practice."""
    import yaml

    parts = yaml.safe_load((ROOT / "_toc.yml").read_text())["parts"]
    practice = next(part for part in parts if part["caption"] == "In practice")
    assert DECISION in [chapter["file"] for chapter in practice["chapters"]]
    assert (ROOT / f"{DECISION}.ipynb").exists()

def test_index_redirects_to_the_first_page(browser, base_url):
    visit = Visit(browser, base_url, DESKTOP)
    try:
        visit.page.goto(base_url, wait_until="load")
        visit.page.wait_for_url(f"**/{PAGES[0]}.html")
        assert not visit.external and not visit.failed and not visit.console_errors
    finally:
        visit.close()


def test_next_links_walk_the_book_in_toc_order(browser, base_url):
    """Click 'next' from the first page to the last, as a reader would, then 'previous' back."""
    visit = Visit(browser, base_url, DESKTOP).goto(f"{PAGES[0]}.html")
    p = visit.page
    try:
        seen = [page_url_to_doc(p.url, base_url)]
        while p.locator(".prev-next-area a.right-next").count() and len(seen) <= len(PAGES):
            p.locator(".prev-next-area a.right-next").first.click()
            p.wait_for_load_state("load")
            seen.append(page_url_to_doc(p.url, base_url))
        assert seen == PAGES
        back = [seen[-1]]
        while p.locator(".prev-next-area a.left-prev").count() and len(back) <= len(PAGES):
            p.locator(".prev-next-area a.left-prev").first.click()
            p.wait_for_load_state("load")
            back.append(page_url_to_doc(p.url, base_url))
        assert back == PAGES[::-1]
    finally:
        visit.close()


def test_search_finds_a_word_of_a_chapter(browser, base_url):
    assert SEARCH_PAGE in PAGES
    assert SEARCH_WORD in source_text(SEARCH_PAGE).lower(), (
        f"pick another search word: {SEARCH_WORD!r} is no longer in {SEARCH_PAGE}"
    )
    visit = Visit(browser, base_url, DESKTOP).goto(f"search.html?q={SEARCH_WORD}")
    p = visit.page
    try:
        p.wait_for_function(
            "() => /found \\d+ page|did not match any/i.test(document.querySelector('#search-results')?.innerText || "
            "'')",
            timeout=30_000,
        )
        hits = [
            page_url_to_doc(urljoin(p.url, a.get_attribute("href")), base_url).split("#")[0]
            for a in p.locator("#search-results ul.search li a").all()
        ]
        assert SEARCH_PAGE in hits, f"search for {SEARCH_WORD!r} listed {hits}"
        p.screenshot(path=str(SCREENSHOTS / "search-1280.png"))
        assert not visit.external and not visit.failed and not visit.console_errors, (
            visit.external,
            visit.failed,
            visit.console_errors,
        )
    finally:
        visit.close()
