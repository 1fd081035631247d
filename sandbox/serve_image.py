"""The build context of the env server's container image (``sandbox/images/Dockerfile.serve``).

    python -m agentgym.sandbox.serve_image CONTEXT
    docker build -t agentgym-env CONTEXT
    docker run -e AGENTGYM_API_KEY=KEY -p 127.0.0.1:8000:8000 agentgym-env Clarify-v0

The context holds the Dockerfile and a ``python/`` folder with agentgym and every library that
importing the server pulls in, copied from this host as the sandbox's code layer is: the image
is built on the sandbox image with no package index.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

SERVER_IMPORTS = (
    "agentgym.integrations.openenv.server",
    # what uvicorn imports only once it serves: its protocol implementations (websockets, h11)
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.loops.auto",
    "uvicorn.lifespan.on",
)


def write_context(dst: Path) -> list[str]:
    """Write the Dockerfile and the python/ folder under ``dst``; return the packages copied."""
    from agentgym.sandbox.code import copy_code

    dst.mkdir(parents=True, exist_ok=True)
    recipe = resources.files("agentgym.sandbox").joinpath("images/Dockerfile.serve")
    (dst / "Dockerfile").write_text(recipe.read_text(encoding="utf-8"))
    return copy_code(dst / "python", extra=SERVER_IMPORTS)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m agentgym.sandbox.serve_image CONTEXT_DIR")
    copied = write_context(Path(sys.argv[1]))
    print(f"wrote {sys.argv[1]}: Dockerfile and python/ ({len(copied)} packages)")
