"""Writing an accepted proposal into its file (`kernel-lsp optimize --apply`), exactly.

The file is read once, as bytes, before the proposal is made; the write keeps what the proposal did not change:
the encoding (UTF-8, a byte order mark, or a PEP 263 declaration), the line endings (the proposer gives the new
text the file's own, edits.restyle), the file's mode, and a symlink (its target is written; the link stays a
link). The write is atomic (a temporary file beside the target, then a rename), and refused with an `ApplyError`
when the file changed or vanished since it was read: an edit verified for other text is never written.
"""

from __future__ import annotations

import io
import os
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path

from ..check import decode_source


class ApplyError(Exception):
    """The proposal cannot be written; the message says why, for the user."""


@dataclass
class SourceFile:
    path: Path  # as the user named it
    target: Path  # the file that holds the bytes (a symlink's target)
    data: bytes
    text: str  # decoded, line endings as in the file
    encoding: str  # what Python reads it as ("utf-8-sig" with a byte order mark)


def read_source_file(path: Path) -> SourceFile:
    """The file as it is now; raises ApplyError when it cannot be read as Python source."""
    target = Path(os.path.realpath(path))
    try:
        data = target.read_bytes()
    except OSError as e:
        raise ApplyError(f"cannot read {path}: {e.strerror}") from None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = decode_source(data)
    except (SyntaxError, UnicodeDecodeError) as e:
        raise ApplyError(f"cannot read {path} as Python source: {e}") from None
    return SourceFile(Path(path), target, data, text, encoding)


def write_back(source: SourceFile, new_text: str) -> None:
    """Write `new_text` in place of `source`, as it was read; raises ApplyError."""
    try:
        data = new_text.encode(source.encoding)
    except UnicodeEncodeError as e:
        raise ApplyError(f"the change holds {e.object[e.start:e.end]!r}, which {source.encoding} (the file's "
                         "encoding) cannot write; not applied") from None
    try:
        now = source.target.read_bytes()
        st = source.target.stat()
    except FileNotFoundError:
        raise ApplyError(f"{source.path} was removed while the proposal was being made; not applied") from None
    except OSError as e:
        raise ApplyError(f"cannot read {source.path} again: {e.strerror}; not applied") from None
    if now != source.data:
        raise ApplyError(f"{source.path} changed while the proposal was being made; not applied (ask again)")
    tmp = source.target.with_name(f".{source.target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                pass  # only root may give a file away; the mode is kept either way
        os.replace(tmp, source.target)
    except OSError as e:
        raise ApplyError(f"cannot write {source.path}: {e.strerror}; not applied") from None
    finally:
        tmp.unlink(missing_ok=True)
