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


def test_transport_a_field_of_the_wrong_type_is_invalid_params_naming_the_field(client, tmp_path):
    """Issue 27 item 10: `uri: 12` was read as the string "12" and hover answered null; the message now names the
    field and what it got."""
    _initialize(client, tmp_path)
    client.notify("initialized", {})
    rid = client.request("textDocument/hover", {"textDocument": {"uri": 12}, "position": {"line": 0, "character": 0}})
    error = client.response(rid, timeout=15).get("error")
    assert error is not None and error["code"] == -32602, error
    assert "textDocument.uri: expected str, got 12" in error["message"], error
    rid = client.request("textDocument/hover", {"textDocument": {"uri": "file:///x.py"}, "position": "nope"})
    assert "position: expected an object, got \"nope\"" in client.response(rid, timeout=15)["error"]["message"]
    uri = (tmp_path / "k.py").as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                            "text": "x = 1\n"}})
    rid = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
    assert "error" not in client.response(rid, timeout=15)  # well-formed params are still served


def test_transport_a_body_that_is_not_json_is_skipped(client, tmp_path):
    body = b"{not json"
    client.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    client.proc.stdin.flush()
    assert "result" in _initialize(client, tmp_path)
