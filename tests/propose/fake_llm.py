"""An OpenAI-compatible chat endpoint on 127.0.0.1 that replays scripted replies and records every request.

Driven through the real `openai` client by the code under test; no model is involved. Replies are taken in
order; when they run out, the last one repeats. A reply is the assistant's text, or a `Raw` body sent as it is (a
malformed endpoint). `on_request(i)` runs as request i arrives, before it is answered (something changing files
while a proposal is being made).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


@dataclass
class Raw:
    """A response body sent as it is, with status 200 unless told."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"


class FakeLLM:
    def __init__(self, replies: list[str | Raw], tokens_per_reply: int = 500, delay: float = 0.0,
                 on_request: Callable[[int], None] | None = None):
        self.replies = list(replies)
        self.tokens = tokens_per_reply
        self.delay = delay
        self.on_request = on_request
        self.requests: list[dict] = []  # {"path", "headers" (lower-case names), "body"}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                fake.requests.append({"path": self.path, "headers": headers, "body": body})
                if fake.delay:
                    time.sleep(fake.delay)
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                if fake.on_request is not None:
                    fake.on_request(len(fake.requests) - 1)
                index = min(len(fake.requests) - 1, len(fake.replies) - 1)
                content = fake.replies[index] if fake.replies else ""
                if isinstance(content, Raw):
                    self.send_response(content.status)
                    self.send_header("Content-Type", content.content_type)
                    self.send_header("Content-Length", str(len(content.body)))
                    self.end_headers()
                    self.wfile.write(content.body)
                    return
                payload = json.dumps({
                    "id": f"chatcmpl-{len(fake.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": fake.tokens // 2, "completion_tokens": fake.tokens - fake.tokens // 2,
                              "total_tokens": fake.tokens},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeLLM":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def prompt(self, i: int) -> str:
        """The user message of request i."""
        return next(m["content"] for m in self.requests[i]["body"]["messages"] if m["role"] == "user")
