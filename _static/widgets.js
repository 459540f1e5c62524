// The static book has no kernel, so it loads no ipywidgets JavaScript (_config.yml,
// nb_ipywidgets_js). Where a notebook output is a widget, show a short note in its place
// instead of an empty output; the chapter's text and precomputed figure say what it explores.
document.addEventListener("DOMContentLoaded", () => {
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  for (const view of views) {
    const note = document.createElement("p");
    note.className = "widget-static-note";
    note.setAttribute("role", "note");
    note.textContent =
      "Interactive widget: its controls run in a live Python kernel. Open this chapter in " +
      "JupyterLab, Binder or Colab (launch button at the top of the page) to use it.";
    view.after(note);
  }
});
