"""The user's own benchmark runs over HTTP: upload (POST /api/measurements), list, one run with the
planner's prediction beside each figure, delete, export, and the predicted-vs-measured chart.

An upload of up to 16 MiB is read as JSON and validated in the route threadpool (``import_measurements``),
not by FastAPI in the event loop, where parsing and checking 13 MiB of text held every other request up for
0.5 s; it is not a long request (``api_work``): at most a second of one core, it need not wait behind searches.
"""

from __future__ import annotations

import json
import re

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool

from inferplan.catalog.loader import load_catalog
from inferplan.errors import ConflictError, InferplanError, InvalidScenarioError
from inferplan.input_files import COMPRESSED_BYTES, SENT_AS, SentAs, bytes_of_base64
from inferplan.inputs import Input
from inferplan.measurements.choices import UploadChoices, upload_choices
from inferplan.measurements.compare import RunComparison, compare_run, compare_runs
from inferplan.measurements.export import run_as_catalogue
from inferplan.measurements.records import MAX_FILES, MeasuredRun, RunProvenance, read_runs
from inferplan.report.measured_chart import predicted_vs_measured, run_text
from inferplan.shells.api_guard import RUNS_RESPONSE, ItemId
from inferplan.shells.api_work import LONG_RESPONSES, long_json

router = APIRouter(tags=["measurements"])
# One result file as text: a detailed `vllm bench serve --save-result` JSON of 1,000 prompts (per-request
# latencies and texts kept) runs to a few MB; the body (JSON-escaped files and provenance) is bounded
# on this route alone by MAX_UPLOAD_BYTES, every other route keeps api_guard.MAX_BODY_BYTES.
MAX_CONTENT_CHARS = 8_000_000
MAX_UPLOAD_BYTES = 16 * 2**20
UPLOAD_ROUTE = ("POST", "/api/measurements")


class ResultFile(Input):
    documents = frozenset({"content"})

    name: str = Field(min_length=1, max_length=200, description="the file's name (tells its format when none is given)")
    content: str = Field(max_length=MAX_CONTENT_CHARS, description=COMPRESSED_BYTES)
    encoding: SentAs = Field("text", description=SENT_AS)

    def data(self) -> bytes:
        """The file's bytes (``read_runs`` decompresses and decodes them)."""
        if self.encoding == "text":
            return self.content.encode()
        return bytes_of_base64(self.content, where=self.name, field="file", error=InvalidScenarioError)


class MeasurementImport(Input):
    files: list[ResultFile] = Field(min_length=1, max_length=MAX_FILES)
    provenance: RunProvenance = RunProvenance()


class MeasurementsView(BaseModel):
    runs: list[RunComparison]
    texts: list[str]  # each run as the page lists it (report/measured_chart.run_text)
    chart: dict  # Vega-Lite spec (report/measured_chart.py)


def _store(request: Request):
    return request.app.state.store


@router.get("/api/measurements", summary="Your imported benchmark runs")
def list_measurements(request: Request) -> list[MeasuredRun]:
    """Stored runs, newest first."""
    return _store(request).list_measurements()


_STORED = TypeAdapter(list[MeasuredRun])
UPLOAD_BODY = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/MeasurementImport"}}}}}  # the schema api.py adds to the components


@router.post("/api/measurements", summary="Import benchmark result files",
             status_code=201, response_model=list[MeasuredRun], responses=RUNS_RESPONSE,
             openapi_extra=UPLOAD_BODY)
async def import_measurements(request: Request) -> Response:
    """Import result files (the body is a ``MeasurementImport``): every file, or none (422 naming the key or
    line of the first refused; 409 when a file's run is stored already, or the store would hold more than its
    most runs). The body is parsed and checked, and the answer written, in the route threadpool, not in the
    event loop."""
    body = await request.body()  # read already (api_body.JsonBody): no wait here
    return await run_in_threadpool(_import, body, request)


import_measurements.body_model = MeasurementImport  # what its errors are explained by (api_keys.body_model)


def _import(body: bytes, request: Request) -> Response:
    stored = _STORED.dump_json(_stored(_upload(body), request))
    return Response(stored, status_code=201, media_type="application/json")


def _upload(body: bytes) -> MeasurementImport:
    """The body as FastAPI would have read it, with its errors as FastAPI raises them (located in ``body``)."""
    if not body.strip():
        raise RequestValidationError([{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}])
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise RequestValidationError([{"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error",
                                       "input": {}, "ctx": {"error": exc.msg}}]) from None
    try:
        return MeasurementImport.model_validate(data, from_attributes=True)  # as FastAPI validates a body
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]) from None


def upload_schemas() -> dict:
    """``MeasurementImport`` and the models in it, as OpenAPI components (``UPLOAD_BODY`` refers to them),
    written by FastAPI as it writes a body it reads itself."""
    probe = FastAPI()

    @probe.post("/")
    def upload(r: MeasurementImport) -> None:
        """Declared only for its body's schema."""

    schemas, names, todo = probe.openapi()["components"]["schemas"], set(), ["MeasurementImport"]
    while todo:  # the models the body refers to, not the probe's own error schemas
        name = todo.pop()
        if name not in names:
            names.add(name)
            todo += [ref.rsplit("/", 1)[1] for ref in re.findall(r'"#/components/schemas/[^"]+', json.dumps(schemas[name]))]
    return {name: schemas[name] for name in names}


def _stored(r: MeasurementImport, request: Request) -> list[MeasuredRun]:
    try:
        runs = read_runs(load_catalog(), [(f.name, f.data()) for f in r.files], r.provenance)
    except InferplanError as exc:
        exc.field = f"provenance.{exc.field}" if exc.field in RunProvenance.model_fields else _file_field(exc, r.files)
        raise
    try:
        return _store(request).add_measurements(runs)
    except ConflictError as exc:  # the store names the file; the body holds it under files
        exc.field = "files"
        raise


def _file_field(exc: InferplanError, files: list[ResultFile]) -> str:
    """A refusal inside a result file (its key or line, which the message says after the file's name) at
    the JSON path of that file's content, ``files.1.content``; ``files`` for the list itself."""
    if exc.field == "files":
        return "files"
    index = next((i for i, f in enumerate(files) if str(exc).startswith(f"{f.name}: ")), 0)
    return f"files.{index}.content"


@router.get("/api/measurements/view", summary="Each imported run, predicted against measured",
            response_model=MeasurementsView, responses=LONG_RESPONSES)
async def measurements_view(request: Request) -> Response:
    """Every run with predicted vs measured, and the chart of them: a long request (``api_work``), each
    stored run planned again (60 runs, 2 s)."""
    def work(_budget: object) -> MeasurementsView:
        runs = compare_runs(_store(request).list_measurements())
        return MeasurementsView(runs=runs, texts=[run_text(r) for r in runs], chart=predicted_vs_measured(runs))

    return await long_json(request, work)


@router.get("/api/measurements/choices", summary="What an upload's provenance fields take")
def measurement_choices() -> UploadChoices:
    """What the upload's provenance fields take where the library knows the values (the page's choices)."""
    return upload_choices(load_catalog())


@router.get("/api/measurements/{measurement_id}", summary="One imported run against its prediction")
def show_measurement(measurement_id: ItemId, request: Request) -> RunComparison:
    return compare_run(_store(request).get_measurement(measurement_id))


@router.get("/api/measurements/{measurement_id}/export", summary="One imported run as catalogue data")
def export_measurement(measurement_id: ItemId, request: Request) -> dict:
    """The run as catalogue data in the speed_points schema."""
    return run_as_catalogue(_store(request).get_measurement(measurement_id))


@router.delete("/api/measurements/{measurement_id}", summary="Delete an imported run", status_code=204)
def delete_measurement(measurement_id: ItemId, request: Request) -> Response:
    _store(request).delete_measurement(measurement_id)
    return Response(status_code=204)
