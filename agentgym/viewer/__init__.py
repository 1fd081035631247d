"""The web viewer of a store: ``agentgym view DB`` (runs, episodes, trajectories, live).

A FastAPI JSON API over the store's SQLite file (read-only, paged and filtered in SQL) and one
static page of plain HTML, CSS and JavaScript modules that draws it; no build step.
"""

from agentgym.viewer.app import create_app
from agentgym.viewer.db import StoreReader
from agentgym.viewer.server import ViewerThread, serve

__all__ = ["StoreReader", "ViewerThread", "create_app", "serve"]
