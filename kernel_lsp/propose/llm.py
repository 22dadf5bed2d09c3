"""The LLM behind the fix and optimize actions: any OpenAI-compatible endpoint, through the `openai` package.

The API key is read from the environment variable the settings name (`llm.api-key-env`), at the moment of each
call, and handed only to the client for that call: it is never logged, cached, written or sent anywhere but the
endpoint. An endpoint that needs no key (a local vLLM, llama.cpp's server, Ollama) works with the variable
unset. The budget of a request (tokens and seconds) is enforced here: once spent, no further call is made.

The reply's body is read here, not by the client's models: a 200 whose body is not a chat completion (not JSON,
`choices` a string or empty, a null message) is a `MalformedReply` that says what was wrong, which the proposer
counts as one failed candidate; an endpoint that cannot be used at all is an `LLMError`, which ends the request.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass

from ..config import mask_secrets

log = logging.getLogger(__name__)
for _noisy in ("openai", "httpx", "httpcore"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)  # their debug lines can carry request headers

NO_KEY = "no-key"  # what the client sends when the variable is unset: servers that need no key ignore it


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

    def complete(self, messages: list[dict], budget: Budget, max_reply_tokens: int = 8192) -> Reply:
        """One chat completion within the budget; raises MalformedReply for a reply that is not one (a failed
        candidate), LLMError when the endpoint cannot be used (the end of the request)."""
        why = budget.spent()
        if why:
            raise LLMError(why)
        from openai import OpenAI, OpenAIError
        key = os.environ.get(self.api_key_env) or NO_KEY
        client = OpenAI(base_url=self.endpoint, api_key=key, max_retries=0,
                        timeout=max(5.0, budget.left_seconds()))
        try:
            raw = client.chat.completions.with_raw_response.create(
                model=self.model or "default", messages=messages, temperature=self.temperature,
                max_tokens=max(256, min(max_reply_tokens, budget.max_tokens - budget.tokens)))
            body = raw.content
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


def _safe(text: str, key: str) -> str:
    """An error message with the key taken out, should an endpoint echo it."""
    return text.replace(key, "***") if key and key != NO_KEY else text
