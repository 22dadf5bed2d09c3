"""`kernel-lsp serve`: `create_server()` makes a language server (server.py's session with every handler of
handlers.py registered), and `serve_stdio()` runs one over stdio. A server exists only once the factory is called: nothing
is built at import time, and neither server.py nor handlers.py imports this module.
"""

from __future__ import annotations

import logging
import os

from .handlers import register
from .server import KernelLanguageServer
from .transport import install


def create_server() -> KernelLanguageServer:
    """A new language server, every LSP method and command of handlers.py registered on it."""
    return register(KernelLanguageServer())


def serve_stdio() -> None:
    install()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # pygls logs every message it sends at INFO: that floods the editor's output channel (and costs time on
    # large diagnostics). KERNEL_LSP_LOG=debug brings it back.
    if os.environ.get("KERNEL_LSP_LOG", "").lower() != "debug":
        logging.getLogger("pygls").setLevel(logging.WARNING)
    server = create_server()
    try:
        server.start_io()
    finally:
        server.stop_everything()
