"""The LLM behind the fix and optimize actions: any OpenAI-compatible endpoint, through the `openai` package.

The API key is read from the environment variable the settings name (`llm.api-key-env`), at the moment of each
call, and handed only to the client for that call: it is never logged, cached, written or sent anywhere but the
endpoint. An endpoint that needs no key (a local vLLM, llama.cpp's server, Ollama) works with the variable
unset. The budget of a request (tokens and seconds) is enforced here: once spent, no further call is made.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)
for _noisy in ("openai", "httpx", "httpcore"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)  # their debug lines can carry request headers

NO_KEY = "no-key"  # what the client sends when the variable is unset: servers that need no key ignore it


class LLMError(Exception):
    """The endpoint could not be used (not configured, unreachable, an error reply); the message is safe to show."""


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
        return f"{self.model or 'the default model'} at {self.endpoint}"

    def complete(self, messages: list[dict], budget: Budget, max_reply_tokens: int = 8192) -> Reply:
        """One chat completion within the budget; raises LLMError."""
        why = budget.spent()
        if why:
            raise LLMError(why)
        from openai import OpenAI, OpenAIError
        key = os.environ.get(self.api_key_env) or NO_KEY
        client = OpenAI(base_url=self.endpoint, api_key=key, max_retries=0,
                        timeout=max(5.0, budget.left_seconds()))
        try:
            response = client.chat.completions.create(
                model=self.model or "default", messages=messages, temperature=self.temperature,
                max_tokens=max(256, min(max_reply_tokens, budget.max_tokens - budget.tokens)))
        except OpenAIError as e:
            raise LLMError(f"the LLM endpoint {self.endpoint} failed: {_safe(str(e), key)}") from None
        finally:
            client.close()
        usage = getattr(response, "usage", None)
        tokens = int(getattr(usage, "total_tokens", 0) or 0)
        budget.tokens += tokens
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content if choice and choice.message else None) or ""
        return Reply(text, tokens)


def _safe(text: str, key: str) -> str:
    """An error message with the key taken out, should an endpoint echo it."""
    return text.replace(key, "***") if key and key != NO_KEY else text
