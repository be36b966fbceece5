"""The text layer of a moses.ini: lines as Moses reads them, and edits that keep every other byte.

Moses reads the file line by line (``moses/Parameter.cpp``, ``ReadConfigFile``): text from the
first ``#`` is a comment, ``[name]`` opens a section, a section may occur several times and its
values add up. :func:`parse_ini` keeps each line's exact bytes, so a rewrite can change a few
tokens and leave every other byte, comment and line ending as it was.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

__all__ = ["MosesIniError", "IniLine", "read_ini_text", "parse_ini", "section_values", "split_comment",
           "replace_tokens"]


class MosesIniError(ValueError):
    """A moses.ini we cannot (or must not) rewrite; the message starts with ``file:line:``."""

    def __init__(self, path: str, line_no: int | None, problem: str):
        where = f"{path}:{line_no}" if line_no else path
        super().__init__(f"{where}: {problem}")
        self.path, self.line_no, self.problem = path, line_no, problem


@dataclass(frozen=True)
class IniLine:
    """One physical line: ``raw`` with its ending, its ``section``, and ``value`` as Moses sees it
    (comment removed, trimmed; empty for blank, comment-only and ``[section]`` lines)."""

    number: int
    raw: str
    section: str | None
    value: str


def read_ini_text(path: str) -> str:
    """The text of a moses.ini, line endings kept; raises MosesIniError (file:line) if it is not UTF-8."""
    with open(path, "rb") as stream:
        data = stream.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line_no = data.count(b"\n", 0, error.start) + 1
        raise MosesIniError(path, line_no, f"not valid utf-8 at byte {error.start}") from None


def parse_ini(text: str) -> list[IniLine]:
    """Split a moses.ini into :class:`IniLine` objects, keeping each line's exact bytes."""
    lines, section = [], None
    for number, raw in enumerate(re.findall(r"[^\n]*\n|[^\n]+$", text), start=1):  # lines end at \n only
        value = raw.split("#", 1)[0].strip(" \t\r\n")
        if value.startswith("["):
            if "]" in value:
                section = value[1:value.index("]")]
            lines.append(IniLine(number, raw, section, ""))
        else:
            lines.append(IniLine(number, raw, section, value))
    return lines


def section_values(lines: Sequence[IniLine], section: str) -> list[IniLine]:
    """The lines of ``section`` that hold a value (no blank or comment-only lines)."""
    return [line for line in lines if line.section == section and line.value]


def split_comment(raw: str) -> tuple[str, str, str]:
    """(content, comment, line ending) of a raw line; the comment keeps its leading '#'."""
    body = raw.rstrip("\r\n")
    content, hash_sign, comment = body.partition("#")
    return content, hash_sign + comment, raw[len(body):]


def replace_tokens(content: str, replacements: dict[int, str]) -> str:
    """Replace whitespace-separated tokens by index, keeping the spacing between them."""
    tokens = list(re.finditer(r"\S+", content))
    for index in sorted(replacements, reverse=True):
        token = tokens[index]
        content = content[:token.start()] + replacements[index] + content[token.end():]
    return content
