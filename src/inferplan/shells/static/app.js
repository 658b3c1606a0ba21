// The web calculator: it only calls the API and renders what the library returns (cards are
// formatted server-side, charts are the library's Vega-Lite specs). No arithmetic happens here.
"use strict";

const $ = (id) => document.getElementById(id);
// loaded: the scenario last loaded (saved or shared link), whose fields the form has no control
// for are kept; request: the number of the newest plan request (older answers are dropped)
const state = { lastPlan: null, timer: null, ready: false, loaded: null, request: 0 };
window.inferplan = state;

async function api(method, path, body, onProgress) {  // onProgress: asks for the route's progress (progress.js)
  const response = await fetch(path, {
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

// A plan that fails replaces the answer: no card, chart or summary of an earlier scenario stays.
function clearAnswer() {
  state.lastPlan = null;
  for (const id of ["cards", "headline-notes", "recommendation", "assumptions"]) $(id).replaceChildren();
  $("memory-summary").textContent = $("answer-size").textContent = $("build-note").textContent = "";
  $("placement-note").textContent = "";
  for (const figure of document.querySelectorAll("#simulator figure, #memory figure")) figure.replaceChildren();
}

// The platform control holds a system id, or "gpu:<accelerator id>" for GPUs of one kind.
const GPU_PREFIX = "gpu:";

function platformKey(platform) {
  return platform.system || `${GPU_PREFIX}${platform.gpu}`;
}

// catalogue id -> name, of every model, system and accelerator (filled by init)
const names = new Map();

// A scenario's name as a person reads it: "Llama 3.3 70B Instruct on 4× NVIDIA H100 SXM5 80GB", "… on HGX B200"
// (a size of a chip sold in several by its configuration's name); an id the catalogue lacks as given.
function scenarioName(model, platform) {
  const gpu = platform.gpu ? (configurationOf(platform.gpu) || {}).name || names.get(platform.gpu) || platform.gpu : "";
  const on = platform.system ? names.get(platform.system) || platform.system : `${platform.gpus || 1}× ${gpu}`;
  return `${names.get(model) || model} on ${on}`;
}

// GPUs of one kind take a count, and a chip sold in several memory sizes a size (`size`: the one to
// select, else the library's default for the chip).
function showGpuCount(size) {
  const bare = $("system").value.startsWith(GPU_PREFIX);
  $("gpus").hidden = !bare;
  $("gpus-label").hidden = !bare;
  fillSizes($("gpu-memory"), $("gpu-memory-label"), bare ? $("system").value.slice(GPU_PREFIX.length) : "", size);
}

function setStatus(message) {
  $("status").textContent = message;
}

function readScenario() {
  return withLoadedFields(formScenario());
}

function formPlatform() {
  const chosen = $("system").value;
  const platform = chosen.startsWith(GPU_PREFIX)
    ? { gpu: sizedId($("gpu-memory"), chosen.slice(GPU_PREFIX.length)), gpus: Number($("gpus").value || 1),
      price_point: $("price_point").value }
    : { system: chosen, price_point: $("price_point").value };
  if ($("platform_price").value !== "") platform.quote_usd_per_system = Number($("platform_price").value);
  if ($("platform_power").value !== "") platform.power_w_per_system = Number($("platform_power").value);
  return platform;
}

// money controls whose blank means the default of the site the platform stands at (a desk, a data
// centre): control id, and the field of the scenario's money and of the plan's rates
const SITE_RATES = [["electricity", "electricity_usd_per_kwh"], ["pue", "pue"], ["colocation", "colocation_usd_per_kw_month"]];

// The scenario the form's controls describe (nothing kept from a loaded one).
function formScenario() {
  const value = (id) => $(id).value;
  const number = (id) => (value(id) === "" ? undefined : Number(value(id)));
  const platform = formPlatform();
  const scenario = {
    name: scenarioName(value("model"), platform),
    model: value("model"),
    engine: value("engine") || undefined,  // blank: left out, so the library takes the platform's own
    platform,
    workload: value("preset") ? { preset: value("preset") } : {},  // blank: a loaded load that names no preset
    target_users: number("target_users"),
    money: {
      quote_multiplier: number("quote_multiplier"),
      utilization: number("utilization"),
      capital_recovery_years: number("capital_recovery_years"),
      amortization_years: number("amortization_years"),
      software: value("software"),
    },
  };
  if (value("quantization")) scenario.quantization = value("quantization");
  if (value("target_speed")) scenario.workload.target_output_tokens_per_s = number("target_speed");
  for (const [id, key] of SITE_RATES) if (value(id)) scenario.money[key] = number(id);
  if (value("kv_bytes_per_token")) scenario.kv_bytes_per_token = number("kv_bytes_per_token");
  return scenario;
}

// What the form cannot show (a fixed cell and its replicas, a prefill pool beside them, rented or bought, a KV dtype, drafts, a vendor quote, workload and money
// overrides) stays as the loaded scenario had it, so a loaded scenario plans as it was saved — until
// the form changes what it belongs to: the cell, KV dtype and drafts belong to the model, engine,
// precision and system (the replica cells to the target users too); a quote to the system; workload overrides to the preset. A control the user
// changed (a field cleared to mean "the default" included) always wins over the loaded value; one
// left as loading set it keeps the loaded value, which a slider may not hold exactly (1.3×).
function withLoadedFields(scenario) {
  const keep = state.loaded, atLoad = state.atLoad;
  if (!keep) return scenario;
  const same = ["model", "engine", "quantization"].every((k) => scenario[k] === atLoad[k])
    && platformKey(scenario.platform) === platformKey(atLoad.platform);
  // the name too (a shared link's "Coding team on B200" titles its report), until the deployment changes
  if (same) for (const key of ["name", "cell", "kv_cache_dtype", "speculative", "replicas", "prefill_pool", "rented"]) if (keep[key] != null) scenario[key] = keep[key];
  // the replica cells were counted for the loaded target: another target is sized afresh (a prefill pool's
  // decode cells stay as stated: the two pools are stated together)
  if (scenario.target_users !== atLoad.target_users && !scenario.prefill_pool) delete scenario.replicas;
  const platform = keep.platform || {};
  if (platformKey(scenario.platform) === platformKey(atLoad.platform)) {
    scenario.platform = { ...platform, ...scenario.platform };
  }
  const merged = (form, loaded, before) => {  // the loaded values, then every control the user has changed
    const out = { ...(loaded || {}) };
    for (const k of new Set([...Object.keys(form), ...Object.keys(before)])) {
      const now = form[k], then = before[k];
      if (now === then && k in out) continue;  // untouched since loading: the loaded value stands
      if (now === undefined) delete out[k]; else out[k] = now;  // changed, or cleared to mean the default
    }
    return out;
  };
  if ((keep.workload || {}).preset === scenario.workload.preset) {
    scenario.workload = merged(scenario.workload, keep.workload, atLoad.workload);
  }
  scenario.money = merged(scenario.money, keep.money, atLoad.money);
  if (scenario.target_users === atLoad.target_users && keep.target_users != null) scenario.target_users = keep.target_users;
  return scenario;
}

function fillForm(s) {
  // a value the scenario leaves out puts the control back to the page's default (its HTML value), so
  // the form never shows what an earlier scenario set
  const set = (id, v) => { const el = $(id); el.value = v ?? el.defaultValue ?? el.value; };
  const optional = (id, v) => { $(id).value = v ?? ""; };  // blank: the default
  state.loaded = JSON.parse(JSON.stringify(s));
  const platform = s.platform || {};
  const [accel, size] = sizeOf(platform.gpu);  // a stated size selects the chip and that size
  const key = platform.system || platform.gpu ? platform.system || `${GPU_PREFIX}${accel}` : undefined;
  if (key && ![...$("system").options].some((o) => o.value === key)) {  // not in the catalogue's lists
    $("system").append(option(key, `${key} (not in the catalogue)`));
  }
  // a model the list does not hold (an Ollama tag such as qwen3:32b, an alias, an imported id) is offered
  // as named, so the scenario plans what it names instead of a blank model
  if (s.model && ![...$("model").options].some((o) => o.value === s.model)) {
    $("model").append(option(s.model, `${s.model} (as the scenario names it)`));
  }
  set("model", s.model);
  optional("engine", s.engine);  // left out: the platform's own, as the CLI plans it
  set("quantization", s.quantization || "");
  optional("kv_bytes_per_token", s.kv_bytes_per_token);
  set("system", key);
  set("gpus", platform.gpus);
  optional("platform_price", platform.quote_usd_per_system);
  optional("platform_power", platform.power_w_per_system);
  set("price_point", platform.price_point);
  showGpuCount(size);
  const load = s.workload || {};
  const changed = Object.keys(load).length > 0;  // no key: the preset a scenario falls back to, as loaded
  customLoad(changed && !load.preset);
  set("preset", load.preset || (changed ? "" : SCENARIO_PRESET));
  optional("target_speed", s.workload && s.workload.target_output_tokens_per_s);
  set("target_users", s.target_users);
  const m = s.money || {};
  set("quote_multiplier", m.quote_multiplier);
  set("utilization", m.utilization);
  set("capital_recovery_years", m.capital_recovery_years);
  set("amortization_years", m.amortization_years);
  for (const [id, key] of SITE_RATES) optional(id, m[key]);
  set("software", m.software);
  state.atLoad = formScenario();
  showOutputs();
}

// The preset a scenario's workload falls back to when it names none (economics/workloads.py WorkloadOverrides).
const SCENARIO_PRESET = "chat-seat";

// A loaded workload that names no preset (a search's pick, a link's stated load) changes the preset it falls
// back to: offered as a preset option of its own, blank, named after that preset, so the form shows it and it
// plans as loaded until another preset is chosen.
function customLoad(offered) {
  const custom = $("preset").querySelector('option[value=""]');
  const base = [...$("preset").options].find((o) => o.value === SCENARIO_PRESET);
  const label = `${base ? base.textContent : SCENARIO_PRESET}, as the scenario changes it`;
  if (offered && !custom) $("preset").prepend(option("", label));
  if (!offered && custom) custom.remove();
}

function showOutputs() {
  $("quote_multiplier_out").textContent = `${$("quote_multiplier").value}×`;
  $("utilization_out").textContent = `${$("utilization").value} of maximum`;
}

function shareUrl(scenario) {
  const params = new URLSearchParams({ s: JSON.stringify(scenario), c: $("currency").value });
  return `${location.pathname}?${params.toString()}`;
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

async function update() {
  const scenario = readScenario();
  history.replaceState(null, "", shareUrl(scenario));
  setStatus("computing…");
  const request = ++state.request;
  try {
    const view = await api("POST", "/api/plan", { scenario, draws: 2000, currency: $("currency").value });
    if (request !== state.request) return;  // a newer request was sent meanwhile: its answer counts
    state.lastPlan = view;
    showError(refusal($("scenario-form")));
    $("cards").replaceChildren(...view.cards.filter((c) => c.key !== "recommendation").map(card));
    $("headline-notes").replaceChildren(...view.headline_notes.map((n) => {  // the library's words, as it wrote them
      const p = document.createElement("p"); p.textContent = `Note: ${n}`; return p;
    }));
    const rec = view.cards.find((c) => c.key === "recommendation");  // formatted by the server, in the page's currency
    $("recommendation").textContent = `Recommendation: ${rec.value} — ${rec.note}`;
    const notes = view.quote_note ? [view.quote_note, ...view.result.assumptions] : view.result.assumptions;
    $("assumptions").replaceChildren(...notes.map((a) => { const li = document.createElement("li"); li.textContent = a; return li; }));
    showMemory(view);
    for (const [id, key] of SITE_RATES) $(id).placeholder = `${view.result.rates[key]}`;  // what a blank plans at
    showSize($("answer-size"), scenario.platform.gpu);  // the size this answer was planned at
    await Promise.all(Object.entries(view.charts).map(([name, spec]) => drawChart(name, spec)));
    setStatus("up to date");
    document.body.dataset.planned = String(Date.now());
  } catch (err) {
    if (request !== state.request) return;
    clearAnswer();
    showError(refusal($("scenario-form"), err));
    setStatus("");
    if (err.field === PRICE_FIELD) await memoryWithoutPrice(scenario, request);
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

// A platform with no price yet (GPUs of one kind, a server the catalogue prices at no band) still answers what
// its replica cell holds and how fast it runs: the plan's memory part, which needs no price, under the price's
// refusal. Should that fail too, the refusal stands alone.
const PRICE_FIELD = "scenario.platform.quote_usd_per_system";

async function memoryWithoutPrice(scenario, request) {
  let view;
  try { view = await api("POST", "/api/views/memory", { scenario }); } catch { return; }
  if (request !== state.request) return;
  showMemory(view);
  await Promise.all(Object.entries(view.charts).map(([name, spec]) => drawChart(name, spec)));
  setStatus("memory and speed up to date; the costs need a price");
  document.body.dataset.memoryPlanned = String(Date.now());
}

function scheduleUpdate() {
  showOutputs();
  clearTimeout(state.timer);
  state.timer = setTimeout(update, 250);
}

async function downloadReport() {
  try {
    const response = await fetch("/api/report", {
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
  if (params.get("c")) $("currency").value = params.get("c");
  if (params.get("s")) {
    try { fillForm(JSON.parse(params.get("s"))); } catch (err) { showError("the link's scenario could not be read"); }
  }
  showOutputs();
  for (const kind of ["input", "change"]) {  // the name typed to save under plans nothing: no new plan for it
    $("scenario-form").addEventListener(kind, (event) => { if (event.target.id !== "scenario-name") scheduleUpdate(); });
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

// after every script of the page has run (saved.js, search.js and measurements.js define handlers init wires)
document.addEventListener("DOMContentLoaded", () => init().catch((err) => showError(err.message)));
