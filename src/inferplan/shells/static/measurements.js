// "Your measurements": upload a benchmark result file, list the stored runs with the planner's
// error on each (worded by the server: report/measured_chart.run_text), and draw the library's
// predicted-vs-measured chart. The API does every sum.
"use strict";

function measurementRow(comparison, text) {
  const r = comparison.run;
  const li = document.createElement("li");
  li.textContent = `${text} `;
  const del = document.createElement("button");
  del.type = "button";
  del.textContent = "Delete";
  del.setAttribute("aria-label", `Delete run ${r.id}`);
  del.addEventListener("click", async () => {
    try { await api("DELETE", `/api/measurements/${r.id}`); } catch (error) { showMeasurementError(error); }
    await refreshMeasurements();
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
  $("measurement-status").textContent = "importing…";
  try {
    const runs = await api("POST", "/api/measurements", { files: [{ name: file.name, content: await file.text() }], provenance });
    $("measurement-status").textContent = `imported run ${runs.map((r) => r.id).join(", ")}`;
    await refreshMeasurements();
  } catch (error) {
    $("measurement-status").textContent = "";
    showMeasurementError(error);
  }
}

window.addEventListener("DOMContentLoaded", () => {
  $("measurement-form").addEventListener("submit", uploadMeasurement);
  refreshMeasurements().catch((error) => { $("measurement-status").textContent = error.message; });
});
