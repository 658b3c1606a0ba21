"""The HTTP API and the web calculator's host (FastAPI).

Handlers are thin: parse the request into the library's models, call one library function,
return its model. ``InferplanError`` becomes 422 naming the field (404 for unknown catalogue
entries and saved items, 409 for a taken name); request validation is a 422, a body that is not
JSON a 400, each in the one error shape of ``api_guard`` (which also caps bodies, checks the Host
and adds security headers: docs/reliability.md), answered by ``api_errors``. OpenAPI 3.1 at
/openapi.json, docs at /docs, the calculator at /.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import Depends, FastAPI, Path as PathParam, Query, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

from inferplan import __version__
from inferplan.catalog.loader import load_catalog
from inferplan.catalog.query import KINDS, SearchHit, list_entries, search, show_entry
from inferplan.errors import (
    AmbiguousNameError,
    CatalogError,
    InferplanError,
    InvalidScenarioError,
    UnknownHardwareError,
    UnknownModelError,
)
from inferplan.inputs.deployment import Deployment
from inferplan.memory.fit import MemoryFit
from inferplan.memory.mtp import SPECULATIVE_METHODS
from inferplan.memory.suggest import fit_or_suggest
from inferplan.shells.api_keys import SearchBody, alias_properties
from inferplan.shells.api_query import known_query
from inferplan.performance.local_catalog import with_user_profiles
from inferplan.performance.frontier import Frontier, frontier
from inferplan.performance.serving import ServingEstimate, estimate
from inferplan.inputs.workload import Workload
from inferplan.report.views import (FxView, MemoryRequest, MemoryView, ModelCardView, PlanRequest, PlanView, PlatformView,
                                   fx_view, memory_view, model_cards, plan_view, platform_ladder)
from inferplan.economics.scenario import Platform, Scenario
from inferplan.scenario import check_references
from inferplan.shells.api_catalog import router as catalog_router
from inferplan.shells.api_deploy import router as deploy_router
from inferplan.shells.api_errors import add_error_handlers, in_body
from inferplan.shells.api_models import (Comparison, FrontierRequest, PerfRequest, RenameRequest, SaveScenarioRequest,
                                         Validation)
from inferplan.shells.api_search import router as search_router
from inferplan.shells.api_search_view import router as search_view_router
from inferplan.shells.api_fits import router as fits_router
from inferplan.shells.api_homelab import router as homelab_router
from inferplan.shells.api_simulate import router as simulate_router
from inferplan.shells.api_body import BODY_DEADLINE_S, JsonBody
from inferplan.shells.api_work import LONG_RESPONSES, long_json, until_disconnected
from inferplan.shells.api_guard import (
    CONFLICT_RESPONSE, ERROR_RESPONSES, ERROR_RESPONSES_BESIDE_HTML, FULL_RESPONSE, SAVE_RESPONSE, SAVED_SCENARIO_LINKS, BodyLimit,
    HeadAsGet, HostCheck, ItemId, SecurityHeaders, declare_media_refusal, inline_script_policy, refuse_server_path,
)
from inferplan.shells.api_measurements import MAX_UPLOAD_BYTES as MEASUREMENTS_BODY_BYTES, UPLOAD_ROUTE as MEASUREMENTS_UPLOAD
from inferplan.shells.api_measurements import router as measurements_router, upload_schemas
from inferplan.store import NotFoundError, SavedQuote, SavedScenario, Store, VendorQuote
from inferplan.validation.memory import validate_memory
from inferplan.validation.speed import validate_speed

STATIC = Path(__file__).parent / "static"
# the /docs page's sections in the order a newcomer asks: does it fit, how fast, how many users and at what
# cost, the cheapest way to a target and its launch command; then the catalogue and what is saved
DOCS_SECTIONS = (
    ("memory", "Does a model fit: weights, KV cache and requests at once (`inferplan fit`, `fits`)"),
    ("speed", "TTFT, TPOT and tokens/s of a deployment, and its tail latency under a load (`perf`, `simulate`)"),
    ("economics", "Users + ROI of a scenario: users carried, loadouts, costs, payback (`inferplan plan`)"),
    ("search", "The cheapest deployments that meet a service target (`inferplan search`)"),
    ("deploy", "Launch commands and Kubernetes manifests (`inferplan deploy`)"),
    ("views", "The web page's What runs on my GPUs? box"),
    ("catalogue", "Models, accelerators, systems, engines and prices, each number with its source"),
    ("scenarios", "Saved scenarios and their comparison"),
    ("quotes", "Vendor quotes that price a system"),
    ("measurements", "Your own benchmark runs against the prediction"),
    ("validation", "The memory and speed models against every shipped measurement (`inferplan validate`)"),
)
# a name in a path is as long as a name in a body may be: a 404 quotes it, so 100 kB of it made a 200 kB reply
CatalogKind = Annotated[str, PathParam(max_length=200)]
CatalogName = Annotated[str, PathParam(max_length=300, description="id or alias (a repo id alias holds a slash)")]


def create_app(db_path: str | Path | None = None, *, allowed_hosts: Collection[str] | None = None,
               body_deadline_s: float = BODY_DEADLINE_S) -> FastAPI:
    """The app on the SQLite file ``db_path``; ``allowed_hosts``: the only Host headers it answers
    (``api_guard.loopback_hosts`` when bound to loopback), or None for any; ``body_deadline_s``: how
    long a request's body may take to arrive (``api_body.BODY_DEADLINE_S``)."""
    app = FastAPI(title="inferplan", version=__version__, docs_url=None, redoc_url=None, responses=ERROR_RESPONSES,
                  dependencies=[Depends(known_query)],  # an unknown query parameter is a 422, as an unknown body key
                  description="Plan self-hosted open-weight LLM deployments: fit, speed, users and cost.",
                  openapi_tags=[{"name": name, "description": text} for name, text in DOCS_SECTIONS])
    app.add_middleware(JsonBody, deadline_s=body_deadline_s)  # inside BodyLimit: reads a body already bounded
    app.add_middleware(BodyLimit, larger={MEASUREMENTS_UPLOAD: MEASUREMENTS_BODY_BYTES})
    app.add_middleware(HeadAsGet)
    if allowed_hosts is not None:
        app.add_middleware(HostCheck, allowed=allowed_hosts)
    app.add_middleware(SecurityHeaders)
    add_error_handlers(app)
    store = Store(db_path)
    app.state.store = store

    catalogue_model = refuse_server_path  # the API plans catalogue models, never files on its disk

    def with_quote(scenario: Scenario) -> tuple[Scenario, str | None]:
        system_id = None
        if scenario.platform.system:
            try:  # an alias (HGX-H200) finds the quotes stored under its id; an unknown name is plan's error
                system_id = load_catalog().system(scenario.platform.system).id
            except InferplanError:
                pass
        scenario, quote = store.apply_quotes(scenario, system_id)
        note = None if quote is None else (f"vendor quote from {quote.vendor} ({quote.quoted_on}): "
                                            f"${quote.price_usd:,.0f} per {quote.system} replaces the price band")
        return scenario, note

    def view(request: PlanRequest) -> PlanView:
        catalogue_model(request.scenario.model, "scenario.model")
        scenario, note = with_quote(request.scenario)
        try:
            return plan_view(request.model_copy(update={"scenario": scenario}),
                             with_user_profiles(load_catalog(), store.user_runs()), quote_note=note)
        except InferplanError as exc:
            raise in_body(exc, ("scenario", Scenario)) from None

    app.include_router(catalog_router)  # before /api/catalog/{kind}, which would take "stale" for a kind
    app.include_router(measurements_router)  # shells/api_measurements.py

    @app.get("/api/catalog", summary="The catalogue's kinds (models, accelerators, systems, ...)", tags=["catalogue"])
    def catalog_kinds() -> list[str]:
        return sorted(KINDS)

    @app.get("/api/catalog/{kind}", summary="Every catalogue entry of one kind", tags=["catalogue"])
    def catalog_list(kind: CatalogKind) -> list[dict[str, Any]]:
        try:
            entries = list_entries(kind)
        except CatalogError as exc:
            raise NotFoundError(str(exc), field="kind", allowed=exc.allowed) from None
        return [e.model_dump(mode="json") for e in entries]

    @app.get("/api/catalog/{kind}/{name:path}", summary="One catalogue entry with each number's source",
             tags=["catalogue"])  # a repo id alias holds a slash
    def catalog_show(kind: CatalogKind, name: CatalogName) -> dict[str, Any]:
        try:
            _, entry = show_entry(name, kind)
        except AmbiguousNameError:
            raise
        except (CatalogError, UnknownModelError, UnknownHardwareError) as exc:
            if exc.field == "kind":
                raise NotFoundError(str(exc), field="kind", allowed=exc.allowed) from None
            raise NotFoundError(str(exc), field="name", allowed=exc.allowed) from None
        return entry.model_dump(mode="json")

    @app.get("/api/search", summary="Catalogue entries whose id, alias or name matches a text", tags=["catalogue"])
    def catalog_search(q: str = Query(..., min_length=1, max_length=200)) -> list[SearchHit]:
        return search(q)

    @app.get("/api/views/models", summary="The source guide's model lines as cards: size, context, engines", tags=["catalogue"])
    def views_models(include_reference: bool = False) -> list[ModelCardView]:
        return model_cards(load_catalog(), include_reference)

    @app.get("/api/views/platforms", summary="Every catalogue system with its GPUs, memory, power and price band",
             tags=["catalogue"])
    def views_platforms() -> list[PlatformView]:
        return platform_ladder(load_catalog())

    @app.get("/api/views/fx", summary="The USD to EUR rate, with its source", tags=["catalogue"])
    def views_fx() -> FxView:
        """The FX rate every EUR figure uses, with its source and checked date."""
        return fx_view(load_catalog())

    @app.post("/api/fit", summary="Does a deployment fit: weights, KV cache and sequences at once", tags=["memory"])
    def fit_route(d: Deployment, speculative_tokens: int = Query(0, ge=0, le=32),
                  speculative_method: Literal[SPECULATIVE_METHODS] | None = Query(None),
                  draft_model: str | None = Query(None, min_length=3, max_length=300)) -> MemoryFit:
        catalogue_model(d.model, "model")
        return fit_or_suggest(d, speculative_tokens=speculative_tokens, speculative_method=speculative_method,
                              draft_model=draft_model)

    @app.post("/api/perf", summary="Speed of a deployment: TTFT, TPOT and tokens/s at a concurrency", tags=["speed"])
    def perf_route(r: PerfRequest) -> ServingEstimate:
        catalogue_model(r.deployment.model, "deployment.model")
        try:
            return estimate(r.deployment, r.workload, user_runs=store.user_runs())
        except InferplanError as exc:
            raise in_body(exc, ("workload", Workload), ("deployment", Deployment)) from None

    @app.post("/api/frontier", summary="Tokens/s per user against tokens/s per GPU over concurrencies",
              tags=["speed"])
    def frontier_route(r: FrontierRequest) -> Frontier:
        catalogue_model(r.deployment.model, "deployment.model")
        try:
            return frontier(r.deployment, r.workload, points=r.points, user_runs=store.user_runs())
        except InferplanError as exc:
            raise in_body(exc, ("workload", Workload), ("deployment", Deployment)) from None

    @app.post("/api/plan", summary="Users + ROI: users carried, loadouts, costs and payback of a scenario",
              tags=["economics"], response_model=PlanView)
    def plan_route(r: PlanRequest) -> Response:
        # written by the model itself: FastAPI's re-validation of a 37 KB view took longer than planning it
        return Response(view(r).model_dump_json(), media_type="application/json")

    @app.post("/api/views/memory", summary="The memory and speed part of a scenario's plan (no price needed)",
              tags=["economics"], response_model=MemoryView)
    def memory_route(r: MemoryRequest) -> MemoryView:
        """The memory and speed part of a plan (its replica cell's memory, frontier and summary), which needs no
        price: answered where ``/api/plan`` wants one the platform lacks."""
        catalogue_model(r.scenario.model, "scenario.model")
        try:
            return memory_view(r.scenario, with_user_profiles(load_catalog(), store.user_runs()))
        except InferplanError as exc:
            raise in_body(exc, ("scenario", Scenario)) from None

    @app.post("/api/report", summary="A scenario's plan as a self-contained HTML report",
              tags=["economics"], response_class=HTMLResponse,
              responses={**ERROR_RESPONSES_BESIDE_HTML, **LONG_RESPONSES})
    async def report_route(r: PlanRequest, http: Request) -> HTMLResponse:
        return await until_disconnected(http, lambda _budget: report(r))  # 100,000 draws take seconds

    def report(r: PlanRequest) -> HTMLResponse:
        from inferplan.report.files import render_html

        v = view(r)
        name = "".join(ch if ch.isalnum() else "-" for ch in v.result.name[:100]).strip("-") or "plan"
        ascii_name = "".join(ch if ch.isascii() else "-" for ch in name).strip("-") or "plan"
        # a header is Latin-1: an ASCII filename, and the whole name percent-encoded (RFC 6266 filename*)
        disposition = f"attachment; filename=\"{ascii_name}.html\"; filename*=UTF-8''{quote(name)}.html"
        return HTMLResponse(render_html(v.result, v.uncertainty, r.currency), headers={"Content-Disposition": disposition})

    @app.get("/api/validate", summary="The memory and speed models against every shipped measurement",
             tags=["validation"], response_model=Validation, responses=LONG_RESPONSES)
    async def validate_route(http: Request, kind: Literal["all", "memory", "speed"] = "all") -> Response:
        return await long_json(http, lambda _budget: Validation(  # every shipped measurement: a second or two
            memory=validate_memory() if kind in ("all", "memory") else None,
            speed=validate_speed() if kind in ("all", "speed") else None))

    @app.get("/api/scenarios", summary="Saved scenarios", tags=["scenarios"])
    def scenarios_list() -> list[SavedScenario]:
        return store.list_scenarios()

    @app.post("/api/scenarios", summary="Save a scenario",
              tags=["scenarios"], status_code=201, responses={**SAVE_RESPONSE, **SAVED_SCENARIO_LINKS})
    def scenarios_save(r: SaveScenarioRequest) -> SavedScenario:
        catalogue_model(r.scenario.model, "scenario.model")
        try:
            check_references(r.scenario, load_catalog())
        except InferplanError as exc:
            raise in_body(exc, ("scenario", Scenario)) from None
        view(PlanRequest(scenario=r.scenario, draws=0))  # saved only if it plans: compare never meets a broken one
        return store.save_scenario(r.name, r.scenario, replace=r.replace)

    @app.get("/api/scenarios/compare", summary="Two saved scenarios planned side by side",
             tags=["scenarios"])
    def scenarios_compare(a: int = Query(..., ge=1, le=2**62), b: int = Query(..., ge=1, le=2**62),
                          draws: int = Query(1000, ge=0, le=100_000),
                          currency: Literal["usd", "eur"] = Query("usd")) -> Comparison:
        def saved(key: str, scenario_id: int) -> Scenario:
            try:
                return store.get_scenario(scenario_id).scenario
            except NotFoundError as exc:
                exc.field = key  # ?a= or ?b=
                raise

        def planned(key: str, scenario_id: int) -> PlanView:
            try:
                return view(PlanRequest(scenario=saved(key, scenario_id), draws=draws, currency=currency))
            except InferplanError as exc:  # a saved scenario the catalogue no longer plans: say which one, and where
                if isinstance(exc, NotFoundError):
                    raise
                raise InvalidScenarioError(f"saved scenario {scenario_id} does not plan: {exc.field or 'scenario'}: {exc}",
                                           field=key, allowed=exc.allowed) from None

        return Comparison(a=planned("a", a), b=planned("b", b))

    @app.get("/api/scenarios/{scenario_id}", summary="One saved scenario", tags=["scenarios"])
    def scenarios_get(scenario_id: ItemId) -> SavedScenario:
        return store.get_scenario(scenario_id)

    @app.patch("/api/scenarios/{scenario_id}", summary="Rename a saved scenario",
               tags=["scenarios"], responses=CONFLICT_RESPONSE)
    def scenarios_rename(scenario_id: ItemId, r: RenameRequest) -> SavedScenario:
        return store.rename_scenario(scenario_id, r.name)

    @app.delete("/api/scenarios/{scenario_id}", summary="Delete a saved scenario",
                tags=["scenarios"], status_code=204)
    def scenarios_delete(scenario_id: ItemId) -> None:
        store.delete_scenario(scenario_id)

    @app.get("/api/quotes", summary="Saved vendor quotes", tags=["quotes"])
    def quotes_list() -> list[SavedQuote]:
        return store.list_quotes()

    @app.post("/api/quotes", summary="Save a vendor quote for a system",
              tags=["quotes"], status_code=201, responses=FULL_RESPONSE)
    def quotes_add(q: VendorQuote) -> SavedQuote:
        # a quote is money for one exact system: its id or an alias of that system, never a part of
        # a name (h100-sxm, a GPU, once matched the HGX H100 node and priced it at one GPU's quote)
        catalog = load_catalog()
        exact = catalog.systems.exact(q.system)
        if len(exact) != 1:
            raise InvalidScenarioError(f"no system named {q.system!r}: a quote names one system by its id",
                                       field="system", allowed=", ".join(sorted(r.id for r in catalog.systems)))
        return store.add_quote(q.model_copy(update={"system": exact[0].id}))  # under its id, whatever alias was typed

    @app.delete("/api/quotes/{quote_id}", summary="Delete a vendor quote", tags=["quotes"], status_code=204)
    def quotes_delete(quote_id: ItemId) -> None:
        store.delete_quote(quote_id)

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        # Swagger UI served from the package (vendored), so the docs work without the internet
        page = get_swagger_ui_html(openapi_url="/openapi.json", title="inferplan API",
                                   swagger_js_url="/static/vendor/swagger-ui-bundle.js",
                                   swagger_css_url="/static/vendor/swagger-ui.css", swagger_favicon_url="data:,")
        page.headers["Content-Security-Policy"] = inline_script_policy(page.body.decode())  # its start-up script
        return page

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    app.include_router(search_router)  # POST /api/search (shells/api_search.py)
    app.include_router(search_view_router)  # POST /api/views/search (shells/api_search_view.py)
    app.include_router(fits_router)  # POST /api/fits (shells/api_fits.py)
    app.include_router(homelab_router)  # POST /api/views/homelab (shells/api_homelab.py)
    app.include_router(simulate_router)  # POST /api/simulate: shells/api_simulate.py
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.include_router(deploy_router)  # POST /api/deploy (shells/api_deploy.py)
    schema = app.openapi

    def openapi() -> dict[str, Any]:  # with the upload's body, which its route reads itself (api_measurements),
        if app.openapi_schema is None:  # and every other key a body object takes for a field (accelerator for gpu)
            for name, part in upload_schemas().items():
                schema()["components"]["schemas"].setdefault(name, part)
            alias_properties(app.openapi_schema["components"]["schemas"], (Deployment, Platform, SearchBody))
            declare_media_refusal(app.openapi_schema["paths"])
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
