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


def test_handlers_each_server_the_factory_makes_has_every_handler_and_none_is_made_at_import():
    """The server is made by `create_server()` (esbonio's way), not at import: server.py once built one as it loaded,
    and handlers.py imported it to register on, so the two imported each other."""
    from kernel_lsp.lsp import handlers, server
    from kernel_lsp.lsp.main import create_server
    assert not [name for name, value in vars(server).items() if isinstance(value, server.KernelLanguageServer)]
    one, two = create_server(), create_server()
    try:
        assert one is not two
        for made in (one, two):
            assert set(made.protocol.fm.features) >= {method for method, _, _ in handlers.FEATURES}
            assert {types.INITIALIZE, types.TEXT_DOCUMENT_DID_SAVE, types.SHUTDOWN} <= set(made.protocol.fm.features)
            assert set(made.protocol.fm.commands) == {name for name, _ in handlers.COMMANDS}
    finally:
        one.stop_everything()
        two.stop_everything()
