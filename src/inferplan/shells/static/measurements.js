// "Your measurements": upload a benchmark result file, list the stored runs with the planner's
// error on each, and draw the library's predicted-vs-measured chart. The API does every sum.
"use strict";

const MEASUREMENT_LABELS = { ttft_s: "TTFT", tpot_s: "TPOT", output_tokens_per_s_total: "output tok/s",
  prefill_tokens_per_s: "prompt tok/s" };
const TAIL_LABELS = { ttft_p50_s: "TTFT p50", ttft_p99_s: "TTFT p99", tpot_p50_s: "TPOT p50", tpot_p99_s: "TPOT p99" };

function measurementRow(comparison) {
  const r = comparison.run;
  const li = document.createElement("li");
  const errors = Object.entries(comparison.median_abs_error)
    .map(([k, v]) => `${MEASUREMENT_LABELS[k] || k} ${(v * 100).toFixed(1)}%`).join(", ");
  const tails = comparison.tail_median_abs_error
    .map((t) => `${TAIL_LABELS[t.metric] || t.metric} ${(t.approximation_abs_error * 100).toFixed(0)}% / `
      + `${(t.simulation_abs_error * 100).toFixed(0)}%`).join(", ");
  li.textContent = `#${r.id} ${r.measured_on}: ${r.model} on ${r.gpus}× ${r.accelerator}, ${r.engine} ${r.engine_version}, `
    + `${r.points.length} points (${r.format}: ${r.file}) — median |error| ${errors || "—"}`
    + (tails ? `; under load (approximation / simulation) ${tails} ` : " ");
  const del = document.createElement("button");
  del.type = "button";
  del.textContent = "Delete";
  del.addEventListener("click", async () => {
    await api("DELETE", `/api/measurements/${r.id}`);
    await refreshMeasurements();
  });
  li.append(del);
  return li;
}

async function refreshMeasurements() {
  const view = await api("GET", "/api/measurements/view");
  $("measurement-list").replaceChildren(...view.runs.map(measurementRow));
  const chart = $("chart-measured");
  chart.replaceChildren();
  if (view.runs.length) await vegaEmbed(chart, view.chart, { actions: false, renderer: "svg" });
}

async function uploadMeasurement(event) {
  event.preventDefault();
  const file = $("measurement-file").files[0];
  $("measurement-status").textContent = "";
  if (!file) return;
  const provenance = { model: $("measurement-model").value, gpu: $("measurement-gpu").value,
    engine: $("measurement-engine").value, tensor_parallel_size: Number($("measurement-tp").value) || 1 };
  for (const [key, id] of [["engine_version", "measurement-version"], ["format", "measurement-format"]]) {
    if ($(id).value) provenance[key] = $(id).value;
  }
  try {
    const runs = await api("POST", "/api/measurements", { files: [{ name: file.name, content: await file.text() }], provenance });
    $("measurement-status").textContent = `imported run ${runs.map((r) => r.id).join(", ")}`;
    await refreshMeasurements();
  } catch (error) {
    $("measurement-status").textContent = `refused: ${error.message}`;
  }
}

window.addEventListener("DOMContentLoaded", () => {
  $("measurement-form").addEventListener("submit", uploadMeasurement);
  refreshMeasurements().catch((error) => { $("measurement-status").textContent = error.message; });
});
