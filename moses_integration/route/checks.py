"""Everything that stops a tuning before it starts, found in one pass before the first stage: empty or
mismatched files, relative paths in a moses.ini, rescoring features without their model files (or with
files of another kind), phrase tables without the word alignments a feature reads, a working folder of
another tuning, another tuning's folder that cannot lend its runs (``--runs-from``), and a run made with
other files than those of today (:mod:`.made_with`).
"""
from __future__ import annotations

import math
import os
import re
from typing import Sequence

from mosesrnn.features.options import FeatureOptions
from mosesrnn.features.registry import FEATURES
from mosesrnn.formats.moses_ini import parse_ini, phrase_tables, read_ini_text
from mosesrnn.formats.phrase_table import PhraseTableError, first_entries
from mosesrnn.formats.text_file import read_lines
from mosesrnn.io.declared import declare_input
from mosesrnn.io.digests import content_sha256
from mosesrnn.models import FEATURE_MODELS, MODEL_KINDS, MODEL_OPTIONS, kind_of

from ..mert_moses import MosesTools, relative_paths
from .made_with import made_with_problems, made_with_warnings
from .plan import PLAN, RoutePlan, as_saved, changed_models, dev_halves, saved_plan
from .reuse import tuned_by

__all__ = ["MIN_HELD_OUT", "SMALL_HELD_OUT", "plan_problems", "plan_warnings", "rescoring_problems"]

#: What a reused run must share with this tuning: the sets it was tuned and tested on, and how.
_SHARED = ("dev_src", "dev_ref", "test_src", "test_ref")
#: ``--select-on half``: the fewest held-out dev sentences (with a reference) a stage is chosen on, and the fewest
#: that choose it without a warning.
MIN_HELD_OUT, SMALL_HELD_OUT = 2, 100


def plan_problems(plan: RoutePlan, tools: MosesTools, tools_missing: list[str]) -> list[str]:
    """Everything that stops the tuning before it starts, the user's files first, then the machine's programs
    (``tools``, those of them missing in ``tools_missing``); when nothing else does, a run here or to be lent that
    was made with other files or another decoder than ``tools``' (:func:`~.made_with.made_with_problems`)."""
    problems = []
    for path in (plan.dev_src, plan.dev_ref, plan.ini, plan.baseline, plan.test_src, plan.test_ref):
        if path is not None and os.path.isfile(path) and os.path.getsize(path) == 0:
            problems.append(f"{path} is empty")
    for ini in filter(None, (plan.ini, plan.baseline)):
        relative = relative_paths(ini) if os.path.isfile(ini) and os.path.getsize(ini) else []
        problems += [f"{where} is relative, but mert-moses.pl decodes inside its working directory: use an absolute "
                     f"path" for where in relative]
        if relative:
            problems.append(f"to make every path of {ini} absolute: mosesrnn moses-ini {ini} --absolute-paths "
                            "--relative-to DIR -o NEW.ini, DIR being where they are relative to")
    for source, reference in ((plan.dev_src, plan.dev_ref), (plan.test_src, plan.test_ref)):
        if all(os.path.isfile(path) and os.path.getsize(path) for path in (source, reference)):
            lines = (len(read_lines(source)), len(read_lines(reference)))
            if lines[0] != lines[1]:
                problems.append(f"{source} has {lines[0]} lines but {reference} has {lines[1]}")
    for system, ini in plan.systems():
        rescoring = plan.rescoring_of(system)
        if rescoring is not None:
            problems += rescoring_problems(rescoring, _probes(plan))
            if plan.word_alignments(system) and os.path.isfile(ini) and os.path.getsize(ini):
                problems += _alignment_problems(ini)
    problems += _unused_option_problems(plan) + _selection_problems(plan) + _validation_problems(plan)
    problems += _plan_record_problems(plan)
    problems += _reuse_problems(plan)
    problems += _lender_gone_problems(plan.work_dir)
    if not problems and not tools_missing:
        problems = made_with_problems(plan, tools)
    return problems + tools_missing


def plan_warnings(plan: RoutePlan) -> list[str]:
    """What the tuning may run with but should say: runs whose record of what they were made with predates that of
    mert-moses.pl and the MERT programs (:func:`~.made_with.made_with_warnings`); with ``--select-on half``, rescoring
    models that do not record what they were validated on; a held-out dev half
    (``--select-on half``) of fewer than :data:`SMALL_HELD_OUT` sentences, whose BLEU chooses the stage on little."""
    warnings = made_with_warnings(plan) + _unrecorded_validation_warnings(plan)
    held_out = _held_out_references(plan)
    if held_out is None or not MIN_HELD_OUT <= held_out < SMALL_HELD_OUT:
        return warnings
    return warnings + [f"--select-on half: the held-out dev half ({plan.dev_ref}'s even lines) has {held_out} "
                       f"sentences: its BLEU chooses the stage on little (a dev set of {2 * SMALL_HELD_OUT} lines or "
                       f"more holds out {SMALL_HELD_OUT})"]


def _held_out_references(plan: RoutePlan) -> int | None:
    """How many of the held-out dev half's references (:func:`.plan.dev_halves`) are not blank; None: no selection,
    or no dev reference to read."""
    if not plan.selecting() or not os.path.isfile(plan.dev_ref):
        return None
    references = read_lines(plan.dev_ref)
    return sum(1 for line in dev_halves(len(references))[1] if references[line].strip())


def _unused_option_problems(plan: RoutePlan) -> list[str]:
    """``--nbest-distinct`` without a stage that decodes n-best lists: it would change nothing, in silence."""
    if plan.nbest_distinct and not any(plan.retunes(system) for system, _ in plan.systems()):
        return ["--nbest-distinct shapes the rescoring stage's n-best lists, and this tuning has no such stage (give "
                "--rescore FEATURES or a model file, or --rescore-baseline): leave it out"]
    return []


def _selection_problems(plan: RoutePlan) -> list[str]:
    """``--select-on half`` with a held-out dev half of fewer than :data:`MIN_HELD_OUT` sentences with a reference:
    nothing to choose on."""
    held_out = _held_out_references(plan)
    if held_out is None or held_out >= MIN_HELD_OUT:
        return []
    return [f"--select-on half: {plan.dev_ref} holds {held_out} non-blank references at its even lines (the held-out "
            f"dev half the stage is chosen on): it needs {MIN_HELD_OUT} at least, a dev set of {2 * MIN_HELD_OUT} "
            f"lines or more (or tune without --select-on)"]


def _validation_problems(plan: RoutePlan) -> list[str]:
    """``--select-on half``: a rescoring model validated (and stopped early) on the dev source or reference, the same
    content by sha256 (its file's record: :func:`~mosesrnn.train.validation.validation_record`), read the held-out
    half the stage is chosen on."""
    dev = {content_sha256(path): what for what, path in (("source", plan.dev_src), ("reference", plan.dev_ref))
           if os.path.isfile(path)} if plan.selecting() else {}
    return [f"--select-on half: {model} was validated on {record['file']} ({record['lines']} lines), the dev "
            f"{dev[record['sha256']]} by content: it read the held-out half the stage is chosen on; train it on a "
            f"share of its own corpus (`--valid-share`), or tune without --select-on"
            for model, record in _validated_on(plan).items() if record and record.get("sha256") in dev]


def _unrecorded_validation_warnings(plan: RoutePlan) -> list[str]:
    """``--select-on half``: the rescoring models trained before model files recorded what they were validated on."""
    unrecorded = [model for model, record in _validated_on(plan).items() if record is None] if plan.selecting() else []
    if not unrecorded:
        return []
    return [f"--select-on half: no record of what {', '.join(unrecorded)} {'was' if len(unrecorded) == 1 else 'were'} "
            f"validated on (trained by an older mosesrnn), so whether the held-out dev half was read cannot be "
            f"checked"]


def _validated_on(plan: RoutePlan) -> dict[str, dict | None]:
    """What each rescoring model file of the plan was validated on (its ``info["validation"]``; None: it does not
    say), by path; a file that is missing or no model file is left to :func:`rescoring_problems`."""
    from mosesrnn.io.model_store import model_info  # torch: as in rescoring_problems
    found = {}
    for system, _ in plan.systems():
        rescoring = plan.rescoring_of(system)
        for path in (rescoring.models().values() if rescoring is not None else ()):
            if path in found or not os.path.isfile(path):
                continue
            try:
                record = model_info(path).get("validation")
            except ValueError:
                continue
            found[path] = record if isinstance(record, dict) else None
    return found


def _lender_gone_problems(work_dir: str) -> list[str]:
    """Links in the working folder whose files are gone (the ``--runs-from`` folder that lent them was moved or
    removed): the runs they stood for are neither here nor there."""
    if not os.path.isdir(work_dir):
        return []
    dangling = sorted(name for name in os.listdir(work_dir) if os.path.islink(os.path.join(work_dir, name))
                      and not os.path.exists(os.path.join(work_dir, name)))
    if not dangling:
        return []
    first = os.path.join(work_dir, dangling[0])
    return [f"{first} links to {os.readlink(first)}, which is gone ({len(dangling)} such links in {work_dir}): the "
            f"--runs-from folder that lent them was moved or removed; put it back, or remove the links to run those "
            f"runs here"]


def rescoring_problems(rescoring: FeatureOptions, probes: Sequence[tuple[str, str]] = ()) -> list[str]:
    """What stops the rescoring stages, found before the first stage: a feature without its model file, a model
    file of another kind, one that is not a model file, one its kind refuses for its option (a joint model of
    another orientation than its option's: :meth:`~mosesrnn.models.ModelKind.refusal`), a feature that cannot be
    built or that computes no number for one of ``probes`` (``(source, translation)``: :func:`_building_problems`)."""
    from mosesrnn.io.model_store import ModelFileError, model_kind  # torch: the wing loads it only to read models
    problems = []
    for name in rescoring.names():
        needs = FEATURES[name].needs
        if needs and getattr(rescoring, needs) is None:
            problems.append(f"the {name} rescoring feature needs its model file: give {MODEL_OPTIONS[needs].flag}")
    for option, path in rescoring.models().items():
        if not os.path.isfile(path):
            continue
        wanted = kind_of(option)
        try:
            found = model_kind(path)
        except ModelFileError as error:
            problems.append(str(error))
            continue
        if found != wanted.kind:
            problems.append(f"{path} is {MODEL_KINDS[found]}, but {MODEL_OPTIONS[option].flag} takes "
                            f"{wanted.holds}")
        elif refusal := wanted.refusal(path, option):
            problems.append(refusal)
    return problems or _building_problems(rescoring, probes)


def _building_problems(rescoring: FeatureOptions, probes: Sequence[tuple[str, str]]) -> list[str]:
    """What stops building the rescoring features themselves, their models loaded: each model against its option
    and against the others (``--reverse-model`` of the ``-m`` model's direction, a setting no feature takes), as the
    rescoring stage would find it after MERT; then each feature that reads no word alignment computes ``probes``,
    and one that gives no finite number (a damaged model) is refused here, not on the lists MERT made."""
    from mosesrnn.features.selection import select_features  # torch: as above
    from mosesrnn.pipeline.nbest import NbestPair
    pairs = [NbestPair(source, translation, path="a probe") for source, translation in probes]
    try:
        features = select_features(rescoring)
        for feature in features:
            option = FEATURE_MODELS.get(feature.spec.name)
            if not pairs or (option is not None and kind_of(option).reads_alignments):
                continue
            for pair, value in zip(pairs, feature.values(pairs)):
                if not math.isfinite(value):
                    return [f"the {feature.spec.name} rescoring feature computes {value} for {pair.target!r} given "
                            f"{pair.source!r}, not a number: is its model file damaged?"]
    except ValueError as error:
        return [str(error)]
    return []


def _probes(plan: RoutePlan) -> list[tuple[str, str]]:
    """What the rescoring features compute before any work: the dev set's first sentence with its reference, and
    an empty line (Moses decodes one to an empty translation)."""
    if not all(os.path.isfile(path) and os.path.getsize(path) for path in (plan.dev_src, plan.dev_ref)):
        return []
    return [(read_lines(plan.dev_src)[0], read_lines(plan.dev_ref)[0]), ("", "")]


def _alignment_problems(ini: str) -> list[str]:
    """A feature reads the hypotheses' word alignment: every phrase table of ``ini`` must hold word alignments."""
    problems = []
    for table in phrase_tables(parse_ini(read_ini_text(ini)), ini):
        path = next((p for p in (table.path, (table.path or "") + ".gz") if p and "$" not in p and os.path.isfile(p)),
                    None)
        if path is None:
            continue  # a binarized table: Moses says it when it decodes
        declare_input(path)  # a file the declared moses.ini names
        try:
            first = first_entries(path, 1)
        except PhraseTableError as error:
            problems.append(str(error))
            continue
        if not first or len(first[0].fields) < 4 or not re.fullmatch(r"(\d+-\d+ ?)+", first[0].fields[3].strip()):
            problems.append(f"{path}:1: no word alignment (the fourth field): the bilm features read each "
                            f"hypothesis' word alignment, which Moses writes only from a table that holds them "
                            f"(train-model.perl keeps them by default)")
    return problems


def _plan_record_problems(plan: RoutePlan) -> list[str]:
    try:
        saved = saved_plan(plan.work_dir)
    except ValueError as error:
        return [f"{error}: tune into a fresh folder"]
    if saved is None:
        leftovers = [name for name in os.listdir(plan.work_dir) if not name.startswith(".")] \
            if os.path.isdir(plan.work_dir) else []
        return [f"{plan.work_dir} holds files of something else ({', '.join(sorted(leftovers)[:3])}...): tune into "
                f"a fresh folder"] if leftovers else []
    current = as_saved(plan.record(), saved)
    problems = []
    if changed := changed_models(current, saved):
        problems.append(f"{plan.work_dir}: the rescoring model {', '.join(dict.fromkeys(changed.values()))} changed "
                        f"since the tuning there began ({os.path.join(plan.work_dir, PLAN)} records its sha256): "
                        f"continue it with the model it began with, or tune into a fresh folder")
        for key, name in changed:  # said: the other differences alone below
            current[key][name] = saved[key][name]
    differing = sorted(key for key in set(saved) | set(current) if saved.get(key) != current.get(key))
    if differing:
        problems.append(f"{plan.work_dir} holds a tuning of other {', '.join(differing)} "
                        f"({os.path.join(plan.work_dir, PLAN)}): continue it with the command that started it, or tune "
                        f"into a fresh folder")
    return problems


def _reuse_problems(plan: RoutePlan) -> list[str]:
    """Why ``plan.runs_from`` cannot lend its runs: no plan of a tuning there, other dev or test sets, other
    MERT settings or n-best size, or none of the plan's moses.ini tuned there."""
    if plan.runs_from is None:
        return []
    try:
        saved = saved_plan(plan.runs_from)
    except ValueError:
        saved = {}  # damaged: said below
    if saved is None:
        return [f"--runs-from {plan.runs_from}: no {PLAN} of a `mosesrnn tune` there"]
    if not isinstance(saved.get("files"), dict):
        return [f"--runs-from {os.path.join(plan.runs_from, PLAN)}: not the plan `mosesrnn tune` writes (damaged, "
                f"or of another program)"]
    current = plan.record()
    differing = [name for name in _SHARED if saved["files"].get(name) != current["files"][name]]
    differing += ["nbest_size"] if saved.get("nbest_size") != current["nbest_size"] else []
    differing += [f"mert {name}" for name, value in current["mert"].items()
                  if name != "threads" and (saved.get("mert") or {}).get(name) != value]
    if differing:
        return [f"--runs-from {plan.runs_from} tuned with other {', '.join(differing)}: its runs cannot serve "
                f"this tuning"]
    if not any(tuned_by(saved, ini) for _, ini in plan.systems()):
        return [f"--runs-from {plan.runs_from} tuned none of {', '.join(ini for _, ini in plan.systems())} (by "
                f"their paths)"]
    return []
