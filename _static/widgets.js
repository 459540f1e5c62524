// The static book has no kernel, so it loads no ipywidgets JavaScript (_config.yml,
// nb_ipywidgets_js). Where the cell after a widget's holds its static explorer
// (_static/explorers.js), that explorer stands in for it. Elsewhere, show a short note in the
// widget's place instead of an empty output.
document.addEventListener("DOMContentLoaded", () => {
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  for (const view of views) {
    // The next cell (text may stand between them) holds the explorer's copy for this page.
    let next = view.closest(".cell")?.nextElementSibling;
    while (next && !next.classList.contains("cell")) next = next.nextElementSibling;
    if (next && next.querySelector(".static-explorer")) continue;
    const note = document.createElement("p");
    note.className = "widget-static-note";
    note.setAttribute("role", "note");
    note.textContent =
      "Interactive widget: its controls run in a live Python kernel. Open this chapter in " +
      "JupyterLab, Binder or Colab (launch button at the top of the page) to use it.";
    view.after(note);
  }
});
