"""Malformed replies of an OpenAI-compatible endpoint (a 200 whose body is not a chat completion): each is a failed
candidate with a message that names what was wrong, never a traceback, and the request goes on to the next
candidate. Through the real `openai` client against the scripted server on loopback."""

from __future__ import annotations

import json

import pytest

from kernel_lsp.propose.llm import LLM, Budget, MalformedReply
from tests.propose.fake_llm import FakeLLM, Raw
from tests.propose.test_llm_actions import FIXED_KERNEL, optimize, workspace


def completion(**fields) -> Raw:
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    body.update(fields)
    return Raw(json.dumps(body).encode())


MALFORMED = {
    "not-json": (Raw(b"<html>502 Bad Gateway</html>"), "not JSON"),
    "html": (Raw(b"<html>502 Bad Gateway</html>", content_type="text/html"), "not JSON"),
    "json-array": (Raw(b"[1, 2]"), "not a JSON object"),
    "choices-string": (completion(choices="oops"), "`choices` is a str"),
    "choices-null": (completion(choices=None), "no `choices`"),
    "choices-empty": (completion(choices=[]), "`choices` is empty"),
    "choice-not-object": (completion(choices=[42]), "not an object"),
    "message-missing": (completion(choices=[{"index": 0, "finish_reason": "stop"}]), "no `message`"),
    "content-null": (completion(choices=[{"index": 0, "message": {"role": "assistant", "content": None},
                                          "finish_reason": "stop"}]), "no text"),
    "content-number": (completion(choices=[{"index": 0, "message": {"role": "assistant", "content": 7}}]),
                       "not text"),
}


@pytest.mark.parametrize("reply, words", MALFORMED.values(), ids=MALFORMED.keys())
def test_llm_replies_malformed_body_is_a_malformed_reply_naming_the_problem(reply, words):
    with FakeLLM([reply]) as fake:
        llm = LLM(fake.url, "scripted", "KERNEL_LSP_TEST_NO_KEY")
        with pytest.raises(MalformedReply) as e:
            llm.complete([{"role": "user", "content": "hi"}], Budget(10_000, 60))
    assert words in str(e.value) and fake.url in str(e.value)


def test_llm_replies_content_as_parts_and_odd_usage_are_read():
    parts = [{"type": "text", "text": "```python\n"}, {"type": "text", "text": "x = 1\n```"}]
    reply = completion(choices=[{"index": 0, "message": {"role": "assistant", "content": parts}}],
                       usage={"total_tokens": "many"})
    with FakeLLM([reply]) as fake:
        budget = Budget(10_000, 60)
        got = LLM(fake.url, "scripted", "KERNEL_LSP_TEST_NO_KEY").complete([{"role": "user", "content": "hi"}],
                                                                           budget)
    assert got.text == "```python\nx = 1\n```" and got.tokens == 0 and budget.tokens == 0


@pytest.mark.parametrize("bad", ["not-json", "choices-string"])
def test_llm_replies_malformed_reply_is_a_failed_candidate_and_the_next_one_is_asked(tmp_path, bad):
    with FakeLLM([MALFORMED[bad][0], FIXED_KERNEL]) as fake:
        path = workspace(tmp_path, fake)
        code, p, stderr = optimize(path, "--apply", "--candidates", "2", "--rounds", "1")
    assert "Traceback" not in stderr
    first = p["candidates"][0]
    assert first["verdict"] == "unparsable" and MALFORMED[bad][1] in first["reason"], first
    assert code == 0 and p["accepted"]
