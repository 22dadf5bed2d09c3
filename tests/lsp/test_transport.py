"""The server's reader on bad input: it resynchronizes on the next valid header, answers every request (an error
where the params are bad, ServerNotInitialized before initialize), and never goes silent."""

from __future__ import annotations


import pytest

from tests.lsp.rawclient import RawClient


@pytest.fixture
def client(tmp_path):
    c = RawClient(tmp_path)
    yield c
    c.proc.kill()
    c.proc.wait()


def _initialize(client, root):
    rid = client.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})
    return client.response(rid, timeout=30)


def test_transport_a_request_before_initialize_is_server_not_initialized(client, tmp_path):
    rid = client.request("textDocument/hover", {"textDocument": {"uri": "file:///x.py"},
                                                "position": {"line": 0, "character": 0}})
    assert client.response(rid, timeout=15)["error"]["code"] == -32002
    assert "result" in _initialize(client, tmp_path)  # and the server goes on


@pytest.mark.parametrize("garbage", [
    b"Content-Length: abc\r\n\r\n{}",
    b"Content-Length: -5\r\n\r\n",
    bytes(range(256)) * 3,  # random bytes, newlines among them
    b"\x00\xff\xfe no newline at all, then straight into the next header: ",
], ids=["not-a-number", "negative", "random-bytes", "glued-to-the-next-header"])
def test_transport_resynchronizes_on_the_next_valid_header(client, tmp_path, garbage):
    client.proc.stdin.write(garbage)
    client.proc.stdin.flush()
    assert "result" in _initialize(client, tmp_path)


def test_transport_a_malformed_request_gets_invalid_params(client, tmp_path):
    _initialize(client, tmp_path)
    client.notify("initialized", {})
    rid = client.request("textDocument/hover", {"textDocument": {"uri": 5}, "position": "nope"})
    response = client.response(rid, timeout=15)
    assert response["error"]["code"] == -32602 and "textDocument/hover" in response["error"]["message"]
    rid = client.request("shutdown", None)
    assert "result" in client.response(rid, timeout=15)  # still answering


def test_transport_a_body_that_is_not_json_is_skipped(client, tmp_path):
    body = b"{not json"
    client.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    client.proc.stdin.flush()
    assert "result" in _initialize(client, tmp_path)
