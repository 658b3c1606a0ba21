// A search's progress bar (loaded after app.js). Asked for as NDJSON (docs/api.md), the search routes
// send a line {"progress": {done, total, stage}} as the search goes, then the answer or the error body
// a plain reply carries; `api` (app.js) hands each progress line to its onProgress and returns the last
// line. The bar shows the server's figures as they come: no sums here.
"use strict";

const NDJSON = "application/x-ndjson";
// a search that answers within this shows no bar; a test of the bar sets it to 0
const SEARCH_PROGRESS = { shownAfterMs: 1000 };

// The stream's lines: each progress line to onProgress; the last line returned (the answer or an error body).
async function streamed(response, onProgress) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let pending = "", last = null;
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    const lines = (pending + chunk.value).split("\n");
    pending = lines.pop();  // a line not yet ended: the next chunk continues it
    for (const line of lines.filter((l) => l.trim() !== "")) {
      last = JSON.parse(line);
      if (Object.keys(last).length === 1 && last.progress) onProgress(last.progress);
    }
  }
  if (pending.trim() !== "") last = JSON.parse(pending);
  if (last === null || (Object.keys(last).length === 1 && last.progress)) {
    throw new Error("the server's reply ended before its answer: try the search again");
  }
  return last;
}

// The bar under the Find the cheapest button: hidden until the search has run SEARCH_PROGRESS.shownAfterMs,
// then the stage the server names and its done/total; `end` hides it (the answer or the error is in).
function searchProgress() {
  const box = $("search-progress-box"), bar = $("search-progress"), label = $("search-progress-label");
  bar.removeAttribute("value");  // no figures yet: the bar is indeterminate
  label.textContent = "Search progress";
  const timer = setTimeout(() => { box.hidden = false; }, SEARCH_PROGRESS.shownAfterMs);
  return {
    update(progress) {
      if (progress.total > 0) {
        bar.max = progress.total;
        bar.value = progress.done;
      }
      label.textContent = `Search progress: ${progress.stage}`;
    },
    end() {
      clearTimeout(timer);
      box.hidden = true;
    },
  };
}
