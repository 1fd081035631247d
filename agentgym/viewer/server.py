"""Running the viewer: in the foreground for ``agentgym view``, or in a thread for tests."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from agentgym.hosts import allowed_hosts
from agentgym.viewer.app import create_app


def serve(db: str | Path, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve the viewer for ``db`` until interrupted; the store is checked before binding.

    Port 0 picks a free port; the URL is printed once the socket is bound.
    """
    import uvicorn

    app = create_app(db, allowed_hosts(host))
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ValueError(
            f"cannot listen on {host}:{port} ({e.strerror}); try another --port"
        ) from None
    bound = sock.getsockname()[1]
    print(f"agentgym view: http://{host}:{bound}/ showing {db} (Ctrl-C stops)", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


class ViewerThread:
    """The viewer on a free port in a daemon thread; ``url`` ends with ``/``."""

    def __init__(self, db: str | Path, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        self.server = uvicorn.Server(
            uvicorn.Config(
                create_app(db, allowed_hosts(host)), host=host, port=port, log_level="warning"
            )
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the viewer did not start on {host}:{port}")
            time.sleep(0.01)
        h, p = self.server.servers[0].sockets[0].getsockname()[:2]
        self.url = f"http://{h}:{p}/"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)

    def __enter__(self) -> ViewerThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
