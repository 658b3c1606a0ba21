// The simulator's form and the scenario it describes (loaded after app.js, whose helpers it uses): the
// controls become a scenario, a loaded scenario fills the controls and keeps what they cannot show, and the
// share link carries it. The server plans it; nothing is computed here.
"use strict";

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

// The first number field of `form` holding what the browser cannot read as a number ("1e", "--"): its
// value reads as blank, which would plan the field's default without a word. Returned as a refusal
// naming the field and what it takes (refusal() in app.js marks it), or null when every field reads.
function unreadNumber(form) {
  const el = [...form.querySelectorAll("input[type=number]")].find((x) => !x.hidden && x.validity.badInput);
  if (!el) return null;
  const bounds = [el.min !== "" && `at least ${el.min}`, el.max !== "" && `at most ${el.max}`].filter(Boolean);
  const allowed = `${el.step === "1" ? "a whole number" : "a number"}${bounds.length ? " " + bounds.join(" and ") : ""}, or blank for the default`;
  const detail = `not a number (allowed: ${allowed})`;
  return { field: el.dataset.field, detail, message: `${el.id}: ${detail}` };
}
