// The memory size of a chip sold in several (Apple M-series, Ryzen AI Max), for the simulator's
// platform and the "What runs on my GPUs?" box (loaded after app.js, whose helpers it uses). The
// sizes, their ids and their words come from /api/views/memory-configurations; nothing is computed here.
"use strict";

// of: accelerator id -> its configurations (smallest first); base: a configuration's id -> its accelerator's
const sizes = { of: new Map(), base: new Map() };

function loadSizes(views) {
  for (const view of views) {
    sizes.of.set(view.accelerator, view.configurations);
    for (const c of view.configurations) sizes.base.set(c.id, view.accelerator);
  }
}

// The sizes of `accel` in `select` (`chosen`: a configuration's id, else the default the library
// plans the accelerator's own id at); select and `shown` (its label or box) hidden for a chip sold in one.
function fillSizes(select, shown, accel, chosen) {
  const configurations = sizes.of.get(accel) || [];
  select.replaceChildren(...configurations.map((c) => {
    const o = option(c.id, c.default ? `${c.label} (default)` : c.label);
    o.title = c.sources.map((n) => n.tooltip).join("; ");  // where the size and bandwidth come from
    return o;
  }));
  const pick = configurations.find((c) => c.id === chosen) || configurations.find((c) => c.default);
  if (pick) select.value = pick.id;
  select.hidden = shown.hidden = configurations.length === 0;
}

// The accelerator id a request names: the chosen size's, or the accelerator's own when it has no sizes.
function sizedId(select, accel) {
  return select.hidden ? accel : select.value;
}

// A stated id's accelerator and size: ["apple-m4-max", "apple-m4-max-64gb"], or [id] for one without sizes.
function sizeOf(id) {
  return sizes.base.has(id) ? [sizes.base.get(id), id] : [id, undefined];
}

// The configuration a stated id names (undefined for an accelerator sold in one size).
function configurationOf(id) {
  return (sizes.of.get(sizeOf(id || "")[0]) || []).find((c) => c.id === id);
}

// What the answer to a request naming `id` is for ("Planned for Apple M4 Max 64 GB (64 GB, 546 GB/s)"),
// in `el`; blank for an accelerator sold in one size.
function showSize(el, id) {
  const c = configurationOf(id);
  el.textContent = c ? `Planned for ${c.name} (${c.label}); the Memory control picks another size.` : "";
}

// The words of the size `id` states ("64 GB, 546 GB/s"), undefined for a chip sold in one size.
function sizeLabel(id) {
  const c = configurationOf(id);
  return c ? c.label : undefined;
}
