// The "Find the cheapest" and "What runs on my GPUs?" views of the web calculator (loaded after
// app.js, whose helpers they use). As there, the server does every sum and words the answer.
"use strict";

// "Find the cheapest": the form becomes a search request; the server ranks, prices and words the
// answer (report/search_view.py); "Use this" loads a pick into the Users + ROI simulator above.
// A trace file goes to the server as its name and text (a compressed one as its bytes, base64: fileSent): the
// server reads it as the CLI's --trace reads the file (CSV, or JSONL by its name) and names a bad row and its line.
async function traceFile(file) {
  const sent = await fileSent(file);
  return { name: file.name, text: sent.data, encoding: sent.encoding };
}

async function searchRequest() {
  const number = (id) => ($(id).value === "" ? undefined : Number($(id).value));
  const request = { models: [...$("search-model").selectedOptions].map((o) => o.value), objective: $("search-objective").value,
    pricing: $("search-pricing").value, top: number("search-top") ?? 10, targets: {},
    speculative: $("search-speculative").checked, disaggregated: $("search-disaggregated").checked };
  const trace = $("search-trace").files[0];
  if (trace) {
    request.trace = await traceFile(trace);
  } else if ($("search-rate").value !== "") {
    Object.assign(request, { request_rate_per_s: number("search-rate"), input_len: number("search-input-len"),
      output_len: number("search-output-len") });
  } else {
    Object.assign(request, { users: number("search-users"), workload: $("search-preset").value });
  }
  if (!trace) {  // how the users' or the rate's requests arrive; a trace brings its own
    request.arrival = $("search-arrival").value;
    if (request.arrival === "bursty") {
      request.peak_to_average = number("search-peak");
      if ($("search-burst-period").value !== "") request.burst_period_s = number("search-burst-period");
    }
    for (const [id, key] of [["search-input-scv", "input_tokens_scv"], ["search-output-scv", "output_tokens_scv"]]) {
      if ($(id).value !== "") request[key] = number(id);
    }
    if ($("search-lengths").value !== "lognormal") request.lengths = $("search-lengths").value;
  }
  for (const [id, key] of [["search-ttft-p50", "ttft_p50_s"], ["search-ttft-p95", "ttft_p95_s"],
    ["search-ttft-p99", "ttft_p99_s"], ["search-speed", "min_output_tokens_per_s_per_user"],
    ["search-tpot-p95", "tpot_p95_s"], ["search-e2e-p95", "e2e_p95_s"], ["search-max-utilisation", "max_utilisation"]]) {
    if ($(id).value !== "") request.targets[key] = number(id);
  }
  for (const [id, key] of [["search-max-gpus", "max_gpus"], ["search-max-capex", "max_capex_usd"],
    ["search-max-power", "max_power_w"], ["search-prefix-cache", "prefix_cache_hit_rate"]]) if ($(id).value !== "") request[key] = number(id);
  // the server reads "id=USD, …" or one number (search/request.py), and refuses it naming gpu_price_usd
  if ($("search-gpu-price").value.trim() !== "") request.gpu_price_usd = $("search-gpu-price").value.trim();
  for (const [id, key] of SEARCH_FILTERS) {
    const chosen = $(id).disabled ? [] : [...$(id).selectedOptions].map((o) => o.value);
    if (chosen.length) request[key] = chosen;  // none chosen: the server's default
  }
  return request;
}

// The multi-select filters: each control and its request field, which names its list in the choices too.
const SEARCH_FILTERS = [["search-vendors", "vendors"], ["search-statuses", "statuses"], ["search-form-factors", "form_factors"],
  ["search-systems", "systems"], ["search-accelerators", "accelerators"], ["search-engines", "engines"],
  ["search-quantizations", "quantizations"], ["search-kv-cache-dtypes", "kv_cache_dtypes"]];

// The filters' choices come from the server (GET /api/views/search-choices: the catalogue's vendors, systems,
// accelerators, engines, weight formats and KV-cache types, the statuses with the ones searched by default,
// the form factors, the switches' defaults); the page lists them.
async function fillSearchChoices() {
  const choices = await api("GET", "/api/views/search-choices");
  for (const [id, key] of SEARCH_FILTERS) fillSelect($(id), choices[key].map((c) => [c.id, c.label]));
  for (const o of $("search-statuses").options) o.selected = choices.default_statuses.includes(o.value);
  $("search-speculative").checked = choices.speculative;
  $("search-disaggregated").checked = choices.disaggregated;
}

// Controls count only with others (the request above reads them so): the lengths with a rate; users
// and preset without a rate or trace; arrivals and spreads without a trace (it brings its own); the
// burst ratio when bursty; one speed target, tokens/s or TPOT; systems or accelerators. The rest are
// greyed out, so a typed value or a choice is never silently ignored.
function searchControlsInUse() {
  const trace = $("search-trace").files.length > 0, rate = !trace && $("search-rate").value !== "";
  const off = { "search-users": trace || rate, "search-preset": trace || rate, "search-rate": trace,
    "search-input-len": !rate, "search-output-len": !rate, "search-arrival": trace,
    "search-peak": trace || $("search-arrival").value !== "bursty",
    "search-burst-period": trace || $("search-arrival").value !== "bursty", "search-input-scv": trace,
    "search-output-scv": trace, "search-lengths": trace, "search-speed": $("search-tpot-p95").value !== "",
    "search-tpot-p95": $("search-speed").value !== "",
    "search-systems": $("search-accelerators").selectedOptions.length > 0,  // systems or accelerators, not both
    "search-accelerators": $("search-systems").selectedOptions.length > 0 };
  for (const [id, disabled] of Object.entries(off)) $(id).disabled = disabled;
}

async function useThis(scenario) {
  fillForm({ name: scenarioName(scenario.model, scenario.platform), ...scenario });
  location.hash = "#simulator";
  await update();
  // keyboard focus follows the pick to the simulator; a pick it refuses as it stands: to the control to fill
  const refused = $("scenario-form").querySelector("[aria-invalid]");
  (refused || $("sim-title")).focus();
}

// What a pick rests on (an assumed power draw, the simulation that checked it, a file to supply), as
// `inferplan search` prints under its table: under the pick's deployment, folded when there are many.
const NOTES_SHOWN_OPEN = 2;
function pickNotes(row) {
  const box = document.createElement("details");
  box.className = "pick-notes";
  box.open = row.notes.length <= NOTES_SHOWN_OPEN;
  const title = document.createElement("summary");
  title.textContent = `Notes on #${row.rank}`;
  const list = document.createElement("ul");
  list.replaceChildren(...row.notes.map((text) => { const li = document.createElement("li"); li.textContent = text; return li; }));
  box.append(title, list);
  return box;
}

// A search that fails replaces the answer, as a plan that fails does: no row, chart or reason of an
// earlier search stays beside the error.
function clearSearchAnswer() {
  state.lastSearch = null;
  for (const id of ["search-notes", "search-api", "search-infeasible", "search-near", "search-next"]) $(id).replaceChildren();
  $("search-headline").textContent = "";
  $("search-answer").hidden = true;
  clearFigure($("chart-search"));
  $("search-table").tBodies[0].replaceChildren();
  $("search-summary").textContent = "";
  $("search-table").hidden = $("search-infeasible-box").hidden = $("search-near-box").hidden = true;
}

async function runSearch(event) {
  event.preventDefault();
  $("search-error").hidden = true;
  $("search-status").textContent = "searching…";
  $("search-run").disabled = true;  // one search at a time: a second click would race the first
  $("search-form").setAttribute("aria-busy", "true");
  const progress = searchProgress();  // progress.js: the bar, once the search has run a moment
  try {
    const view = await api("POST", "/api/views/search", await searchRequest(), progress.update);
    state.lastSearch = view;
    refusal($("search-form"));
    $("search-table").hidden = view.rows.length === 0;  // nothing meets every target: the reasons below say why
    $("search-infeasible-box").hidden = view.infeasible.length === 0;
    $("search-summary").textContent = view.summary;
    // nothing found: its one cause when one explains it, and the searches to run next
    $("search-answer").hidden = view.headline === "";
    $("search-headline").textContent = view.headline;
    $("search-next").replaceChildren(...view.next_steps.map((text) => { const li = document.createElement("li"); li.textContent = text; return li; }));
    $("search-notes").replaceChildren(...view.notes.map((text) => { const li = document.createElement("li"); li.textContent = text; return li; }));
    $("search-table").tBodies[0].replaceChildren(...view.rows.map((row) => {
      const tr = document.createElement("tr");
      for (const text of [String(row.rank), row.deployment, row.cost, row.latency]) {
        const td = document.createElement("td"); td.textContent = text; tr.append(td);
      }
      if (row.notes.length) tr.cells[1].append(pickNotes(row));
      const act = document.createElement("td");
      const use = document.createElement("button");
      use.type = "button"; use.textContent = "Use this"; use.setAttribute("aria-label", `Use deployment ${row.rank}`);
      use.onclick = () => useThis(row.scenario);
      const cmd = document.createElement("div");
      cmd.className = "command"; showCommand(cmd, row.deploy);
      act.append(use, cmd);
      tr.append(act);
      return tr;
    }));
    $("search-api").replaceChildren(...view.api.map((text) => { const li = document.createElement("li"); li.textContent = text; return li; }));
    $("search-infeasible").replaceChildren(...view.infeasible.map((text) => {
      const li = document.createElement("li"); li.textContent = text; return li;
    }));
    // cheaper deployments that miss a target by little, each with the relaxed target that admits it
    $("search-near-box").hidden = view.near_misses.length === 0;
    $("search-near-title").textContent = view.near_misses_title;
    $("search-near").replaceChildren(...view.near_misses.map((text) => {
      const li = document.createElement("li"); li.textContent = text; return li;
    }));
    $("search-infeasible-box").open = view.rows.length === 0;
    clearFigure($("chart-search"));
    if (view.chart) await drawChart("search", view.chart);
    $("search-status").textContent = view.rows.length ? `${view.rows.length} deployments` : "nothing meets every target";
    document.body.dataset.searched = String(Date.now());
  } catch (err) {
    $("search-status").textContent = "";
    clearSearchAnswer();
    $("search-error").textContent = refusal($("search-form"), err);
    $("search-error").hidden = false;
    const refused = $("search-form").querySelector("[aria-invalid]");  // an advanced setting refused: shown
    if (refused && refused.closest("details")) refused.closest("details").open = true;
    if (refused) refused.focus();  // keyboard focus to the control to mend, as "Use this" does
    document.body.dataset.searched = String(Date.now());
  } finally {
    progress.end();
    $("search-run").disabled = false;
    $("search-form").removeAttribute("aria-busy");
    // the button pressed was disabled while the search ran, which drops its focus to the page's top:
    // given back, so Tab goes on from the search form
    if (document.activeElement === document.body) $("search-run").focus();
  }
}

// "What runs on my GPUs?": the server lists every catalogue model on the GPUs asked about, worded
// (report/homelab_view.py); the page only shows the rows.
async function runHomelab(event) {
  event.preventDefault();
  $("homelab-error").hidden = true;
  // the best way for each model runs every model on each engine the GPU takes, and no figure of its progress
  // comes back: the words say what is being done and that it can take a while, the chosen engine once
  const engine = $("homelab-engine");
  $("homelab-status").textContent = engine.value
    ? `computing every model on ${engine.selectedOptions[0].textContent}…`
    : "computing every model on each engine this GPU runs, to keep the best for each: this can take a while…";
  $("homelab-form").setAttribute("aria-busy", "true");
  const request = { gpu: sizedId($("homelab-memory"), $("homelab-gpu").value), gpus: Number($("homelab-gpus").value || 1) };
  if ($("homelab-engine").value) request.engine = $("homelab-engine").value;
  if ($("homelab-quantization").value) request.quantization = $("homelab-quantization").value;
  if ($("homelab-all-models").value) request.all_models = true;
  if ($("homelab-host-memory").value) request.host_memory_gb = Number($("homelab-host-memory").value);
  try {
    const view = await api("POST", "/api/views/homelab", request);
    $("homelab-summary").textContent = view.summary;
    showSize($("homelab-size"), request.gpu);  // the memory size this answer was computed at
    $("homelab-table").tBodies[0].replaceChildren(...view.rows.map((row) => {
      const tr = document.createElement("tr");
      if (!row.fits) tr.className = "no";
      const heads = [...$("homelab-table").tHead.rows[0].cells].map((th) => th.textContent);
      [row.model, row.quantization, row.verdict, row.context, row.at_once, row.ttft, row.speed, row.offload, row.engine].forEach((text, i) => {
        const td = document.createElement("td"); td.textContent = text; td.dataset.label = heads[i]; tr.append(td);
      });  // the column's name on each cell: a phone shows a row as a block, without the header row
      const command = document.createElement("td");
      command.className = "command"; command.dataset.label = heads.at(-1);
      showCommand(command, row.command);  // wrapped between its arguments only, as every launch command
      tr.append(command);
      return tr;
    }));
    $("homelab-table").hidden = false;
    $("homelab-status").textContent = "";
    refusal($("homelab-form"));
  } catch (err) {
    $("homelab-status").textContent = $("homelab-size").textContent = "";
    $("homelab-error").textContent = refusal($("homelab-form"), err);
    $("homelab-error").hidden = false;
  }
  $("homelab-form").removeAttribute("aria-busy");
  document.body.dataset.homelab = String(Date.now());
}
