// The saved scenarios and vendor quotes of the web calculator (loaded after app.js, whose helpers
// they use): the server stores, compares and prices; this file lists and sends.
"use strict";

async function refreshSaved() {
  const saved = await api("GET", "/api/scenarios");
  $("saved-list").replaceChildren(...saved.map((s) => {
    const li = document.createElement("li");
    li.dataset.id = s.id;
    const name = document.createElement("span");
    name.textContent = s.name;
    const load = document.createElement("button");
    load.type = "button"; load.textContent = "Load"; load.setAttribute("aria-label", `Load ${s.name}`);
    load.onclick = () => { fillForm(s.scenario); update(); };
    const rename = document.createElement("button");
    rename.type = "button"; rename.textContent = "Rename"; rename.setAttribute("aria-label", `Rename ${s.name} to the name in the Save as field`);
    rename.onclick = async () => {
      showError("", "saved-error");
      if (!$("scenario-name").value.trim()) { showError("Rename: type the new name in “Save as” above first", "saved-error"); return; }
      try { await api("PATCH", `/api/scenarios/${s.id}`, { name: $("scenario-name").value }); await refreshSaved(); }
      catch (err) { showError(`Rename: ${err.message}`, "saved-error"); }
    };
    const del = document.createElement("button");
    del.type = "button"; del.textContent = "Delete"; del.setAttribute("aria-label", `Delete ${s.name}`);
    del.onclick = async () => {
      try { await api("DELETE", `/api/scenarios/${s.id}`); } catch (err) { showError(err.message, "saved-error"); }
      await refreshSaved();
    };
    li.append(name, load, rename, del);
    return li;
  }));
  state.saved = new Map(saved.map((s) => [String(s.id), s]));
  $("saved-empty").hidden = saved.length > 0;
  for (const id of ["compare-a", "compare-b", "compare"]) $(id).disabled = saved.length < 2;  // two to compare
  const items = saved.map((s) => [s.id, s.name]);
  fillSelect($("compare-a"), items);
  fillSelect($("compare-b"), items, items.length > 1 ? items[1][0] : undefined);
}

async function saveScenario() {
  const name = $("scenario-name").value.trim();
  if (!name) { showError("scenario name: give the scenario a name first"); return; }
  const scenario = readScenario();
  try {
    try {
      await api("POST", "/api/scenarios", { name, scenario });
    } catch (err) {
      if (err.status !== 409) throw err;
      // a scenario of that name exists: replace it only when the user says so
      if (!window.confirm(`A scenario called “${name}” is saved already. Replace it?`)) { setStatus("not saved"); return; }
      await api("POST", "/api/scenarios", { name, scenario, replace: true });
    }
    // the form now plans the saved scenario under its name (a report downloaded next is titled so), as one loaded
    state.loaded = { ...JSON.parse(JSON.stringify(scenario)), name };
    state.atLoad = formScenario();
    history.replaceState(null, "", shareUrl(readScenario()));
    await refreshSaved();
    setStatus(`saved “${name}”`);
  } catch (err) { showError(err.message); }
}

// The inputs a comparison shows beside the outputs, as the saved scenarios state them.
function scenarioInputs(s) {
  const p = s.platform || {};
  return [
    ["Model", s.model], ["Precision", s.quantization || "model's checkpoint"], ["Engine", s.engine || "the platform's own"],
    ["Platform", p.system || `${p.gpus} × ${p.gpu}`], ["Memory", sizeLabel(p.gpu) || "—"], ["Price point", p.price_point || "mid"],
    ["Quote per system (USD)", p.quote_usd_per_system ?? "catalogue band"], ["Power per system (W)", p.power_w_per_system ?? "catalogue figure"],
    ["Workload preset", (s.workload || {}).preset], ["Target users", s.target_users],
  ].map(([label, value]) => [label, value === undefined || value === null ? "—" : String(value)]);
}

async function compare() {
  showError("", "saved-error");
  $("saved-status").textContent = "comparing…";
  try {
    const a = $("compare-a").value, b = $("compare-b").value;
    const cmp = await api("GET", `/api/scenarios/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}&currency=${$("currency").value}`);
    const savedA = state.saved.get(String(a)), savedB = state.saved.get(String(b));
    const row = (cells, tag = "td") => {
      const tr = document.createElement("tr");
      for (const text of cells) { const cell = document.createElement(tag); cell.textContent = text; tr.append(cell); }
      if (tag === "td" && cells[1] !== cells[2]) tr.className = "differs";
      return tr;
    };
    const head = row(["", savedA ? savedA.name : cmp.a.result.name, savedB ? savedB.name : cmp.b.result.name], "th");
    const inputsA = scenarioInputs(savedA ? savedA.scenario : {}), inputsB = scenarioInputs(savedB ? savedB.scenario : {});
    const section = (title) => { const tr = row([title], "th"); tr.className = "section"; tr.cells[0].colSpan = 3; return tr; };
    const inputs = inputsA.map(([label, value], i) => row([label, value, inputsB[i][1]]));
    const outputs = cmp.a.cards.map((c, i) => row([c.label, c.value, cmp.b.cards[i].value]));
    $("compare-table").replaceChildren(head, section("Inputs"), ...inputs, section("Outputs"), ...outputs);
    $("saved-status").textContent = `${$("compare-table").querySelectorAll("tr.differs").length} rows differ (marked ≠)`;
  } catch (err) { $("saved-status").textContent = ""; showError(err.message, "saved-error"); }
}

async function refreshQuotes() {
  const quotes = await api("GET", "/api/quotes");
  $("quote-list").replaceChildren(...quotes.map((q) => {
    const li = document.createElement("li");
    li.textContent = `${q.system}: $${q.price_usd.toLocaleString("en-US")} from ${q.vendor} (${q.quoted_on}) ${q.note}`;
    const del = document.createElement("button");
    del.type = "button"; del.textContent = "Delete"; del.setAttribute("aria-label", `Delete quote from ${q.vendor}`);
    del.onclick = async () => {
      try { await api("DELETE", `/api/quotes/${q.id}`); } catch (err) { showError(err.message, "quote-error"); }
      await refreshQuotes();
      scheduleUpdate();
    };
    li.append(del);
    return li;
  }));
}

async function addQuote(event) {
  event.preventDefault();
  try {
    await api("POST", "/api/quotes", {
      system: $("quote-system").value, price_usd: Number($("quote-price").value), quoted_on: $("quote-date").value,
      vendor: $("quote-vendor").value, note: $("quote-note").value,
    });
    showError(refusal($("quote-form")), "quote-error");
    await refreshQuotes();
    scheduleUpdate();
  } catch (err) { showError(refusal($("quote-form"), err), "quote-error"); }
}
