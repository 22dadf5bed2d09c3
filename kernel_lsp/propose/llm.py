"""The LLM behind the fix and optimize actions: any OpenAI-compatible endpoint, through the `openai` package.

The API key is read from the environment variable the settings name (`llm.api-key-env`), at the moment of each
call, and handed only to the client for that call: it is never logged, cached, written or sent anywhere but the
endpoint. An endpoint that needs no key (a local vLLM, llama.cpp's server, Ollama) works with the variable
unset. The budget of a request (tokens and seconds) is enforced here: once spent, no further call is made.

An endpoint that cannot be reached fails fast and says why: `preflight` resolves its host and opens a connection
before any check runs (an unresolvable host, a refused connection, no answer to the connection), and a request that
fails to connect names the same causes instead of the client's "Connection error.". While a reply is awaited, the
caller's `on_wait` hears how long it has been (WAIT_NOTES), so an endpoint that never answers is never silence.

The reply's body is read here, not by the client's models: a 200 whose body is not a chat completion (not JSON,
`choices` a string or empty, a null message) is a `MalformedReply` that says what was wrong, which the proposer
counts as one failed candidate; an endpoint that cannot be used at all is an `LLMError`, which ends the request.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import urllib.request
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlparse

from ..config import mask_secrets

log = logging.getLogger(__name__)
for _noisy in ("openai", "httpx", "httpcore"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)  # their debug lines can carry request headers

NO_KEY = "no-key"  # what the client sends when the variable is unset: servers that need no key ignore it
CONNECT_TIMEOUT = 5.0  # seconds the preflight waits for a connection
WAIT_NOTES = (5.0, 15.0, 30.0)  # seconds into a request at which `on_wait` is called; then every 30 s


class LLMError(Exception):
    """The endpoint could not be used (not configured, unreachable, an error reply); the message is safe to show
    (anything in it that looks like a key is masked)."""

    def __init__(self, message: str):
        super().__init__(mask_secrets(message))


class MalformedReply(LLMError):
    """The endpoint answered, but not with a chat completion's text; the message says what was wrong with it."""


@dataclass
class Reply:
    text: str
    tokens: int


@dataclass
class Budget:
    max_tokens: int
    max_seconds: float
    tokens: int = 0
    started: float = 0.0

    def __post_init__(self) -> None:
        self.started = self.started or time.monotonic()

    def left_seconds(self) -> float:
        return self.max_seconds - (time.monotonic() - self.started)

    def spent(self) -> str | None:
        """Why no further call may be made, or None."""
        if self.tokens >= self.max_tokens:
            return f"the token budget ({self.max_tokens}) is spent"
        if self.left_seconds() <= 0:
            return f"the time budget ({self.max_seconds:.0f} s) is spent"
        return None


class LLM:
    def __init__(self, endpoint: str, model: str, api_key_env: str, temperature: float = 0.2):
        if not endpoint:
            raise LLMError("no LLM endpoint is configured: set [tool.kernel-lsp.llm] endpoint (docs/code-actions.md)")
        self.endpoint, self.model, self.api_key_env, self.temperature = endpoint, model, api_key_env, temperature

    def describe(self) -> str:
        return mask_secrets(f"{self.model or 'the default model'} at {self.endpoint}")

    def _address(self) -> tuple[str, int]:
        url = urlparse(self.endpoint)
        return url.hostname or "", url.port or (443 if url.scheme == "https" else 80)

    def preflight(self, timeout: float = CONNECT_TIMEOUT) -> None:
        """Raise LLMError, saying which, when the endpoint's host cannot be resolved, refuses the connection or does
        not accept one within `timeout`: before any check runs, so a wrong endpoint costs no minutes. Skipped where
        a proxy carries the requests (the client then connects to the proxy, not to the host)."""
        host, port = self._address()
        if not host or (urllib.request.getproxies() and not urllib.request.proxy_bypass(host)):
            return
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as e:
            raise LLMError(f"the LLM endpoint {self.endpoint} cannot be used: its host {host!r} cannot be resolved "
                           f"({e.strerror}): check the host name in [tool.kernel-lsp.llm] endpoint") from None
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as e:
            why = _connect_failure(e, host, port)
            raise LLMError(f"the LLM endpoint {self.endpoint} cannot be used: {why}") from None

    def complete(self, messages: list[dict], budget: Budget, max_reply_tokens: int = 8192,
                 on_wait: Callable[[float], None] | None = None, cancel: threading.Event | None = None) -> Reply:
        """One chat completion within the budget; raises MalformedReply for a reply that is not one (a failed
        candidate), LLMError when the endpoint cannot be used (the end of the request). While the reply is awaited,
        `on_wait(seconds)` is called at WAIT_NOTES; a set `cancel` stops the wait (the request is abandoned)."""
        why = budget.spent()
        if why:
            raise LLMError(why)
        from openai import APIConnectionError, APITimeoutError, OpenAI, OpenAIError
        key = os.environ.get(self.api_key_env) or NO_KEY
        timeout = max(5.0, budget.left_seconds())
        client = OpenAI(base_url=self.endpoint, api_key=key, max_retries=0, timeout=timeout)
        try:
            raw = _waiting(lambda: client.chat.completions.with_raw_response.create(
                model=self.model or "default", messages=messages, temperature=self.temperature,
                max_tokens=max(256, min(max_reply_tokens, budget.max_tokens - budget.tokens))), on_wait, cancel)
            body = raw.content
        except Cancelled:
            raise
        except APITimeoutError:
            raise LLMError(f"the LLM endpoint {self.endpoint} did not answer within {timeout:.0f} s (the request's "
                           "time budget, llm.max-seconds)") from None
        except APIConnectionError as e:
            cause = _os_error(e)
            host, port = self._address()
            why = _connect_failure(cause, host, port) if cause is not None else _safe(str(e), key)
            raise LLMError(f"the LLM endpoint {self.endpoint} failed: {why}") from None
        except OpenAIError as e:
            raise LLMError(f"the LLM endpoint {self.endpoint} failed: {_safe(str(e), key)}") from None
        except Exception as e:  # the transport's own faults (a malformed URL, a broken connection mid-body)
            raise LLMError(f"the LLM endpoint {self.endpoint} failed: {type(e).__name__}: "
                           f"{_safe(str(e), key)}") from None
        finally:
            client.close()
        try:
            return read_completion(body, budget)
        except MalformedReply as e:
            raise MalformedReply(_safe(f"the reply of {self.endpoint} {e}", key)) from None


def read_completion(body: bytes, budget: Budget) -> Reply:
    """The text of a chat completion's body, its tokens added to the budget; raises MalformedReply (its message
    goes on from "the reply of ENDPOINT ...")."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise MalformedReply(f"is not JSON (it begins {body[:60]!r})") from None
    if not isinstance(data, dict):
        raise MalformedReply(f"is not a JSON object but a {type(data).__name__}")
    usage = data.get("usage")
    tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
    tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0 else 0
    budget.tokens += tokens
    choices = data.get("choices")
    if choices is None:
        raise MalformedReply("has no `choices`" + (f" (error: {str(data['error'])[:200]})" if "error" in data else ""))
    if not isinstance(choices, list):
        raise MalformedReply(f"is not a chat completion: `choices` is a {type(choices).__name__}, not a list")
    if not choices:
        raise MalformedReply("has no candidate: `choices` is empty")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise MalformedReply(f"is not a chat completion: its first choice is not an object but {choice!r:.60}")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise MalformedReply("is not a chat completion: its first choice has no `message`")
    content = message.get("content")
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        content = "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    if content is None:
        why = choice.get("finish_reason")
        raise MalformedReply("has no text: the message's content is null"
                             + (f" (finish_reason {why!r})" if isinstance(why, str) else ""))
    if not isinstance(content, str):
        raise MalformedReply(f"is not text: the message's content is a {type(content).__name__}")
    return Reply(content, tokens)


class Cancelled(Exception):
    """The request was cancelled (the caller's event was set): a reply is no longer awaited, and the proposer's
    workers have been killed."""


def _waiting(call: Callable, on_wait: Callable[[float], None] | None, cancel: threading.Event | None):
    """`call()` on a thread of its own, its result or exception returned or raised here; meanwhile `on_wait` hears
    the seconds waited at WAIT_NOTES (then every 30 s), and a set `cancel` raises Cancelled at once."""
    if on_wait is None and cancel is None:
        return call()
    done, out = threading.Event(), {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as e:  # handed to the waiting thread
            out["error"] = e
        finally:
            done.set()

    threading.Thread(target=run, name="kernel-lsp-llm", daemon=True).start()
    start, notes = time.monotonic(), list(WAIT_NOTES)
    while not done.is_set():
        waited = time.monotonic() - start
        if notes and waited >= notes[0]:
            notes.pop(0)
            if not notes:
                notes.append(waited + 30.0)
            if on_wait is not None:
                on_wait(waited)
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        done.wait(min(0.25, max(0.01, notes[0] - waited)) if notes else 0.25)
    if "error" in out:
        raise out["error"]
    return out["value"]


def _os_error(e: BaseException) -> OSError | None:
    """The operating system's error under a client's connection error (httpx wraps it twice)."""
    seen = 0
    while e is not None and seen < 10:
        if isinstance(e, OSError):
            return e
        e, seen = e.__cause__ or e.__context__, seen + 1
    return None


def _connect_failure(e: OSError, host: str, port: int) -> str:
    if isinstance(e, socket.gaierror):
        return f"its host {host!r} cannot be resolved ({e.strerror}): check the host name in the endpoint"
    if isinstance(e, ConnectionRefusedError):
        return (f"connection refused at {host}:{port}: nothing listens there (is the server running, and on that "
                "port?)")
    if isinstance(e, (TimeoutError, socket.timeout)):
        return f"no connection to {host}:{port} within {CONNECT_TIMEOUT:.0f} s (a firewall, or a host that is down)"
    return f"cannot connect to {host}:{port}: {e.strerror or e}"


def _safe(text: str, key: str) -> str:
    """An error message with the key taken out, should an endpoint echo it."""
    return text.replace(key, "***") if key and key != NO_KEY else text
