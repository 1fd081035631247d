"""The viewer's FastAPI app: a JSON API over one store, and the static page that draws it.

FastAPI because ``agentgym serve`` already uses it (same ``llm`` extra, nothing new to install),
its query models validate filters (a bad one is a 400 naming the field), and sync endpoints run
in a thread pool where each thread keeps its own read-only SQLite connection. The page is plain
HTML, CSS and JavaScript modules: no build step. Requests naming another host than the viewer's
address are refused (DNS rebinding: a web page cannot read the store through the browser).

Every response carries a Content-Security-Policy that lets the page run only its own scripts and
styles (no inline script, event-handler attribute, ``javascript:`` URL or other origin) and
``X-Content-Type-Options: nosniff``: the store holds model and env text, which the page puts in
as text nodes; should any ever reach the page as markup, the browser still runs none of it.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from agentgym.hosts import refused_host
from agentgym.viewer import episode as episode_view
from agentgym.viewer import plots, queries
from agentgym.viewer.db import StoreReader

STATIC = Path(__file__).parent / "static"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The page's own modules, stylesheet and API only (``data:`` for the empty favicon)."""
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def create_app(db: str | Path | StoreReader, allowed: Collection[str] | None = None) -> FastAPI:
    """The viewer for the store at ``db`` (checked now: a missing or foreign file raises).

    ``allowed``: the host names requests may name in ``Host``
    (:func:`agentgym.hosts.allowed_hosts`); others get 400. None accepts any (in-process test
    clients).
    """
    reader = db if isinstance(db, StoreReader) else StoreReader(db)
    # No Swagger page: it loads scripts from a CDN, which the policy (rightly) refuses.
    app = FastAPI(title="agentgym viewer", docs_url=None, redoc_url=None)
    app.state.reader = reader

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"] if p not in ("query", "path"))
        return JSONResponse({"detail": f"{where}: {first['msg']}"}, status_code=400)

    @app.middleware("http")
    async def check_host(request: Request, call_next: Any) -> Any:
        if refused := refused_host(request.headers.get("host"), allowed):
            return JSONResponse({"detail": refused}, status_code=400)
        return await call_next(request)

    @app.exception_handler(KeyError)
    async def not_found(request: Request, exc: KeyError) -> JSONResponse:
        return JSONResponse({"detail": exc.args[0] if exc.args else str(exc)}, status_code=404)

    @app.middleware("http")
    async def no_cache_api(request: Request, call_next: Any) -> Any:
        response = await call_next(request)
        if request.url.path.startswith("/api/"):
            response.headers["Cache-Control"] = "no-store"
        return response

    @app.exception_handler(Exception)
    async def server_error(request: Request, exc: Exception) -> JSONResponse:
        # Answered outside the middleware below, so it sets the headers itself.
        return JSONResponse(
            {"detail": f"internal error: {type(exc).__name__}"},
            status_code=500,
            headers=SECURITY_HEADERS,
        )

    app.add_middleware(SecurityHeaders)  # added last: wraps every answer, refusals included
    _api_routes(app, reader)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    return app


class SecurityHeaders:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every response."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.headers = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self.headers]
            await send(message)

        await self.app(scope, receive, with_headers)


def _api_routes(app: FastAPI, db: StoreReader) -> None:
    @app.get("/api/version")
    def version() -> dict[str, str]:
        """A token that changes whenever the store gains a run or an episode (live updates)."""
        return {"version": db.version(), "store": str(db.path)}

    @app.get("/api/runs")
    def runs(q: Annotated[str | None, Query(max_length=200)] = None) -> list[dict[str, Any]]:
        return queries.runs(db, q)

    @app.get("/api/runs/{run_id}")
    def run(run_id: str) -> dict[str, Any]:
        return queries.run(db, run_id)

    @app.get("/api/runs/{run_id}/episodes")
    def episodes(run_id: str, f: Annotated[queries.EpisodeFilter, Query()]) -> dict[str, Any]:
        db.run_exists(run_id)
        return queries.episode_page(db, run_id, f)

    @app.get("/api/runs/{run_id}/summary")
    def summary(run_id: str) -> list[dict[str, Any]]:
        return plots.tag_summaries(db, run_id)

    @app.get("/api/episode")
    def episode(
        run: str, task: str, sample: Annotated[int, Query(ge=0, le=queries.MAX_INT)] = 0
    ) -> dict[str, Any]:
        return episode_view.episode(db, run, task, sample)

    @app.get("/api/episode/text")
    def episode_text(
        run: str,
        task: str,
        field: episode_view.TextField,
        sample: Annotated[int, Query(ge=0, le=queries.MAX_INT)] = 0,
        t: Annotated[int | None, Query(ge=0, le=queries.MAX_INT)] = None,
        offset: Annotated[int, Query(ge=0, le=queries.MAX_INT)] = 0,
        limit: Annotated[int, Query(ge=1, le=episode_view.MAX_TEXT)] = episode_view.MAX_TEXT,
    ) -> dict[str, Any]:
        return episode_view.text_page(db, run, task, sample, field, t, offset, limit)

    @app.get("/api/compare")
    def compare(
        a: str,
        b: str,
        only: queries.CompareOnly = "all",
        page: Annotated[int, Query(ge=1, le=queries.MAX_PAGE)] = 1,
        page_size: Annotated[int, Query(ge=1, le=500)] = 100,
    ) -> dict[str, Any]:
        return queries.compare(db, a, b, only, page, page_size)

    @app.get("/api/training")
    def training() -> list[dict[str, Any]]:
        return plots.training_curves(db)

    @app.get("/api/train/{run_id}")
    def train_run(run_id: str) -> dict[str, Any]:
        """A training run's logged metrics and held-out success over steps."""
        return plots.train_run(db, run_id)
