// Accessible names of two sphinx-book-theme (pydata-sphinx-theme) buttons, so that each name
// contains the button's visible text (WCAG 2.5.3, axe-core rule label-content-name-mismatch):
// - the search button shows "Search Ctrl+K" but is labelled "Search": drop the label, so its
//   name is its text;
// - the colour-mode button is labelled "Color mode", and its icons carry titles ("Light",
//   "Dark", "System Settings") that count as visible text: the icons are decoration, hide them
//   from assistive technology (the button keeps its label and its tooltip).
// - myst-nb's toggle of a hidden code cell shows "Show code cell source" but is labelled
//   "Toggle hidden content": drop the label, so its name is its text.
// And one docutils role: the references page lists its citations as role="list" whose items
// carry role="doc-biblioentry", which ARIA 1.3 deprecates and which is not an item of a list
// (axe-core: aria-required-children, critical); they are list items.
document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll(".search-button-field[aria-label]")) {
    button.removeAttribute("aria-label");
  }
  for (const summary of document.querySelectorAll('details.hide > summary[aria-label="Toggle hidden content"]')) {
    summary.removeAttribute("aria-label");
  }
  // Font Awesome may already have replaced the <i> icons by <svg> with a <title>.
  for (const icon of document.querySelectorAll(".theme-switch-button .theme-switch")) {
    icon.removeAttribute("title");
    icon.removeAttribute("aria-labelledby");
    icon.removeAttribute("role");
    icon.setAttribute("aria-hidden", "true");
    for (const title of icon.querySelectorAll("title")) title.remove();
  }
  for (const entry of document.querySelectorAll('[role="list"] > [role="doc-biblioentry"]')) {
    entry.setAttribute("role", "listitem");
  }
});
