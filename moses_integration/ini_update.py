"""The one moses.ini updater: a phrase table pointed at a table with appended feature columns, and
(:func:`update_moses_ini`, what ``mosesrnn moses-ini`` calls) every path made absolute, a NeuralLM added.

The file is read the way Moses reads it (see :mod:`mosesrnn.formats.moses_ini`). Only the lines that must change
are rewritten; every other byte, comment and line ending stays as it was.

What changes, for the phrase table chosen by name:

- current format: the ``[feature]`` line gets ``num-features`` raised by the number of appended
  columns, ``path=`` set to the scored table (or its binarized form), and ``tuneable-components``
  (if present) extended with ``true``; its ``[weight]`` line becomes ``Name= v1 ... vn w1 w2``;
- legacy format (``[ttable-file]`` + ``[weight-t]``): the ``nscores`` and path fields of the
  table's line change and one ``[weight-t]`` line per new column is inserted after its weights.

The phrase tables are found and named as Moses names them by
:func:`~mosesrnn.formats.moses_ini.phrase_tables`.
"""
from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from mosesrnn.formats.moses_ini import (
    IniLine,
    MosesIniError,
    PhraseTable,
    parse_ini,
    phrase_tables,
    pick_phrase_table,
    read_ini_text,
    replace_tokens,
    section_values,
    split_comment,
    split_weight_line,
)
from mosesrnn.formats.phrase_table import count_scores
from mosesrnn.io.compressed import atomic_output
from mosesrnn.models import DECODER_FEATURES, resolve

from .binarize import BINARY_FORMATS, moses_table_path
from .ini_paths import PathChange, absolute_paths, check_no_space
from .new_columns import new_column_weights, scored_columns

__all__ = ["IniUpdate", "IniRewrite", "rewrite_ini", "updated_ini", "update_moses_ini"]

SUPPORTED_TYPES = ("PhraseDictionaryMemory", "PhraseDictionaryCompact", "PhraseDictionaryOnDisk")
WHY_UNSUPPORTED = {
    "PhraseDictionaryBinary": "the binary format Moses' documentation lists as obsolete; mosesrnn does not "
                              "rebuild it: use a PhraseDictionaryCompact or PhraseDictionaryMemory table",
    "ProbingPT": "a probing table must be rebuilt with CreateProbingPT, which mosesrnn does not drive: "
                 "use a PhraseDictionaryCompact or PhraseDictionaryMemory table",
}
# Moses' SearchAlgorithm values for phrase-based decoding: 0 stack, 1 cube pruning, 4 batched stack.
PHRASE_BASED_SEARCH = ("0", "1", "4")


@dataclass(frozen=True)
class IniUpdate:
    """The feature :func:`rewrite_ini` changed (name, type, line), how, and the new text."""

    feature: str
    type: str
    feature_line: int
    old_num_features: int
    new_num_features: int
    weights: tuple[float, ...]
    table_path: str
    text: str
    path_changes: tuple[PathChange, ...] = ()
    previous_path: str | None = None  # the feature's path before, as the ini wrote it


def _select(tables: Sequence[PhraseTable], feature: str | None, path: str) -> PhraseTable:
    chosen = pick_phrase_table([t.name for t in tables], feature)
    if len(chosen) == 1:
        return next(table for table in tables if table.name == chosen[0])
    names = ", ".join(f"{t.name} ({t.type})" for t in tables)
    if not tables:
        raise MosesIniError(path, None, "no phrase table in [feature] or [ttable-file]")
    if feature is None:
        raise MosesIniError(path, None, f"several phrase tables: {names}; choose one with --feature")
    raise MosesIniError(path, None, f"no phrase table named {feature}; the phrase tables are: {names}")


def _check_decoder(lines: Sequence[IniLine], tables: Sequence[PhraseTable], path: str) -> None:
    search = section_values(lines, "search-algorithm")
    if search and search[0].value not in PHRASE_BASED_SEARCH:
        raise MosesIniError(path, search[0].number, f"[search-algorithm] {search[0].value} is chart or "
                            "syntax decoding; mosesrnn scores the phrase pairs of phrase-based systems only")
    if any(t.legacy for t in tables) and any(not t.legacy for t in tables):
        raise MosesIniError(path, None, "phrase tables in both [feature] and legacy [ttable-file]: "
                            "Moses numbers them inconsistently; convert the file to the current format")


def _check_table(table: PhraseTable, path: str) -> None:
    where = table.line.number
    if table.type not in SUPPORTED_TYPES:
        why = WHY_UNSUPPORTED.get(table.type, "mosesrnn can rewrite only " + ", ".join(SUPPORTED_TYPES))
        raise MosesIniError(path, where, f"{table.name} is a {table.type}: {why}")
    if table.num_features is None:
        raise MosesIniError(path, where, f"{table.name} has no num-features=")
    if table.path is None:
        raise MosesIniError(path, where, f"{table.name} has no path=")
    for key in ("input-factor", "output-factor"):
        if "0" not in table.args.get(key, "0").split(","):
            raise MosesIniError(path, where, f"{table.name} has {key}={table.args[key]}: it does not "
                                "translate surface words (factor 0), which is what mosesrnn scores")
    if table.args.get("tuneable", "true").lower() in ("false", "no", "n", "0"):
        raise MosesIniError(path, where, f"{table.name} has tuneable=false: MERT would never tune the "
                            "weights of the new columns (it is probably a component of a multi-model table)")


def _set_arg(content: str, key: str, value: str) -> str:
    pattern = re.compile(rf"(?<!\S){re.escape(key)}=\S*")
    return pattern.sub(lambda _: f"{key}={value}", content, count=1)


def _rewrite_feature_line(table: PhraseTable, num: int, table_path: str, add: int) -> str:
    content, comment, ending = split_comment(table.line.raw)
    content = _set_arg(content, "num-features", str(num))
    content = _set_arg(content, "path", table_path)
    if "tuneable-components" in table.args:
        extended = table.args["tuneable-components"] + ",true" * add
        content = _set_arg(content, "tuneable-components", extended)
    return content + comment + ending


def _weight_line(lines: Sequence[IniLine], table: PhraseTable, path: str) -> tuple[IniLine, list[str]]:
    found = [(line, split[1]) for line in section_values(lines, "weight")
             if (split := split_weight_line(line.value)) and split[0] == table.name]
    if not found:
        raise MosesIniError(path, None, f"no [weight] line '{table.name}= ...' for {table.name}")
    if len(found) > 1:
        raise MosesIniError(path, found[1][0].number, f"{table.name} has several [weight] lines")
    line, values = found[0]
    if len(values) != table.num_features:
        raise MosesIniError(path, line.number, f"{table.name} has num-features={table.num_features} "
                            f"but {len(values)} weights; fix the file before adding columns")
    return line, values


def _rewrite_current(lines: list[str], ini: Sequence[IniLine], table: PhraseTable,
                     weights: tuple[float, ...], table_path: str, path: str) -> None:
    weight_line, values = _weight_line(ini, table, path)
    num = table.num_features + len(weights)
    lines[table.line.number - 1] = _rewrite_feature_line(table, num, table_path, len(weights))
    _, comment, ending = split_comment(weight_line.raw)
    new_values = " ".join(values + [repr(w) for w in weights])
    lines[weight_line.number - 1] = f"{table.name}= {new_values}{' ' + comment if comment else ''}{ending}"


def _rewrite_legacy(lines: list[str], ini: Sequence[IniLine], tables: Sequence[PhraseTable],
                    table: PhraseTable, weights: tuple[float, ...], table_path: str, path: str) -> None:
    weight_lines = section_values(ini, "weight-t")
    expected = sum(t.num_features for t in tables)
    if len(weight_lines) != expected:
        raise MosesIniError(path, None, f"[weight-t] has {len(weight_lines)} weights but the [ttable-file] "
                            f"tables have {expected} scores; fix the file before adding columns")
    offset = sum(t.num_features for t in tables[:tables.index(table)])
    last = weight_lines[offset + table.num_features - 1]
    content, comment, ending = split_comment(table.line.raw)
    new_fields = {3: str(table.num_features + len(weights)), 4: table_path}
    lines[table.line.number - 1] = replace_tokens(content, new_fields) + comment + ending
    ending = split_comment(last.raw)[2] or "\n"
    lines[last.number - 1] = last.raw + "".join(repr(w) + ending for w in weights)


def _table_path(table: PhraseTable, text_table: str, binary: str | None, path: str) -> str:
    if binary is not None and table.type not in BINARY_FORMATS:
        raise MosesIniError(path, table.line.number, f"{table.name} is a {table.type}, which reads the "
                            "text table itself: --binary is only for PhraseDictionaryCompact and "
                            "PhraseDictionaryOnDisk")
    return moses_table_path(text_table, table.type, binary)


def rewrite_ini(text: str, weights: Sequence[float], table: str, feature: str | None = None,
                binary: str | None = None, path: str = "moses.ini") -> IniUpdate:
    """Rewrite the text of a moses.ini for a table with ``len(weights)`` appended columns.

    ``table`` is the scored text table; it is written as the feature's path exactly as given,
    or, for a binarized feature type, as ``binary`` (default: the name ``mosesrnn binarize``
    gives). ``path`` names the file in error messages. Pure: reads and writes no file. Raises
    :class:`MosesIniError` when the file cannot be rewritten safely, with the reason.
    """
    ini = parse_ini(text)
    tables = phrase_tables(ini, path)
    _check_decoder(ini, tables, path)
    chosen = _select(tables, feature, path)
    _check_table(chosen, path)
    table_path = _table_path(chosen, table, binary, path)
    weights = tuple(weights)
    lines = [line.raw for line in ini]
    if chosen.legacy:
        legacy = [t for t in tables if t.legacy]
        _rewrite_legacy(lines, ini, legacy, chosen, weights, table_path, path)
    else:
        _rewrite_current(lines, ini, chosen, weights, table_path, path)
    return IniUpdate(chosen.name, chosen.type, chosen.line.number, chosen.num_features,
                     chosen.num_features + len(weights), weights, table_path, "".join(lines),
                     previous_path=chosen.path)


def updated_ini(ini_path: str, table: str, add: int | None = None, features: Sequence[str] | None = None,
                weights: Sequence[float] | None = None, feature: str | None = None, binary: str | None = None,
                absolute_to: str | None = None) -> IniUpdate:
    """``ini_path`` pointed at the scored ``table`` and its new columns: the :class:`IniUpdate`, text included.

    The new columns and their initial weights come from :func:`new_column_weights`; without
    ``features`` and ``weights``, the column names are taken from the table's sidecar (see
    :func:`scored_columns`) when it has one. See :func:`rewrite_ini` for what changes.
    Given ``absolute_to``, ``table`` and ``binary`` are written as absolute paths (resolved
    against the current directory, where they were given), then every other relative path of
    the ini is made absolute against the directory ``absolute_to`` (see
    :func:`~moses_integration.ini_paths.absolute_paths`).
    A table whose columns the ini counts already (a tuned ini pointed at a pruned copy of its
    table) only gets the new path. Refuses a table whose first line does not have exactly the new
    num-features scores. Raises
    MosesRNNError (its subclass :class:`~mosesrnn.formats.moses_ini.MosesIniError` for the files),
    PhraseTableError and OSError.
    """
    implicit = add is None and features is None and weights is None  # the columns are the sidecar's
    if features is None and weights is None:
        features = scored_columns(table)
    weights = new_column_weights(add, features, weights)
    if absolute_to is not None:
        table, binary = os.path.abspath(table), binary and os.path.abspath(binary)
    for path in filter(None, (table, binary)):
        check_no_space(path)
    text = read_ini_text(ini_path)
    update = rewrite_ini(text, weights, table, feature, binary, ini_path)
    columns = count_scores(table)
    if implicit and columns == update.old_num_features:
        if _reads_already(ini_path, update.previous_path, table):
            raise MosesIniError(table, 1, f"{ini_path} reads this table already, with its {columns} score columns: "
                                f"nothing to add (give the table `mosesrnn score` wrote)")
        # the ini counts the table's columns already (a tuned system pointed at its pruned table): keep its weights
        update = rewrite_ini(text, (), table, feature, binary, ini_path)
    if absolute_to is not None:
        text, changes = absolute_paths(update.text, absolute_to)
        update = dataclasses.replace(update, text=text, path_changes=tuple(changes))
    if columns != update.new_num_features:
        raise MosesIniError(table, 1, f"{columns} score columns, but {update.feature} "
                            f"({ini_path}:{update.feature_line}) would have num-features="
                            f"{update.old_num_features}+{len(update.weights)}={update.new_num_features}")
    return update


def _reads_already(ini_path: str, previous: str | None, table: str) -> bool:
    """Whether the ini's table path (relative: to the folder Moses runs in, or the ini's own) is ``table``."""
    places = [previous, os.path.join(os.path.dirname(ini_path), previous)] if previous else []
    return any(os.path.isfile(place) and os.path.samefile(place, table) for place in places)


@dataclass(frozen=True)
class IniRewrite:
    """What :func:`update_moses_ini` wrote: the new text, the phrase table's change (None without a
    ``table``, the path as given), the paths made absolute against ``base`` (None: none were), the
    decoder features added (a NeuralLM, a BilingualNPLM: each what its row's
    :attr:`~mosesrnn.models.DecoderFeature.adds` returned), the table."""

    text: str
    update: IniUpdate | None
    path_changes: tuple[PathChange, ...]
    base: str | None
    table: str | None = None
    decoder_features: tuple = ()

    def messages(self, output: str) -> list[str]:
        """What the rewrite did to ``output`` (``-``: stdout), line by line, with its warnings."""
        shown = "(stdout)" if output == "-" else output
        update, lines = self.update, []
        if update is not None:
            lines.append(f"{shown}: {update.feature} ({update.type}, line {update.feature_line}) now reads "
                         f"{update.table_path} with num-features={update.new_num_features}; "
                         + (f"added weights {' '.join(repr(w) for w in update.weights)}" if update.weights else
                            "its weights kept (the ini counts the table's columns already)"))
            if not os.path.isabs(update.table_path):
                lines.append(f"warning: path={update.table_path} is relative: Moses resolves it against the folder "
                             f"it runs in, and mert-moses.pl decodes inside its working directory, where it breaks; "
                             f"give an absolute --table ($PWD/{update.table_path}) or --absolute-paths")
        lines += [added.message(shown) for added in self.decoder_features]
        if self.base is not None:
            lines += _path_change_messages(shown, self.path_changes, self.base)
        if update is not None and update.type in BINARY_FORMATS:
            lines.append(f"{update.type} reads the binarized table: build it with\n  mosesrnn binarize "
                         f"{self.table} --format {BINARY_FORMATS[update.type]} -o {update.table_path}")
        return lines


def _path_change_messages(shown: str, changes: Sequence[PathChange], base: str) -> list[str]:
    lines = [f"{shown}: {len(changes)} relative path(s) made absolute against {base}"]
    lines += [f"  line {change.line_no}: {change.old} -> {change.new}" for change in changes]
    missing = [change for change in changes if not change.exists]
    lines += [f"warning: line {change.line_no}: nothing at {change.new}" for change in missing]
    if missing:
        lines.append("  (are the paths relative to another directory? name it with --relative-to)")
    return lines


def update_moses_ini(ini_path: str, table: str | None, output: str, add: int | None = None,
                     features: Sequence[str] | None = None, weights: Sequence[float] | None = None,
                     feature: str | None = None, binary: str | None = None, absolute_to: str | None = None,
                     decoder: Mapping[str, tuple[str, float]] | None = None) -> IniRewrite:
    """Write ``output`` (``-``: stdout), whole or not at all: ``ini_path`` rewritten, and say how.

    Given ``table``: :func:`updated_ini` of the arguments (the phrase table pointed at it, its new
    columns' weights, and with ``absolute_to`` every path absolute). Without one, and given
    ``absolute_to``: only every relative path made absolute against that directory
    (:func:`~moses_integration.ini_paths.absolute_paths`). Given ``decoder``, ``{name: (NPLM file, weight)}`` by
    the names of :data:`~mosesrnn.models.DECODER_FEATURES` (``cslm``, ``bilm``): each family's feature inside
    the decoder, added in the registry's order by its row's ``adds`` (``cslm``: a NeuralLM,
    :func:`~moses_integration.neural_lm.with_neural_lm`; ``bilm``: a BilingualNPLM reading the exported joint
    model and its vocabularies, :func:`~moses_integration.bilingual_lm.with_bilingual_lm`), its paths absolute
    too with ``absolute_to``. Raises what :func:`updated_ini` raises.
    """
    update, changes = None, ()
    if table is not None:
        update = updated_ini(ini_path, table, add, features, weights, feature, binary, absolute_to)
        text, changes = update.text, update.path_changes
    else:
        text = read_ini_text(ini_path)
        if absolute_to is not None:
            text, changes = absolute_paths(text, absolute_to)
    added = []
    for name, feature in DECODER_FEATURES.items():
        if decoder and name in decoder:
            path, weight = decoder[name]
            text, line = resolve(feature.adds)(text, ini_path, path, weight, absolute_to is not None)
            added.append(line)
    with atomic_output(output) as stream:
        stream.write(text.encode("utf-8"))
    return IniRewrite(text, update, tuple(changes), absolute_to, table, tuple(added))
