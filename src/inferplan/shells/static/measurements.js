// "Your measurements": upload a benchmark result file with the deployment it measured (its engine
// settings, host RAM and speculative decoding too; the choices are the API's: /api/measurements/choices),
// list the stored runs with the planner's error on each (worded by the server: report/measured_chart.run_text),
// and draw the library's predicted-vs-measured chart. The API does every sum.
"use strict";

function measurementRow(comparison, text) {
  const r = comparison.run;
  const li = document.createElement("li");
  li.textContent = `${text} `;
  const del = document.createElement("button");
  del.type = "button";
  del.textContent = "Delete";
  del.setAttribute("aria-label", `Delete run ${r.id}`);
  // the list is read again whether or not the delete went through; a refusal of either shows next to the form
  del.addEventListener("click", async () => {
    let refused = null;
    try { await api("DELETE", `/api/measurements/${r.id}`); } catch (error) { refused = error; }
    try { await refreshMeasurements(); } catch (error) { refused = refused || error; }
    showMeasurementError(refused);
  });
  li.append(del);
  return li;
}

async function refreshMeasurements() {
  const view = await api("GET", "/api/measurements/view");
  $("measurement-list").replaceChildren(...view.runs.map((run, i) => measurementRow(run, view.texts[i])));
  const chart = $("chart-measured");
  chart.replaceChildren();
  if (view.runs.length) await vegaEmbed(chart, view.chart, { actions: false, renderer: "svg" });
}

// a refusal shows as an error next to the form, naming (and marking) the control it is about
function showMeasurementError(error) {
  $("measurement-error").textContent = error ? `refused: ${refusal($("measurement-form"), error)}` : refusal($("measurement-form"));
  $("measurement-error").hidden = !error;
}

async function uploadMeasurement(event) {
  event.preventDefault();
  const file = $("measurement-file").files[0];
  $("measurement-status").textContent = "";
  showMeasurementError(null);
  if (!file) return;
  const provenance = { model: $("measurement-model").value, gpu: $("measurement-gpu").value };
  for (const [key, id] of [["engine", "measurement-engine"], ["engine_version", "measurement-version"],
    ["format", "measurement-format"]]) {
    if ($(id).value) provenance[key] = $(id).value;
  }
  if ($("measurement-tp").value) provenance.tensor_parallel_size = Number($("measurement-tp").value);
  // the fields left blank are the engine's defaults: not sent
  for (const control of $("measurement-form").querySelectorAll("[data-provenance]")) {
    if (control.value === "") continue;
    provenance[control.dataset.provenance] = control.type === "number" ? Number(control.value) : control.value;
  }
  $("measurement-status").textContent = "importing…";
  try {
    // the file's text, or a compressed one's bytes (base64), which the server decompresses (fileSent)
    const held = await fileSent(file);
    const sent = { name: file.name, content: held.data, encoding: held.encoding };
    const runs = await api("POST", "/api/measurements", { files: [sent], provenance });
    $("measurement-status").textContent = `imported run ${runs.map((r) => r.id).join(", ")}`;
    await refreshMeasurements();
  } catch (error) {
    $("measurement-status").textContent = "";
    showMeasurementError(error);
  }
}

// a select's options after its blank first one (what the field is when left out)
function fillChoices(select, values) {
  const blank = select.options[0];
  const kept = select.value;
  select.replaceChildren(blank, ...values.map((v) => new Option(v, v)));
  if (values.includes(kept)) select.value = kept;
}

// the KV cache dtypes of the engine chosen ("": every one, the engine told from the file); "auto" is the blank option
function fillKvDtypes(choices) {
  const dtypes = choices.kv_cache_dtypes[$("measurement-engine").value] || choices.kv_cache_dtypes[""];
  fillChoices($("measurement-kv-cache-dtype"), dtypes.filter((d) => d !== "auto"));
}

async function loadMeasurementChoices() {
  const choices = await api("GET", "/api/measurements/choices");
  for (const select of $("measurement-form").querySelectorAll("select[data-choices]")) {
    if (select.dataset.choices !== "kv_cache_dtypes") fillChoices(select, choices[select.dataset.choices]);
  }
  fillKvDtypes(choices);
  $("measurement-engine").addEventListener("change", () => fillKvDtypes(choices));
}

window.addEventListener("DOMContentLoaded", () => {
  $("measurement-form").addEventListener("submit", uploadMeasurement);
  loadMeasurementChoices().catch((error) => { $("measurement-status").textContent = error.message; });
  refreshMeasurements().catch((error) => { $("measurement-status").textContent = error.message; });
});
