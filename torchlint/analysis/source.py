"""Python source bytes to text, decoded as Python decodes them (BOM, PEP 263 coding cookie,
else UTF-8) with line ends normalised to ``\\n``: what the engine lints and what the project
reads of the modules a file imports, by one decoder."""

from __future__ import annotations

import io
import tokenize


class UndecodableSource(Exception):
    """The bytes are not text Python would read; ``line``/``column`` (1-based) say where,
    ``help`` what to do about it (may be empty)."""

    def __init__(self, line: int, column: int, message: str, help: str = ""):
        super().__init__(message)
        self.line, self.column, self.message, self.help = line, column, message, help


def decode_source(data: bytes) -> str:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # unknown codec in the coding cookie, or a cookie that contradicts the BOM
        raise UndecodableSource(getattr(exc, "lineno", None) or 1, 1, f"cannot decode: {exc.msg}") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        bad = data[exc.start : exc.start + 1]
        raise UndecodableSource(
            line,
            column,
            f"cannot decode as {encoding}: byte {bad!r} at line {line} ({exc.reason})",
            help="save the file as UTF-8 or declare its encoding with a `# -*- coding: ... -*-` line",
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    # Python treats \r\n and \r as line ends; ast positions assume the same.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text
