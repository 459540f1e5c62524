// Static explorers (stiefel_core/widgets/static.py): a widget's grid drawn ahead when the
// chapter ran, as images and readouts in a JSON block. Build one control per widget control
// (a range slider over the drawn positions for a slider; a menu, the undrawn options
// disabled, for a menu) and show the stored image of the setting picked. No Python runs here.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll(".static-explorer").forEach((root, n) => {
    const data = JSON.parse(root.querySelector("script.static-explorer-data").textContent);
    const img = root.querySelector("img.static-explorer-figure");
    const readout = root.querySelector(".static-explorer-readout");
    const state = data.controls.map((c) => c.value);
    const panel = document.createElement("div");
    panel.className = "static-explorer-controls";
    const show = () => {
      const key = state.join(",");
      const frame = data.frames[key];
      if (!frame) return;
      img.src = "data:image/png;base64," + data.images[frame[0]];
      const setting = data.controls.map((c, i) => `${c.label} = ${c.options[state[i]]}`).join(", ");
      img.alt = `${data.alt} Setting: ${setting}.`;
      if (readout) readout.textContent = data.texts[frame[1]];
      root.dataset.frame = key;
      root.dataset.image = frame[0];
    };
    data.controls.forEach((c, i) => {
      const id = `static-explorer-${n}-${c.name}`;
      const row = document.createElement("div");
      row.className = "static-explorer-control";
      const label = document.createElement("label");
      label.htmlFor = id;
      label.textContent = c.label;
      row.append(label);
      let input;
      if (c.kind === "slider") {
        // Only the drawn positions: the slider steps from one to the next.
        const positions = c.options.map((_, j) => j).filter((j) => c.enabled[j]);
        input = document.createElement("input");
        Object.assign(input, { type: "range", min: 0, max: positions.length - 1, step: 1, value: positions.indexOf(c.value) });
        const value = document.createElement("output");
        value.htmlFor = id;
        const moved = () => {
          state[i] = positions[Number(input.value)];
          value.textContent = c.options[state[i]];
          input.setAttribute("aria-valuetext", c.options[state[i]]);
        };
        moved();
        input.addEventListener("input", () => {
          moved();
          show();
        });
        row.append(input, value);
      } else {
        input = document.createElement("select");
        c.options.forEach((text, j) => {
          const option = new Option(c.enabled[j] ? text : `${text} (needs a kernel)`, j, j === c.value, j === c.value);
          option.disabled = !c.enabled[j];
          input.add(option);
        });
        input.addEventListener("change", () => {
          state[i] = Number(input.value);
          show();
        });
        row.append(input);
      }
      input.id = id;
      input.dataset.control = c.name;
      panel.append(row);
    });
    // A wide figure (two panels side by side) keeps a legible size on a phone and scrolls
    // sideways inside its frame instead of shrinking to the screen (_static/book.css).
    const frame = document.createElement("div");
    frame.className = "static-explorer-frame";
    frame.tabIndex = 0;  // a scrolling region is reachable from the keyboard
    img.before(frame);
    frame.append(img);
    if (readout) readout.tabIndex = 0;
    const widen = () => img.classList.toggle("static-explorer-wide", img.naturalWidth > 900);
    img.addEventListener("load", widen);
    widen();
    root.prepend(panel);
    root.classList.add("static-explorer-live");
    show();
  });
});
