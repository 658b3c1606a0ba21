// The web calculator: it only calls the API and renders what the library returns (cards are
// formatted server-side, charts are the library's Vega-Lite specs). No arithmetic happens here.
"use strict";

const $ = (id) => document.getElementById(id);
// loaded: the scenario last loaded (saved or shared link), whose fields the form has no control
// for are kept; request: the number of the newest plan request (older answers are dropped);
// linkNote: what the opened link held that the page could not take, shown until the form changes
const state = { lastPlan: null, timer: null, ready: false, loaded: null, request: 0, linkNote: "" };
window.inferplan = state;

// what a request that got no reply at all says (fetch's own words are "Failed to fetch")
const NO_REPLY = "the server did not answer: is `inferplan serve` still running? Start it again and retry";

// a request's response, or where none comes (the server stopped, the network down) an error saying NO_REPLY
function answered(path, init) {
  return fetch(path, init).catch(() => { throw new Error(NO_REPLY); });
}

async function api(method, path, body, onProgress) {  // onProgress: asks for the route's progress (progress.js)
  const response = await answered(path, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json", ...(onProgress && { Accept: NDJSON }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return null;
  const data = onProgress && response.ok ? await streamed(response, onProgress) : await response.json().catch(() => null);
  if (!response.ok || (onProgress && data.error)) {  // a stream ends with the error body a plain reply would carry
    const detail = data && data.detail ? data.detail : [{ msg: response.statusText }];
    const first = Array.isArray(detail) ? detail[0] : { msg: String(detail) };
    const where = first.loc ? first.loc.filter((p) => p !== "body").join(".") : "";
    const allowed = first.allowed ? ` (allowed: ${first.allowed})` : "";
    const error = new Error(`${where ? where + ": " : ""}${first.msg}${allowed}`);
    error.status = response.status;
    error.field = where;  // the refused field's JSON path, which a control names in its data-field
    error.detail = `${first.msg}${allowed}`;
    throw error;
  }
  return data;
}

// a chosen file as an upload holds it ({data, encoding}): its text as file.text() reads it (a UTF-8 BOM dropped),
// the smaller body under the server's size limits; when that text holds U+FFFD or NUL (the bytes are not UTF-8
// text: a compressed file's, gzip, xz, bzip2, a zip of one file), the bytes base64-encoded, which the server
// decompresses
async function fileSent(file) {
  const text = await file.text();
  if (!text.includes("\uFFFD") && !text.includes("\u0000")) return { data: text, encoding: "text" };
  return { data: await fileBase64(file), encoding: "base64" };
}

// a chosen file's bytes base64-encoded (an empty file's are "")
async function fileBase64(file) {
  const url = await new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
  return url.includes(",") ? url.slice(url.indexOf(",") + 1) : "";  // an empty file's URL is "data:"
}

function option(value, text) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = text;
  return o;
}

function fillSelect(select, items, selected) {
  select.replaceChildren(...items.map(([v, t]) => option(v, t)));
  if (selected) select.value = selected;
}

function showError(message, id = "error") {  // id: the error box beside the form the message is about
  $(id).textContent = message;
  $(id).hidden = !message;
}

// A refusal names a field by its JSON path; the form's control whose data-field is that path (or
// the nearest enclosing one: "trace" for "trace.2.input_tokens") is marked invalid, and the message
// starts with the control's label, so it says which control to change. Without an error it unmarks.
function refusal(form, err) {
  for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  if (!err) return "";
  const path = (err.field || "").split(".");
  for (let n = path.length; n > 0 && path[0]; n--) {
    const control = form.querySelector(`[data-field="${CSS.escape(path.slice(0, n).join("."))}"]`);
    if (!control || control.hidden) continue;
    control.setAttribute("aria-invalid", "true");
    const label = form.querySelector(`label[for="${CSS.escape(control.id)}"]`);
    const name = label ? label.firstChild.textContent.trim() : control.id;
    return `${name} (${err.field}): ${err.detail}`;
  }
  return err.message;
}

// the plan's figures: the simulator's and the Memory & speed box's
const PLAN_FIGURES = "#simulator figure, #memory figure";

// a figure emptied: its chart, and the accessible name its chart's description gave it
function clearFigure(figure) {
  figure.replaceChildren();
  figure.removeAttribute("aria-label");
}

// A plan that fails replaces the answer: no card, chart or summary of an earlier scenario stays.
function clearAnswer() {
  state.lastPlan = null;
  for (const id of ["cards", "headline-notes", "recommendation", "assumptions"]) $(id).replaceChildren();
  $("memory-summary").textContent = $("answer-size").textContent = $("build-note").textContent = "";
  $("placement-note").textContent = "";
  showLaunch({ deploy: "", deploy_notes: [] });
  for (const figure of document.querySelectorAll(PLAN_FIGURES)) clearFigure(figure);
}

// A launch command as the server words it, each space-separated word in a span (.arg) the line does not
// break inside, so a narrow box wraps it between arguments and never at a flag's hyphen; the text is unchanged.
// The box is a tab stop: an argument longer than it scrolls sideways, which a keyboard does once it is focused.
function showCommand(element, text) {
  element.tabIndex = 0;
  element.replaceChildren(...text.split("\n").flatMap((line, i) => [...(i ? ["\n"] : []),
    ...line.split(" ").flatMap((word, j) => {
      const arg = document.createElement("span");
      arg.className = "arg"; arg.textContent = word;
      return j ? [" ", arg] : [arg];
    })]));
}

// the launch command of the cell the plan sized and its notes, as `inferplan plan` prints them (--json: deploy)
function showLaunch(view) {
  showCommand($("launch-command"), view.deploy);
  $("launch-notes").replaceChildren(...view.deploy_notes.map((n) => {
    const li = document.createElement("li"); li.textContent = n; return li;
  }));
  $("launch").hidden = !view.deploy;
}

// Draws a view's charts, emptying every plan figure the view has no chart for (a plan without
// uncertainty draws no P10-P90 chart: an earlier scenario's must not stay).
async function drawCharts(charts) {
  for (const figure of document.querySelectorAll(PLAN_FIGURES)) {
    if (!charts[figure.id.replace(/^chart-/, "")]) clearFigure(figure);
  }
  await Promise.all(Object.entries(charts).map(([name, spec]) => drawChart(name, spec)));
}

function setStatus(message) {
  $("status").textContent = message;
}

function card(c) {
  const div = document.createElement("div");
  div.className = "card";
  div.dataset.key = c.key;
  if (c.sources.length) div.title = c.sources.map((n) => n.tooltip).join("; ");  // where the figure's prices come from
  const label = document.createElement("div");
  label.className = "label";
  label.textContent = c.label;
  const value = document.createElement("div");
  value.className = "value";
  value.textContent = c.value;
  div.append(label, value);
  if (c.note) {
    const note = document.createElement("div");
    note.className = "note";
    note.textContent = c.note;
    div.append(note);
  }
  return div;
}

async function drawChart(name, spec) {
  const el = $(`chart-${name}`);
  if (!el || !spec) return;
  // the library's spec at the figure's width (a phone's too); its numbers are drawn as they are
  // fit-x: the width only, so a legend taller than the spec's height never squeezes the plot
  await vegaEmbed(el, { ...spec, width: "container", autosize: { type: "fit-x", contains: "padding" } },
    { actions: false, renderer: "svg" });
}

// the refusal beside the form, after what the opened link held that the page could not take
function showFormError(message) {
  showError([state.linkNote, message].filter(Boolean).join(" "));
}

async function update() {
  const request = ++state.request;
  const unread = unreadNumber($("scenario-form"));  // form.js: a number field holding what is no number
  if (unread) {  // planned with that field blank, it would answer for its default without saying so
    clearAnswer();
    showFormError(refusal($("scenario-form"), unread));
    setStatus("not planned: a field holds no number");
    return;
  }
  const scenario = readScenario();
  history.replaceState(null, "", shareUrl(scenario));
  setStatus("computing…");
  try {
    const view = await api("POST", "/api/plan", { scenario, draws: 2000, currency: $("currency").value });
    if (request !== state.request) return;  // a newer request was sent meanwhile: its answer counts
    state.lastPlan = view;
    showFormError(refusal($("scenario-form")));
    $("cards").replaceChildren(...view.cards.filter((c) => c.key !== "recommendation").map(card));
    $("headline-notes").replaceChildren(...view.headline_notes.map((n) => {  // the library's words, as it wrote them
      const p = document.createElement("p"); p.textContent = `Note: ${n}`; return p;
    }));
    const rec = view.cards.find((c) => c.key === "recommendation");  // formatted by the server, in the page's currency
    $("recommendation").textContent = `Recommendation: ${rec.value} — ${rec.note}`;
    const notes = view.quote_note ? [view.quote_note, ...view.result.assumptions] : view.result.assumptions;
    $("assumptions").replaceChildren(...notes.map((a) => { const li = document.createElement("li"); li.textContent = a; return li; }));
    showMemory(view);
    showLaunch(view);
    for (const [id, key] of SITE_RATES) $(id).placeholder = `${view.result.rates[key]}`;  // what a blank plans at
    if ($("target_users").value === "") $("target_users").placeholder = `${view.result.target_users} (the default)`;
    showSize($("answer-size"), scenario.platform.gpu);  // the size this answer was planned at
    await drawCharts(view.charts);
    setStatus("up to date");
    document.body.dataset.planned = String(Date.now());
  } catch (err) {
    if (request !== state.request) return;
    clearAnswer();
    showFormError(refusal($("scenario-form"), err));
    setStatus("");
    if (costOnly(err.field)) await memoryWithoutCosts(scenario, request);
  }
}

// the plan's memory part: the replica cell's summary, and how the engine holds the build
function showMemory(view) {
  $("memory-summary").textContent = view.memory_summary;
  // the build an Ollama tag selected (its weights, engine and context), as `inferplan fit` prints it
  $("build-note").textContent = view.memory.build_note ? `Build: ${view.memory.build_note}` : "";
  // where the engine placed the weights when none is stated (an Ollama tag's: llama-server --fit), as fit prints it
  $("placement-note").textContent = view.memory.placement_note ? `Placement: ${view.memory.placement_note}` : "";
}

// A platform with no price yet (GPUs of one kind, a server the catalogue prices at no band), or with a price but
// no power figure (an Apple chip's), or any money field refused, still answers what its replica cell holds and how
// fast it runs: the plan's memory part, asked without the fields only the costs read (the scenario's money and the
// platform's price and power), so no value of theirs can refuse it. Should that fail too, the refusal stands alone.
const COST_FIELDS = ["scenario.platform.quote_usd_per_system", "scenario.platform.power_w_per_system"];

function costOnly(field) {
  return COST_FIELDS.includes(field) || (field || "").startsWith("scenario.money.");
}

function withoutCosts(scenario) {
  const platform = { ...scenario.platform };
  for (const field of COST_FIELDS) delete platform[field.split(".").pop()];
  const rest = { ...scenario, platform };
  delete rest.money;
  return rest;
}

async function memoryWithoutCosts(scenario, request) {
  let view;
  try { view = await api("POST", "/api/views/memory", { scenario: withoutCosts(scenario) }); } catch { return; }
  if (request !== state.request) return;
  showMemory(view);
  await drawCharts(view.charts);
  setStatus("memory and speed up to date; the costs need the field marked");
  document.body.dataset.memoryPlanned = String(Date.now());
}

function scheduleUpdate() {
  showOutputs();
  clearTimeout(state.timer);
  state.timer = setTimeout(update, 250);
}

async function downloadReport() {
  try {
    const response = await answered("/api/report", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ scenario: readScenario(), draws: 2000, currency: $("currency").value }),
    });
    if (!response.ok) {  // the same message the plan request would show: the field and what is allowed
      const data = await response.json().catch(() => null);
      const first = data && Array.isArray(data.detail) ? data.detail[0] : null;
      const where = first && first.loc ? first.loc.filter((p) => p !== "body").join(".") : "";
      throw new Error(first ? `report: ${where ? where + ": " : ""}${first.msg}${first.allowed ? ` (allowed: ${first.allowed})` : ""}`
                            : `report failed: ${response.status} ${response.statusText}`);
    }
    const blob = await response.blob();
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "inferplan-report.html";
    document.body.append(a);
    a.click();
    a.remove();
    setStatus("report downloaded");
  } catch (err) {
    showError(err.message);
  }
}

// a cell is its text, or [text, title]: the title (hover text) says where the number comes from
function tableRows(tbody, rows) {
  tbody.replaceChildren(...rows.map((cells) => {
    const tr = document.createElement("tr");
    for (const cell of cells) {
      const [text, title] = Array.isArray(cell) ? cell : [cell, ""];
      const td = document.createElement("td");
      td.textContent = text;
      if (title) { td.title = title; td.classList.add("sourced"); }
      tr.append(td);
    }
    return tr;
  }));
}

// a view's field with the sources the server attached to it
function sourced(view, field) {
  return [view[field], (view.sources[field] || []).map((n) => n.tooltip).join("; ")];
}

async function init() {
  const [models, systems, accelerators, engines, quantizations, presets, cards, ladder, fx, configurations] = await Promise.all([
    api("GET", "/api/catalog/models"), api("GET", "/api/catalog/systems"), api("GET", "/api/catalog/accelerators"),
    api("GET", "/api/catalog/engines"), api("GET", "/api/catalog/quantizations"), api("GET", "/api/catalog/workload-presets"),
    api("GET", "/api/views/models"), api("GET", "/api/views/platforms"), api("GET", "/api/views/fx"),
    api("GET", "/api/views/memory-configurations"),
  ]);
  loadSizes(configurations);
  for (const item of [...models, ...systems, ...accelerators]) names.set(item.id, item.name);
  // the FX rate as the catalogue states it, with its source and date, wherever EUR is offered or shown
  $("currency").querySelector("option[value=eur]").textContent = `EUR (${fx.label})`;
  $("fx-note").textContent = `EUR at ${fx.text}`;
  $("ladder-fx").textContent = `EUR prices at ${fx.text}`;
  const plannable = models.filter((m) => m.config || m.kv_proxy || m.status !== "reference")
    .map((m) => [m.id, m.config ? m.name : `${m.name} (${m.kv_proxy ? "KV layout: " + m.kv_proxy : "needs KV bytes/token"})`]);
  fillSelect($("model"), plannable, "qwen3-235b-a22b");
  // every system (one without a catalogue price plans with the price typed beside it) and every GPU
  const platforms = [
    ...systems.map((s) => [s.id, s.price && s.price.usd_low ? s.name : `${s.name} (no catalogue price: type one)`]),
    ...accelerators.map((a) => [`${GPU_PREFIX}${a.id}`, `${a.name} GPUs (type a price)`]),
  ];
  fillSelect($("system"), platforms, "hgx-b200");
  $("engine").append(...engines.map((e) => option(e.id, e.name)));  // after the page's blank: the platform's own
  $("engine").value = "sglang";  // the landing deployment is examples/coding-developers-b200.yaml's, which names SGLang
  fillSelect($("quantization"), [["", "model's checkpoint"], ...quantizations.map((q) => [q.id, q.name])], "fp8");
  $("system").addEventListener("change", () => {  // a typed price or power belongs to the platform it was typed for
    $("platform_price").value = $("platform_power").value = "";
    showGpuCount();
  });
  $("gpu-memory").addEventListener("change", () => { $("platform_price").value = ""; });  // a price is a size's
  fillSelect($("quote-system"), systems.map((s) => [s.id, s.name]));
  fillSelect($("preset"), presets.map((p) => [p.id, p.name]), "coding-developer-median");
  fillSelect($("search-model"), plannable, "qwen3-32b");
  fillSelect($("homelab-gpu"), accelerators.map((x) => [x.id, x.name]), "rtx-4090");
  const unified = new Set(accelerators.filter((x) => x.unified_memory).map((x) => x.id));
  const homelabSizes = () => {
    fillSizes($("homelab-memory"), $("homelab-memory-field"), $("homelab-gpu").value);
    // a unified-memory chip's memory is its host RAM: no host RAM of its own to offload weights to
    const own = unified.has($("homelab-gpu").value);
    $("homelab-host-memory").disabled = own;
    $("homelab-host-memory").placeholder = own ? "unified memory: none of its own" : "for offload speeds";
    if (own) $("homelab-host-memory").value = "";
  };
  $("homelab-gpu").addEventListener("change", homelabSizes);
  homelabSizes();
  $("homelab-engine").append(...engines.map((e) => option(e.id, e.name)));
  $("homelab-quantization").append(...quantizations.map((q) => option(q.id, q.name)));
  fillSelect($("search-preset"), presets.map((p) => [p.id, p.name]), "chat-seat");
  await fillSearchChoices();  // search.js
  tableRows($("model-table").tBodies[0], cards.map((c) => [c.name, c.status, sourced(c, "params"),
    [c.checkpoints.join("; "), (c.sources.checkpoints || []).map((n) => n.tooltip).join("; ")], c.first_node, c.gate, c.architecture]));
  tableRows($("platform-table").tBodies[0], ladder.map((p) => [p.name, p.gpus, sourced(p, "memory"), sourced(p, "power"), p.cooling,
    sourced(p, "price_usd"), sourced(p, "price_eur"), p.native_nvfp4, p.software, p.status]));
  const params = new URLSearchParams(location.search);
  const notes = [];
  const currency = params.get("c");
  const offer = currency && [...$("currency").options].find((o) => o.value === currency.trim().toLowerCase());
  if (offer) $("currency").value = offer.value;  // EUR and eur alike
  else if (currency) {  // the select would show blank and every plan be refused: the page's currency instead
    const offered = [...$("currency").options].map((o) => o.value).join(", ");
    notes.push(`Currency (c): the link's ${JSON.stringify(currency.slice(0, 40))} is not offered (allowed: ${offered}); `
      + `the plan is in ${$("currency").selectedOptions[0].textContent}.`);
  }
  if (params.get("s")) {
    try { fillForm(JSON.parse(params.get("s"))); } catch (err) { notes.push("The link's scenario could not be read: the page's own is planned."); }
  }
  state.linkNote = notes.join(" ");
  showError(state.linkNote);
  showOutputs();
  for (const kind of ["input", "change"]) {  // the name typed to save under plans nothing: no new plan for it
    $("scenario-form").addEventListener(kind, (event) => {
      if (event.target.id === "scenario-name") return;
      state.linkNote = "";  // the user has changed the scenario the link opened
      scheduleUpdate();
    });
  }
  $("download-report").addEventListener("click", downloadReport);
  $("save-scenario").addEventListener("click", saveScenario);
  $("copy-link").addEventListener("click", async () => {
    const url = location.origin + shareUrl(readScenario());
    try { await navigator.clipboard.writeText(url); setStatus("link copied"); } catch { setStatus(url); }
  });
  $("compare").addEventListener("click", compare);
  $("quote-form").addEventListener("submit", addQuote);
  $("search-form").addEventListener("submit", runSearch);
  for (const kind of ["input", "change"]) $("search-form").addEventListener(kind, searchControlsInUse);
  searchControlsInUse();
  $("homelab-form").addEventListener("submit", runHomelab);
  await Promise.all([refreshSaved(), refreshQuotes()]);
  state.ready = true;
  await update();
}

// after every script of the page has run (form.js, saved.js, search.js and measurements.js define what init uses)
document.addEventListener("DOMContentLoaded", () => init().catch((err) => showError(err.message)));
