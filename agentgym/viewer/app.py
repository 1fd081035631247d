"""The viewer's FastAPI app: a JSON API over one store, and the static page that draws it.

FastAPI because ``agentgym serve`` already uses it (same ``llm`` extra, nothing new to install),
its query models validate filters with clear 422 messages, and sync endpoints run in a thread
pool where each thread keeps its own read-only SQLite connection. The page is plain HTML, CSS and
JavaScript modules: no build step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from agentgym.viewer import episode as episode_view
from agentgym.viewer import plots, queries
from agentgym.viewer.db import StoreReader

STATIC = Path(__file__).parent / "static"


def create_app(db: str | Path | StoreReader) -> FastAPI:
    """The viewer for the store at ``db`` (checked now: a missing or foreign file raises)."""
    reader = db if isinstance(db, StoreReader) else StoreReader(db)
    app = FastAPI(title="agentgym viewer", docs_url="/api/docs", redoc_url=None)
    app.state.reader = reader

    @app.exception_handler(KeyError)
    async def not_found(request: Request, exc: KeyError) -> JSONResponse:
        return JSONResponse({"detail": exc.args[0] if exc.args else str(exc)}, status_code=404)

    @app.middleware("http")
    async def no_cache_api(request: Request, call_next: Any) -> Any:
        response = await call_next(request)
        if request.url.path.startswith("/api/"):
            response.headers["Cache-Control"] = "no-store"
        return response

    _api_routes(app, reader)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    return app


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
    def episode(run: str, task: str, sample: Annotated[int, Query(ge=0)] = 0) -> dict[str, Any]:
        return episode_view.episode(db, run, task, sample)

    @app.get("/api/compare")
    def compare(
        a: str,
        b: str,
        only: queries.CompareOnly = "all",
        page: Annotated[int, Query(ge=1)] = 1,
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
