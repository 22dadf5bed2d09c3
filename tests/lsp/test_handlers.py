"""A handler that fails is answered as InternalError, logged, and shown to the user (never a silent null)."""

from __future__ import annotations

import logging

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError

from kernel_lsp.lsp.handlers import _guard


class FakeServer:
    def __init__(self):
        self.messages: list[types.ShowMessageParams] = []

    def window_show_message(self, params: types.ShowMessageParams) -> None:
        self.messages.append(params)


async def test_handlers_failure_is_an_internal_error_with_a_visible_message(caplog):
    @_guard
    def hover(ls, params):
        raise KeyError("no such kernel")

    ls = FakeServer()
    with caplog.at_level(logging.ERROR, logger="kernel_lsp.server"):
        with pytest.raises(JsonRpcInternalError, match="hover failed: KeyError"):
            await hover(ls, None)
    (shown,) = ls.messages
    assert shown.type == types.MessageType.Error and "hover failed" in shown.message
    assert any("hover failed" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_handlers_success_passes_the_result_through():
    @_guard
    async def code_action(ls, params):
        return ["an action"]

    ls = FakeServer()
    assert await code_action(ls, None) == ["an action"] and ls.messages == []
