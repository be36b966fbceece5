"""The moses.ini format: lines as Moses reads them, edits that keep every other byte, the phrase tables
it declares, which of them a command means, and the weights.

A format among the formats: our MERT (``mosesrnn mert``) reads and writes weights, ``mosesrnn prune`` ranks by
a tuned moses.ini's phrase-table weights, and the Moses wing (:mod:`moses_integration`) rewrites the file,
all through this one module, which imports only :mod:`mosesrnn.io`.

Moses reads the file line by line (``moses/Parameter.cpp``, ``ReadConfigFile``): text from the
first ``#`` is a comment, ``[name]`` opens a section, a section may occur several times and its
values add up. :func:`parse_ini` keeps each line's exact bytes, so a rewrite can change a few
tokens and leave every other byte, comment and line ending as it was.

:func:`phrase_tables` finds the phrase tables of ``[feature]`` and of the legacy ``[ttable-file]``.
Moses names a feature without ``name=`` after its type and a counter over the unnamed features of
that type (``FeatureFunction::ParseLine``): ``PhraseDictionaryMemory0``, ``…1``. Legacy tables get
the names Moses gives them when it converts the old format (``ConvertWeightArgsPhraseModel``).

The weights are ``Name= v1 v2 ...`` lines: the ``[weight]`` section of a moses.ini, or every line
of a weights file (what ``mosesrnn mert`` writes). One reader of such a line (:func:`split_weight_line`,
under :func:`read_weights`) and one writer (:func:`weights_text`, :func:`replace_weights`) serve every command;
:func:`pick_phrase_table` is the one rule by which a command (``moses-ini``, ``prune``) tells which of an
ini's phrase tables it means.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from mosesrnn.errors import MosesRNNError
from mosesrnn.io.compressed import read_bytes

__all__ = ["MosesIniError", "IniLine", "read_ini_text", "parse_ini", "section_values", "split_comment",
           "replace_tokens", "IniFeature", "declared_features", "is_phrase_table", "is_phrase_table_name",
           "PhraseTable", "phrase_tables", "feature_phrase_tables", "pick_phrase_table", "Weights",
           "split_weight_line", "read_weights", "weights_text", "replace_weights"]

#: A weight line as mert-moses.pl writes it (``Name= v1 v2``), with any blank after the ``=``; ``Name=`` alone
#: has no values.
_WEIGHT_LINE = re.compile(r"^(\S+)=(?:\s+(.+))?$")
#: The names Moses gives phrase-table features (``TranslationModel0`` of a legacy ini, ``PhraseDictionaryMemory0``):
#: how a file of weight lines, which declares no feature, tells a phrase table's weights.
_PHRASE_TABLE_NAME = re.compile(r"(TranslationModel|PhraseDictionary\w*|ProbingPT|Mmsapt)\d+")

Weights = dict[str, tuple[float, ...]]
# [ttable-file] implementation codes, as Parameter::ConvertWeightArgsPhraseModel maps them.
LEGACY_TYPES = {0: "PhraseDictionaryMemory", 1: "PhraseDictionaryBinary", 2: "PhraseDictionaryOnDisk",
                6: "PhraseDictionaryMemory", 8: "PhraseDictionarySuffixArray", 12: "PhraseDictionaryCompact",
                14: "PhraseDictionaryDynSuffixArray", 15: "PhraseDictionaryDynamicCacheBased"}


class MosesIniError(MosesRNNError):
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
    data = read_bytes(path)
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


@dataclass(frozen=True)
class PhraseTable:
    """A phrase-table feature: its Moses name and type, where it is declared, and its
    ``key=value`` arguments (for a legacy table, only its input and output factors)."""

    name: str
    type: str
    line: IniLine
    num_features: int | None
    path: str | None
    legacy: bool
    args: dict


@dataclass(frozen=True)
class IniFeature:
    """A ``[feature]`` line: the feature's type, the name Moses gives it, and its ``key=value`` arguments."""

    type: str
    name: str
    args: dict
    line: IniLine


def declared_features(lines: Sequence[IniLine]) -> list[IniFeature]:
    """The features of ``[feature]`` in order, each named as Moses names it: its ``name=``, else its type and
    the count of the unnamed features of that type before it (``FeatureFunction::ParseLine``), so
    ``NeuralLM name=CSLM`` then ``NeuralLM`` give ``CSLM`` and ``NeuralLM0``."""
    features, unnamed = [], Counter()
    for line in section_values(lines, "feature"):
        feature_type, *tokens = line.value.split()
        args = dict(token.partition("=")[::2] for token in tokens)
        name = args.get("name")
        if name is None:
            name = f"{feature_type}{unnamed[feature_type]}"
            unnamed[feature_type] += 1
        features.append(IniFeature(feature_type, name, args, line))
    return features


def _int_arg(value: str | None, what: str, path: str, line_no: int) -> int | None:
    if value is None:
        return None
    if not value.isdigit():
        raise MosesIniError(path, line_no, f"{what} {value!r} is not a whole number")
    return int(value)


def is_phrase_table(feature: IniFeature) -> bool:
    """Whether a ``[feature]`` line declares a phrase table."""
    return feature.type.startswith("PhraseDictionary") or feature.type in ("ProbingPT", "Mmsapt")


def _current_tables(lines: Sequence[IniLine], path: str) -> list[PhraseTable]:
    return [PhraseTable(feature.name, feature.type, feature.line,
                        _int_arg(feature.args.get("num-features"), "num-features", path, feature.line.number),
                        feature.args.get("path"), False, feature.args)
            for feature in declared_features(lines) if is_phrase_table(feature)]


def _legacy_tables(lines: Sequence[IniLine], path: str) -> list[PhraseTable]:
    tables, index = [], Counter()
    for line in section_values(lines, "ttable-file"):
        tokens = line.value.split()
        if len(tokens) < 5:
            raise MosesIniError(path, line.number, "[ttable-file] line needs 5 fields: "
                                "implementation input-factors output-factors num-scores path")
        code = _int_arg(tokens[0], "phrase-table implementation", path, line.number)
        feature_type = LEGACY_TYPES.get(code, f"implementation {code}")
        name = f"{feature_type}{index[feature_type]}"
        index[feature_type] += 1
        num = _int_arg(tokens[3], "number of scores", path, line.number)
        factors = {"input-factor": tokens[1], "output-factor": tokens[2]}
        tables.append(PhraseTable(name, feature_type, line, num, tokens[4], True, factors))
    return tables


def phrase_tables(lines: Sequence[IniLine], path: str = "moses.ini") -> list[PhraseTable]:
    """All phrase tables declared in ``[feature]`` and (legacy) ``[ttable-file]``, in order."""
    return _current_tables(lines, path) + _legacy_tables(lines, path)


def is_phrase_table_name(name: str) -> bool:
    """Whether ``name`` is one Moses gives a phrase-table feature (for weights that declare no features)."""
    return _PHRASE_TABLE_NAME.fullmatch(name) is not None


def feature_phrase_tables(path: str) -> list[str] | None:
    """The names Moses gives the phrase-table features a moses.ini declares in ``[feature]``; None without a
    ``[feature]`` section (a file of weight lines)."""
    lines = parse_ini(read_ini_text(path))
    if not any(line.section == "feature" for line in lines):
        return None
    return [feature.name for feature in declared_features(lines) if is_phrase_table(feature)]


def pick_phrase_table(names: Sequence[str], feature: str | None,
                      fits: Callable[[str], bool] = lambda name: True) -> list[str]:
    """Which of the phrase tables ``names`` a command means: the one it names (``feature``; none when it is not
    among them), else every one, narrowed to those that ``fits`` when there are several. One left is the choice;
    the command refuses none or several in its own words (``moses-ini`` rewrites a table, ``prune`` ranks by its
    weights)."""
    if feature is not None:
        return [feature] if feature in names else []
    return list(names) if len(names) < 2 else [name for name in names if fits(name)]


def split_weight_line(text: str) -> tuple[str, list[str]] | None:
    """``(name, values as written)`` of a weight line's text (``Name= v1 v2``; ``Name=`` alone has none), or None
    for text that is not one."""
    match = _WEIGHT_LINE.match(text)
    return None if match is None else (match.group(1), (match.group(2) or "").split())


def _weight_line(line: IniLine, path: str) -> tuple[str, tuple[float, ...]]:
    split = split_weight_line(line.value)
    if split is None or not split[1]:
        raise MosesIniError(path, line.number, f"expected 'Name= v1 v2 ...', found {line.value!r}")
    name, values = split
    try:
        return name, tuple(float(value) for value in values)
    except ValueError:
        raise MosesIniError(path, line.number, f"a weight of {name} is not a number") from None


def read_weights(path: str) -> Weights:
    """The dense weights of a moses.ini's ``[weight]`` section (one tuned by mert-moses.pl, say) or of a
    file of weight lines, by feature name ({} where there are none).

    As in Moses, a later line for the same name replaces an earlier one. Raises
    :class:`MosesIniError` (``PATH:LINE: problem``) for a line that is not ``Name= v1 v2 ...``.
    """
    lines = parse_ini(read_ini_text(path))
    has_sections = any(line.section is not None for line in lines)
    weight_lines = section_values(lines, "weight") if has_sections else [line for line in lines if line.value]
    return dict(_weight_line(line, path) for line in weight_lines)


def weights_text(weights: Mapping[str, Sequence[float]], digits: int | None = 9) -> str:
    """``Name= v1 v2`` lines, one per feature, as mert-moses.pl writes and reads them; each value with
    ``digits`` significant digits (None: the shortest text that reads back exactly)."""
    def spell(value) -> str:
        return repr(float(value)) if digits is None else format(float(value), f".{digits}g")

    return "".join(f"{name}= {' '.join(map(spell, values))}\n" for name, values in weights.items())


def replace_weights(text: str, weights: Mapping[str, Sequence[float]], path: str = "moses.ini") -> str:
    """Give the features of ``weights`` these values in the ``[weight]`` section of a moses.ini's ``text``.

    Each feature's ``Name= ...`` line is rewritten (every one, if repeated; not if its values are
    the same) and must hold as many values; a feature without a line gets one after the section's
    last line. Every other byte stays.
    Pure; raises :class:`MosesIniError` for a file without a ``[weight]`` section or a count mismatch.
    """
    ini = parse_ini(text)
    lines = [line.raw for line in ini]
    section = [line for line in ini if line.section == "weight"]
    if not section:
        raise MosesIniError(path, None, "no [weight] section (a legacy-format ini? convert it first)")
    done = set()
    for line in section_values(ini, "weight"):
        name, old = _weight_line(line, path)
        if name not in weights:
            continue
        values = tuple(float(v) for v in weights[name])
        if len(old) != len(values):
            raise MosesIniError(path, line.number, f"{name} has {len(old)} weights here but {len(values)} are "
                                "given: not the same system")
        done.add(name)
        if old != values:  # an unchanged line keeps its spelling
            _, comment, ending = split_comment(line.raw)
            new = weights_text({name: values}, None).rstrip("\n")
            lines[line.number - 1] = f"{new}{' ' + comment if comment else ''}{ending}"
    last = (section_values(ini, "weight") or section)[-1]
    ending = split_comment(last.raw)[2]
    added = weights_text({name: values for name, values in weights.items() if name not in done}, None)
    lines[last.number - 1] += ("" if ending or not added else "\n") + added
    return "".join(lines)
