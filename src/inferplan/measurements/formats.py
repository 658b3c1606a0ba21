"""Benchmark clients' result files → measured points (SI units), one parser per format.

Every parser is strict: a file that is not the format, or lacks a figure the point needs, is
refused with an ``InvalidScenarioError`` whose ``field`` is the key or line at fault. Formats and
their keys (docs/measurements.md has the sources):

- ``vllm``: ``vllm bench serve --save-result`` JSON (``max_concurrency`` — without one, the mean in
  flight or every request at once, ``serving_formats._concurrency`` — ``completed``,
  ``total_input_tokens``, ``total_output_tokens``, ``mean_ttft_ms``, ``mean_tpot_ms``,
  ``output_throughput``, ``request_throughput``; percentiles ``median_ttft_ms``, ``p99_ttft_ms``,
  ``median_tpot_ms``, ``p99_tpot_ms`` and the offered load ``request_rate``, ``num_prompts``; the acceptance the
  server measured, ``spec_decode_acceptance_length``, ``spec_decode_draft_tokens``, ``spec_decode_num_drafts``; the
  requests that failed, ``failed``).
- ``sglang``: ``python -m sglang.bench_serving --output-file`` JSONL, one run a line (same keys, ``server_info``,
  and ``concurrency``, its mean requests in flight; ``accept_length``, the server's acceptance length; no count of
  failed requests, but with ``--output-details`` ``errors``, one per request sent).
- ``llama-bench``: ``llama-bench -o json|jsonl|csv|md`` (``n_prompt``, ``n_gen``, ``avg_ts``; md: the
  ``test`` and ``t/s`` columns and the ``build:`` line under the table; the launch settings every row records,
  ``LLAMA_LAUNCH_KEYS``, alike in all rows, among them ``split_mode``, the md table's ``sm`` column; one model in all rows).
- ``genai-perf``: ``profile_export_genai_perf.json`` of genai-perf or AIPerf (``time_to_first_token``,
  ``inter_token_latency``, ``output_token_throughput``, ``request_throughput``, each ``{unit, avg,
  p50, p99}``: the mean and the percentiles; lengths from ``input_sequence_length``/``output_sequence_length``;
  AIPerf's ``error_request_count``, the requests that failed).
- ``guidellm``: ``guidellm benchmark --output-path report.json`` (``benchmarks[].metrics``, TPOT from
  ``inter_token_latency_ms``: ``mean``,
  ``median``, ``percentiles.p99``; ``request_totals``: ``errored`` and ``incomplete`` requests failed).
- ``csv``: the documented CSV (``CSV_COLUMNS``; ``failed_requests``, the requests of a level that failed).
"""

from __future__ import annotations

import csv
import io
import re
from typing import Callable

from inferplan.errors import InvalidScenarioError
from inferplan.input_codecs import uncompressed_name
from inferplan.measurements.genai_perf_format import parse_genai_perf
from inferplan.measurements.guidellm_format import parse_guidellm
from inferplan.measurements.result_fields import (MAX_POINTS, Parsed, bad_field, from_ms, iso_date, json_documents, json_lines, measured_point,
                                                  read_count, read_json, read_number, text_of)
from inferplan.measurements.serving_formats import parse_sglang, parse_vllm
from inferplan.performance.run_record import MeasuredPoint

FORMATS = ("vllm", "sglang", "llama-bench", "genai-perf", "guidellm", "csv")
CSV_COLUMNS = ("concurrency", "input_tokens", "output_tokens", "ttft_ms", "tpot_ms", "output_tokens_per_s", "requests_per_s")
CSV_REQUIRED = ("concurrency", "input_tokens", "output_tokens")
# optional columns: percentiles (ms) and the offered load (request rate, empty for no limit; requests in the run)
CSV_TAILS = {"ttft_p50_s": "ttft_p50_ms", "ttft_p99_s": "ttft_p99_ms", "tpot_p50_s": "tpot_p50_ms", "tpot_p99_s": "tpot_p99_ms"}
# and the requests of the level that failed (its figures being over the ones that completed)
CSV_COLUMNS += (*CSV_TAILS.values(), "request_rate_per_s", "requests", "failed_requests")
# the columns that measure something (a row needs one); the point's field -> its column, to name a bad figure
CSV_FIGURES = tuple(c for c in CSV_COLUMNS if c not in (*CSV_REQUIRED, "request_rate_per_s", "requests", "failed_requests"))
CSV_KEYS = {"ttft_s": "ttft_ms", "tpot_s": "tpot_ms", "output_tokens_per_s_total": "output_tokens_per_s", **CSV_TAILS}
# the formats whose clients state each point's load level (guidellm's rate strategies give a mean in flight, which
# two rates may round alike): two points of one file at one level are refused (``_one_point_per_level``)
ONE_POINT_PER_LEVEL = ("csv", "sglang", "llama-bench", "vllm")


# what a guidellm report writes before its benchmarks: guidellm 0.4.0 its ``args``, starting with the ``target``
# (GenerativeBenchmarksReport, benchmark/schemas/generative/report.py); later releases ``metadata.guidellm_version``
_GUIDELLM_ARGS = re.compile(r'\{\s*"args"\s*:\s*\{\s*"target"\s*:')
_LLAMA_TEST = re.compile(r"^(pp|tg)(\d+)(?: @ d(\d+))?$")
_MD_BUILD = re.compile(r"^build: ([0-9a-f]+) \((\d+)\)\s*$", re.MULTILINE)


def _llama_row(row: dict, where: str) -> MeasuredPoint:
    n_prompt = int(read_number(row, "n_prompt", "llama-bench", where))
    n_gen = int(read_number(row, "n_gen", "llama-bench", where))
    rate = read_number(row, "avg_ts", "llama-bench", where)
    if read_number(row, "n_depth", "llama-bench", where, required=False):  # -d N: the KV cache prefilled first
        raise _at_depth(f"{where}n_depth", row["n_depth"])
    if not rate:
        raise bad_field(f"{where}avg_ts", "zero tokens/s", "llama-bench")
    if n_gen == 0 and n_prompt:  # a prompt-processing test (pp512)
        return measured_point(where, "llama-bench", concurrency=1, input_tokens=n_prompt, output_tokens=0, prefill_tokens_per_s=rate)
    if n_prompt == 0 and n_gen:  # a generation test (tg128): one stream's tokens/s
        return measured_point(where, "llama-bench", concurrency=1, input_tokens=0, output_tokens=n_gen, tpot_s=1 / rate,
                              output_tokens_per_s_total=rate)
    raise bad_field(f"{where}n_prompt", "a combined pp+tg test is not read; run pp and tg tests apart (-p N -n M)", "llama-bench")


# the launch settings a llama-bench row records (JSON/CSV keys; the markdown table's column where it shows one): a
# file's rows must agree on them, since rows that differ are several launches, not one run (``_llama_launch``)
LLAMA_LAUNCH_KEYS = ("n_gpu_layers", "n_cpu_moe", "n_batch", "n_ubatch", "type_k", "type_v", "flash_attn", "no_kv_offload",
                     "split_mode")
_LLAMA_MD_COLUMNS = {"ngl": "n_gpu_layers", "n_cpu_moe": "n_cpu_moe", "n_batch": "n_batch", "n_ubatch": "n_ubatch",
                     "type_k": "type_k", "type_v": "type_v", "fa": "flash_attn", "nkvo": "no_kv_offload", "sm": "split_mode"}


def _llama_launch(rows: list[dict], wheres: list[str]) -> dict[str, str]:
    """The launch settings every row records alike (``LLAMA_LAUNCH_KEYS``, as text), each with its key as
    ``<key>_field``; rows that record one otherwise are refused naming the key: a sweep (-ngl 10,99) is one run per
    value, so one file per value."""
    found: dict[str, str] = {}
    for key in LLAMA_LAUNCH_KEYS:
        values = [(str(r[key]).strip().lower(), where) for r, where in zip(rows, wheres) if r.get(key) not in (None, "")]
        if not values:
            continue
        first = values[0][0]
        other = next(((v, where) for v, where in values if v != first), None)
        if other is not None:
            raise bad_field(f"{other[1]}{key}", f"{key} {other[0]!r} here, {first!r} in the first row: the rows are "
                            "runs of several launches; import one file per launch (one value of each setting)", "llama-bench")
        found |= {key: first, f"{key}_field": key}
    return found


def _one_model(rows: list[dict], wheres: list[str], keys: tuple[str, ...] = ("model_filename", "model_type")) -> None:
    """The rows of one file test one model: a row naming another (``llama-bench -m a.gguf -m b.gguf``) is refused
    naming it, where its tests would be filed under the first row's model."""
    for key in keys:
        named = [(text_of(r.get(key)), where) for r, where in zip(rows, wheres) if text_of(r.get(key))]
        other = next(((m, where) for m, where in named if m != named[0][0]), None)
        if other is not None:
            raise bad_field(f"{other[1]}{key}", f"{other[0]!r} here, {named[0][0]!r} in the first row: the rows test "
                            "several models; import one file per model", "llama-bench")


def _at_depth(where: str, depth: object) -> InvalidScenarioError:
    return bad_field(where, f"a test at a prefilled context depth ({depth} tokens, llama-bench -d) is not read as a "
                     "request's figures; import the tests at depth 0 (-d 0) in a file of their own", "llama-bench")


def parse_llama_bench(text: str) -> Parsed:
    stripped = text.lstrip()
    if stripped.startswith("["):
        rows = read_json(text, "llama-bench")
        if not isinstance(rows, list) or not rows:
            raise bad_field("line 1", "expected a non-empty list of tests", "llama-bench")
        points = [_llama_row(r if isinstance(r, dict) else {}, f"[{i}].") for i, r in enumerate(rows)]
        first = rows[0] if isinstance(rows[0], dict) else {}
        wheres = [f"[{i}]." for i in range(len(rows))]
    elif stripped.startswith("{"):  # -o jsonl: a test's JSON object a line
        rows, wheres = _jsonl_rows(text)
        points = [_llama_row(r, where) for r, where in zip(rows, wheres)]
        first = rows[0]
    elif stripped.startswith("|"):
        return _llama_markdown(text)
    else:
        rows = list(csv.DictReader(io.StringIO(text)))
        if not rows or "avg_ts" not in rows[0]:
            raise bad_field("line 1", "expected llama-bench -o json, jsonl, csv or md output", "llama-bench")
        points = [_llama_row(r, f"line {i + 2}: ") for i, r in enumerate(rows)]
        first = rows[0]
        wheres = [f"line {i + 2}: " for i in range(len(rows))]
    launch = _llama_launch([r if isinstance(r, dict) else {} for r in rows], wheres)
    _one_model([r if isinstance(r, dict) else {} for r in rows], wheres)
    return Parsed(points, places=wheres, engine="llamacpp", **_llama_model(first), engine_version=_build(first),
                  date=iso_date(first.get("test_time")), **launch)


def _jsonl_rows(text: str) -> tuple[list[dict], list[str]]:
    """llama-bench ``-o jsonl``'s tests, each with its line: a JSON object a line, blank lines passed over."""
    what = "llama-bench -o jsonl: one test per line"
    lines = list(json_lines(text, "llama-bench", what))
    bad = next((n for n, row in lines if not isinstance(row, dict)), None)
    if bad is not None:
        raise bad_field(f"line {bad}", f"not a JSON object ({what})", "llama-bench")
    return [row for _, row in lines], [f"line {n}: " for n, _ in lines]


def _llama_model(row: dict) -> dict[str, str | None]:
    """The model llama-bench names (its GGUF file's name, else its ``model_type``) and the file type
    ``model_type`` ends with ("qwen3moe 30B.A3B Q4_K - Medium": architecture, size, type)."""
    model_type = text_of(row.get("model_type"))
    words = model_type.split(" ", 2) if model_type else []
    stated = {"quantization": words[2], "quantization_field": "model_type"} if len(words) == 3 else {}
    if text_of(row.get("model_filename")):
        return {"model": text_of(row.get("model_filename")), "model_field": "model_filename", **stated}
    if len(words) >= 2:  # "qwen3moe 30B.A3B": the architecture without its MoE suffix, then the size
        arch = words[0].lower().removesuffix("moe")
        return {"model": f"{arch}-{words[1].lower().replace('.', '-')}", "model_field": "model_type", **stated}
    return {"model": model_type, "model_field": "model_type", **stated}


def _llama_markdown(text: str) -> Parsed:
    lines = [line for line in text.splitlines() if line.strip().startswith("|")]
    header = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    if "test" not in header or "t/s" not in header:
        raise bad_field("line 1", "the table has no 'test' and 't/s' columns", "llama-bench")
    points, model, launches, wheres = [], None, [], []
    for n, line in enumerate(lines[2:], 3):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(header):
            raise bad_field(f"line {n}", f"{len(cells)} cells, the header has {len(header)}", "llama-bench")
        row = dict(zip(header, cells))
        m = _LLAMA_TEST.match(row["test"])
        if not m:
            raise bad_field(f"line {n}: test", f"{row['test']!r} is not ppN or tgN", "llama-bench")
        kind, tokens = m.group(1), m.group(2)
        rate = row["t/s"].split("±")[0]
        if int(m.group(3) or 0):
            raise _at_depth(f"line {n}: test", m.group(3))
        fields = {"n_prompt": tokens if kind == "pp" else 0, "n_gen": tokens if kind == "tg" else 0, "avg_ts": rate}
        points.append(_llama_row(fields, f"line {n}: "))
        model = model or row.get("model")
        launches.append({key: row[column] for column, key in _LLAMA_MD_COLUMNS.items() if column in row})
        wheres.append(f"line {n}: ")
    if not points:
        raise bad_field("line 3", "no test rows", "llama-bench")
    _one_model([{"model": line.strip().strip("|").split("|")[header.index("model")].strip()} if "model" in header else {}
                for line in lines[2:]], wheres, ("model",))
    build = _MD_BUILD.search(text)  # the line llama-bench prints under its table: "build: 5210b8c2 (5210)"
    version = _build({"build_commit": build.group(1), "build_number": build.group(2)}) if build else None
    return Parsed(points, places=wheres, engine="llamacpp", **_llama_model({"model_type": model}), engine_version=version,
                  **_llama_launch(launches, wheres))


def parse_csv(text: str) -> Parsed:
    # newline="": the csv module splits the lines itself, so a file ending its lines in '\r' alone reads too
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        return _csv_points(reader)
    except csv.Error as exc:  # a field past the module's size limit, ...: the line being read is the next one
        raise bad_field(f"line {reader.line_num + 1}", f"not readable as CSV ({exc})", "csv") from None


def _csv_points(reader: csv.DictReader) -> Parsed:
    missing = [c for c in CSV_REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise bad_field("line 1", f"the header lacks {', '.join(missing)} (columns: {', '.join(CSV_COLUMNS)})", "csv")
    unknown = [c for c in reader.fieldnames or [] if c not in CSV_COLUMNS]
    if unknown:
        raise bad_field("line 1", f"unknown columns {', '.join(map(repr, unknown))} (columns: {', '.join(CSV_COLUMNS)})", "csv")
    twice = sorted({c for c in reader.fieldnames if reader.fieldnames.count(c) > 1})
    if twice:  # csv.DictReader keeps the last cell of a repeated column: one of two figures would be dropped
        raise bad_field("line 1", f"columns named twice: {', '.join(map(repr, twice))} (one column per figure)", "csv")
    points, places = [], []
    for row in reader:
        n = reader.line_num  # the row's own line: blank lines are skipped, not rows
        if None in row or any(v is None for v in row.values()):
            raise bad_field(f"line {n}", "a row has a different number of cells from the header", "csv")
        where = f"line {n}: "
        places.append(where)
        value = lambda key: _csv_figure(row, key, where)  # noqa: E731
        if not any(row.get(c, "").strip() for c in CSV_FIGURES):
            raise bad_field(f"line {n}", f"no measured figure (give at least one of {', '.join(CSV_FIGURES)})", "csv")
        points.append(measured_point(where, "csv", CSV_KEYS, concurrency=read_count(row, "concurrency", "csv", where),
                                     input_tokens=read_count(row, "input_tokens", "csv", where),
                                     output_tokens=read_count(row, "output_tokens", "csv", where), ttft_s=from_ms(value("ttft_ms")),
                                     tpot_s=from_ms(value("tpot_ms")), output_tokens_per_s_total=value("output_tokens_per_s"),
                                     requests_per_s=value("requests_per_s"), request_rate_per_s=value("request_rate_per_s"),
                                     requests=read_count(row, "requests", "csv", where, required=False),
                                     failed_requests=read_count(row, "failed_requests", "csv", where, required=False),
                                     **{field: from_ms(value(column)) for field, column in CSV_TAILS.items()}))
    if not points:
        raise bad_field("line 2", "no rows", "csv")
    return Parsed(points, places=places)


def _csv_figure(row: dict, key: str, where: str) -> float | None:
    """A CSV cell's figure; an empty cell is none. A 0 is refused rather than read as none (a request rate of 0 would
    be taken for no rate limit), and so is an unlimited rate written out, which the CSV writes as an empty cell."""
    cell = str(row.get(key) or "").strip()
    if key == "request_rate_per_s" and cell.lower().lstrip("+") in ("inf", "infinity"):
        raise bad_field(f"{where}{key}", f"{cell!r}: write no rate limit as an empty cell", "csv")
    figure = read_number(row, key, "csv", where, required=False)
    if figure == 0:
        raise bad_field(f"{where}{key}", f"{cell!r} is no measured figure: leave the cell empty where nothing was "
                        "measured" + (" (for no rate limit too)" if key == "request_rate_per_s" else ""), "csv")
    return figure


PARSERS: dict[str, Callable[[str], Parsed]] = {
    "vllm": parse_vllm, "sglang": parse_sglang, "llama-bench": parse_llama_bench,
    "genai-perf": parse_genai_perf, "guidellm": parse_guidellm, "csv": parse_csv,
}


# keys SGLang's bench_serving result writes and vLLM's does not (vLLM: ``mean_e2el_ms``; python/sglang/bench_serving.py)
# and ``sharegpt_output_len``, among the arguments it writes before the server's ``server_info``, whose dump of the
# server's arguments can push the figures past the first bytes
SGLANG_ONLY_KEYS = ("total_output_tokens_retokenized", "mean_e2e_latency_ms", "sharegpt_output_len")
# keys vLLM's result writes first and SGLang's does not (vllm/benchmarks/serve.py: ``endpoint_type``, ``tokenizer_id``)
VLLM_ONLY_KEYS = ("endpoint_type", "tokenizer_id")


def guess_format(name: str, text: str) -> str:
    """The format a file is in, from its name and first bytes (``--format`` says it outright); a compression's
    ending (``.gz``, ``.xz`` …) is passed over, its text being the decompressed file's."""
    lower, head = uncompressed_name(name).lower(), text.lstrip()[:4000]
    if not head:
        raise InvalidScenarioError(f"{name}: the file is empty (nothing but white space)", field="file",
                                   allowed=f"a result file of one of: {', '.join(FORMATS)}")
    if '"n_prompt"' in head or "avg_ts" in head or head.startswith("| model"):
        return "llama-bench"  # before the .jsonl ending: llama-bench -o jsonl writes one too
    if head.startswith("{") and any(f'"{key}"' in head for key in VLLM_ONLY_KEYS):
        return "vllm"  # before the .jsonl ending: an --append-result file may be named so
    if lower.endswith(".jsonl"):
        return "sglang"
    if "genai_perf" in lower or "aiperf" in lower or '"time_to_first_token"' in head:
        return "genai-perf"
    if '"benchmarks"' in head or '"guidellm_version"' in head or _GUIDELLM_ARGS.match(head):
        return "guidellm"  # the run's settings can push the benchmarks past the first bytes (``_GUIDELLM_ARGS``)
    if head.startswith("{") and any(f'"{key}"' in head for key in SGLANG_ONLY_KEYS):
        return "sglang"  # whatever the file is named: a .json SGLang file would pass for a vLLM run
    if head.startswith("{") and ('"mean_ttft_ms"' in head or '"output_throughput"' in head):
        return "vllm"
    if lower.endswith(".csv"):
        return "csv"
    if head.startswith(("{", "[")):  # a file that reads as JSON but does not parse is said to be so, not unknown
        try:
            json_documents(text, "json")
        except InvalidScenarioError as exc:
            raise InvalidScenarioError(f"{name}: {exc}", field=exc.field, allowed="valid JSON") from None
    if head.startswith("["):  # a list of results joined by hand, or of tests another tool wrote
        raise InvalidScenarioError(f"{name}: a JSON list that is not llama-bench -o json's tests (n_prompt, n_gen, avg_ts); "
                                   "the other clients write one result object, so import each result as a file of its "
                                   "own", field="format", allowed=", ".join(FORMATS))
    raise InvalidScenarioError(f"{name}: cannot tell which client wrote it", field="format", allowed=", ".join(FORMATS))


def parse(text: str, fmt: str) -> Parsed:
    if fmt not in PARSERS:
        raise InvalidScenarioError(f"unknown format {fmt!r}", field="format", allowed=", ".join(FORMATS))
    parsed = PARSERS[fmt](text)
    if len(parsed.points) > MAX_POINTS:
        raise bad_field("points", f"more than {MAX_POINTS:,} points", fmt)
    if fmt in ONE_POINT_PER_LEVEL:
        _one_point_per_level(parsed, fmt)
    return parsed


def _one_point_per_level(parsed: Parsed, fmt: str) -> None:
    """Two points of one file at the same load level (an SGLang file a rerun appended to, a llama-bench thread sweep)
    would be one figure kept and the other dropped unread wherever the run is planned on: refused naming both."""
    seen: dict[tuple, int] = {}
    for i, p in enumerate(parsed.points):
        level = (p.concurrency, p.input_tokens, p.output_tokens, p.request_rate_per_s)
        if level in seen:
            rate = f", {p.request_rate_per_s:g} requests/s" if p.request_rate_per_s else ""
            raise bad_field(parsed.places[i], f"measures the load level of {parsed.places[seen[level]]} again (concurrency "
                            f"{p.concurrency}, {p.input_tokens}/{p.output_tokens} tokens{rate}): one point per load level; "
                            "import each run of it in a file and an import of its own (the later import is the newer run)",
                            fmt)
        seen[level] = i


def _build(row: dict) -> str | None:
    commit, number = text_of(row.get("build_commit")), row.get("build_number")
    return f"b{number} ({commit})" if number and commit else (f"b{number}" if number else commit)
