"""Reading LSP messages from stdin robustly: pygls's reader, with three rules it lacks.

- Resynchronization: a header line that is not a valid `Content-Length` (`abc`, `-5`, random bytes) is skipped,
  and the next valid header is found even when garbage without a newline sits in front of it (pygls's exact-match
  reader would stay out of step for good: every later body would be glued to the next header).
- Every request gets a response: a request whose params do not fit the method gets InvalidParams (-32602) naming
  the field (`textDocument.uri: expected a string, got 12`) instead of silence; a body that is not JSON is logged
  and skipped. A string field takes a string only: cattrs would turn `"uri": 12` into "12" and answer null for a
  document that was never open.
- A request before `initialize` gets ServerNotInitialized (-32002), as the LSP specification says.
A length over MAX_BODY (a number that would make the reader wait for bytes that never come) ends the server with
a logged reason rather than a hang.
"""

from __future__ import annotations

import json
import logging
import re

from pygls.exceptions import JsonRpcInvalidParams, JsonRpcServerNotInitialized

HEADER_RE = re.compile(rb"Content-Length: *(\d+)\r?\n$", re.I)
MAX_BODY = 512 << 20


async def run_async(stop_event, reader, protocol, logger: logging.Logger | None = None, error_handler=None) -> None:
    """A drop-in for pygls.io_.run_async (same arguments)."""
    logger = logger or logging.getLogger(__name__)
    content_length = 0
    initialized = False
    strict_strings(protocol._converter)
    while not stop_event.is_set():
        header = await reader.readline()
        if not header:
            break
        if not content_length:
            match = HEADER_RE.search(header)
            if match:
                content_length = int(match.group(1))
                if content_length > MAX_BODY:
                    logger.error("a message claims %d bytes, more than %d: the stream is broken; exiting",
                                 content_length, MAX_BODY)
                    break
            elif header.strip():
                logger.warning("skipping a header line that is not Content-Length: %r", header[:80])
            continue
        if header.strip():
            continue  # another header (Content-Type)
        body = await reader.readexactly(content_length)
        content_length = 0
        if not body:
            break
        try:
            raw = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            logger.warning("skipping a body that is not JSON (%d bytes)", len(body))
            continue
        if not isinstance(raw, dict):
            logger.warning("skipping a message that is not a JSON object")
            continue
        method, msg_id = raw.get("method"), raw.get("id")
        is_request = method is not None and msg_id is not None
        if method == "initialize":
            initialized = True
        elif is_request and not initialized:
            protocol._send_response(msg_id, None, JsonRpcServerNotInitialized().to_response_error())
            continue
        try:
            message = json.loads(body, object_hook=protocol.structure_message)
        except Exception as exc:
            if is_request:
                logger.warning("%s request %s has invalid params: %s", method, msg_id, exc)
                protocol._send_response(msg_id, None, JsonRpcInvalidParams(
                    f"invalid params for {method}: {invalid_fields(exc, raw.get('params'))[:300]}"
                ).to_response_error())
            else:
                logger.warning("dropping a %s notification with invalid params: %s", method, exc)
            continue
        try:
            protocol.handle_message(message)
        except Exception as exc:
            logger.exception("unable to handle message")
            if error_handler:
                from pygls.exceptions import JsonRpcException
                error_handler(exc, JsonRpcException)


_STRICT: set[int] = set()  # converters made strict already (a converter has slots: it cannot be marked)


def strict_strings(converter) -> None:
    """Make `converter` refuse a non-string where the protocol says string (once per converter)."""
    if id(converter) in _STRICT:
        return

    def structure_str(value, _type):
        if not isinstance(value, str):
            raise TypeError("expected a string")
        return value
    converter.register_structure_hook(str, structure_str)
    _STRICT.add(id(converter))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def invalid_fields(exc: Exception, params) -> str:
    """Which fields of `params` did not fit, in the protocol's spelling: `position: expected an object, got
    "nope"`; the exception's first line when cattrs cannot say."""
    try:
        import cattrs
        problems = cattrs.transform_error(exc.__cause__ or exc)  # pygls raises InvalidParams from cattrs's error
    except Exception:
        problems = []
    out: list[str] = []
    for problem in problems:
        what, _, where = problem.rpartition(" @ $")
        keys = [_camel(k) for k in re.findall(r"\.(\w+)|\[\d+\]", where) if k]
        if keys[:1] == ["params"]:  # the whole message was structured: its params are what the client sent
            keys = keys[1:]
        if not keys:
            continue
        value, path = params, []
        for key in keys:  # the first level that is not an object is the field to name
            if not isinstance(value, dict):
                break
            path.append(key)
            value = value.get(key)
        else:
            expected = what.rsplit("expected ", 1)[-1] if "expected " in what else what
            out.append(f"{'.'.join(path)}: expected {expected}, got {json.dumps(value)[:60]}")
            continue
        out.append(f"{'.'.join(path[:-1]) if len(path) > 1 else path[0] if path else 'params'}: expected an object, "
                   f"got {json.dumps(value)[:60]}")
    unique = list(dict.fromkeys(out))
    return "; ".join(unique) if unique else str(exc).splitlines()[0]


def install() -> None:
    """Make pygls's stdio server read with `run_async`."""
    import pygls.server
    pygls.server.run_async = run_async
