"""What a tuning is of, before anything runs: the plan, the options it is built from, where each run keeps
its files, and everything that stops it from starting.

The plan (``plan.json`` in the working folder) records what the tuning is of, so that the same command
continues a stopped tuning and another one refuses the folder.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field, fields

from mosesrnn.errors import MosesRNNError
from mosesrnn.features.options import FeatureOptions
from mosesrnn.formats.text_file import read_lines
from mosesrnn.io.compressed import atomic_output
from mosesrnn.io.declared import declare_input
from mosesrnn.io.digests import content_sha256
from mosesrnn.io.json_file import read_json
from mosesrnn.models import MODEL_OPTIONS, MODELS

from ..mert_moses import MertSettings

__all__ = ["PLAN", "SELECT_ON", "TUNING_HALF", "ON_TUNING_HALF", "dev_halves", "tuning_half", "write_tuning_half",
           "BASELINE", "SYSTEM", "RESCORED", "BASELINE_RESCORED", "RETUNED", "BASELINE_RETUNED", "TUNED", "RESCORING",
           "CONTROL", "Stage", "RETUNING_STAGES", "stage_named", "RoutePlan", "RouteOptions", "StageFiles",
           "stage_files", "file_record", "model_record", "as_saved", "changed_models", "save_plan", "saved_plan"]

PLAN = "plan.json"
#: How the stages are chosen on dev (``tune --select-on``): ``none``, on nothing; ``half``, on the dev half held out
#: from every tuning, Moses' MERT and mosesrnn's (:func:`dev_halves`).
SELECT_ON = ("none", "half")
#: Where a selecting tuning keeps the dev lines Moses' MERT tunes on (:meth:`RoutePlan.moses_dev`).
TUNING_HALF = "tuning-half"
#: The value of plan.json's and the report's ``moses_tuned_on`` when Moses' MERT tuned on the tuning half; a plan or a
#: report without the key tuned Moses on the whole dev set.
ON_TUNING_HALF = "tuning half"
BASELINE, SYSTEM, RESCORED, BASELINE_RESCORED = "baseline", "system", "rescored", "baseline-rescored"
#: The control of each rescored stage: the same n-best lists re-tuned by the same MERT (seed, starting weights)
#: with no new feature, which separates what the features add from what a second tuning pass adds.
RETUNED, BASELINE_RETUNED = "retuned", "baseline-retuned"
#: The kinds of stage: a system tuned by Moses' MERT (mert-moses.pl); its n-best lists rescored with the new
#: features and re-tuned by mosesrnn's MERT; the control, those lists re-tuned without them.
TUNED, RESCORING, CONTROL = "tuned", "rescored", "control"


@dataclass(frozen=True)
class Stage:
    """A stage of the route: what the report measures, one row of it.

    Attributes:
        name: its name in the report (``system``, ``rescored``, ``baseline-retuned``, another system's).
        kind: :data:`TUNED`, :data:`RESCORING` or :data:`CONTROL`.
        system: the system whose runs' files it reads (itself for a tuned system; the system whose n-best
            lists a rescored stage or a control re-tunes).
        control: a rescored stage's control (None for the others).
    """

    name: str
    kind: str = TUNED
    system: str = ""
    control: str | None = None

    def __post_init__(self):
        if not self.system:
            object.__setattr__(self, "system", self.name)

    @property
    def rescored(self) -> bool:
        """Its lists rescored with the new features."""
        return self.kind == RESCORING

    @property
    def retuned(self) -> bool:
        """A control: its lists re-tuned without them."""
        return self.kind == CONTROL

    def test_hyp(self, files: StageFiles) -> str:
        """Its test translations in one run's files."""
        return files.rescored_hyp if self.rescored else files.retuned_hyp if self.retuned else files.test_hyp

    def dev_hyp(self, files: StageFiles) -> str:
        """Its dev translations in one run's files."""
        return (files.rescored_dev_hyp if self.rescored else files.retuned_dev_hyp if self.retuned
                else files.dev_hyp)


#: The stages that re-tune a system's n-best lists, by name: each rescored stage (with its control) and each control.
RETUNING_STAGES: dict[str, Stage] = {stage.name: stage for stage in (
    Stage(RESCORED, RESCORING, SYSTEM, RETUNED), Stage(BASELINE_RESCORED, RESCORING, BASELINE, BASELINE_RETUNED),
    Stage(RETUNED, CONTROL, SYSTEM), Stage(BASELINE_RETUNED, CONTROL, BASELINE))}


def stage_named(name: str) -> Stage:
    """The stage called ``name``: one of :data:`RETUNING_STAGES`, else a system tuned by Moses' MERT."""
    return RETUNING_STAGES.get(name) or Stage(name)
#: The features that read each hypothesis' word alignment (the lists are decoded with it): those of the model kinds
#: that read it (the joint models').
_READS_ALIGNMENTS = frozenset(feature for row in MODELS.values() if row.reads_alignments for option in row.options
                              for feature in option.features)
#: The model files plan.json's first version recorded, given or not.
_FIRST_MODELS = ("model", "reverse_model", "lm")
#: FeatureOptions fields added after plan.json's first version (the other model files among them): recorded only
#: when set, so that a tuning started before them continues.
_ADDED_LATER = ("normalizer", *(name for name in MODEL_OPTIONS if name not in _FIRST_MODELS))


@dataclass(frozen=True)
class RoutePlan:
    """What to tune and how (see :mod:`moses_integration.route`). ``rescoring`` None: no rescoring stage for the system;
    ``baseline_rescoring`` None: none for the baseline. ``baseline_control``: the baseline's n-best lists are
    re-tuned without any new feature (its control, ``baseline-retuned``) even when they are not rescored, which
    measures what a second tuning pass alone adds to the baseline (a rescored baseline always has its control).
    ``runs_from``: another tuning's folder whose finished Moses MERT runs of the same moses.ini are taken (linked),
    not run again (:mod:`~moses_integration.route.reuse`); it changes no number, so the plan does not record it.
    ``select_on`` ``half``: every MERT — Moses' for each system, mosesrnn's for every rescored stage and control — tunes
    on one half of the dev set (:func:`dev_halves`), and every stage is also measured on the other half, where the
    report chooses its stage.
    ``nbest_distinct``: the rescoring stage's n-best lists hold distinct translations (Moses' ``distinct``)."""

    dev_src: str
    dev_ref: str
    ini: str
    test_src: str
    test_ref: str
    work_dir: str
    runs: int = 3
    baseline: str | None = None
    rescoring: FeatureOptions | None = None
    nbest_size: int = 100
    mert: MertSettings = field(default_factory=MertSettings)
    tokenize: str = "none"
    others: tuple[tuple[str, str], ...] = ()
    baseline_rescoring: FeatureOptions | None = None
    baseline_control: bool = False
    runs_from: str | None = None
    select_on: str = "none"
    nbest_distinct: bool = False

    def __post_init__(self):
        if self.select_on not in SELECT_ON:
            raise MosesRNNError(f"select_on is one of {', '.join(SELECT_ON)}, not {self.select_on!r}")
        if (self.baseline_rescoring or self.baseline_control) and not self.baseline:
            raise MosesRNNError("rescoring the baseline, or re-tuning its n-best lists, needs a baseline")
        names = [name for name, _ in self.others]
        taken = {BASELINE, SYSTEM, *RETUNING_STAGES}
        bad = [name for name in names if name in taken or not name.replace("-", "").replace(".", "").replace(
            "+", "").replace("_", "").isalnum()]
        if bad or len(set(names)) < len(names):
            raise MosesRNNError(f"other systems need distinct names of letters, digits and - . + _ (not baseline, "
                                f"system, rescored or a control's): {', '.join(bad) or 'a name given twice'}")

    def systems(self) -> list[tuple[str, str]]:
        """``(name, moses.ini)`` of each system tuned: the baseline first, the system, then the others."""
        return ([(BASELINE, self.baseline)] if self.baseline else []) + [(SYSTEM, self.ini)] + list(self.others)

    def rescoring_of(self, system: str) -> FeatureOptions | None:
        """The features ``system``'s n-best lists are rescored with, or None."""
        return {SYSTEM: self.rescoring, BASELINE: self.baseline_rescoring}.get(system)

    def retunes(self, system: str) -> bool:
        """Whether ``system``'s n-best lists are decoded and re-tuned by mosesrnn's MERT: its control, beside its
        rescored stage or (the baseline with ``baseline_control``) alone."""
        return self.rescoring_of(system) is not None or (system == BASELINE and self.baseline_control)

    def word_alignments(self, system: str) -> bool:
        """Whether ``system``'s n-best lists must hold each hypothesis' word alignment (a feature reads it)."""
        rescoring = self.rescoring_of(system)
        return rescoring is not None and not _READS_ALIGNMENTS.isdisjoint(rescoring.names())

    def record(self) -> dict:
        """What a continued tuning must share with the one it continues: the inputs (absolute, with their sizes; the
        rescoring models with the sha256 of their content too: :func:`model_record`) and every option that changes a
        number."""
        files = {name: file_record(getattr(self, name)) for name in ("dev_src", "dev_ref", "ini", "test_src",
                                                                       "test_ref", "baseline")}
        record = {"files": files, "runs": self.runs, "rescoring": _rescoring_record(self.rescoring),
                  "nbest_size": self.nbest_size, "mert": asdict(self.mert), "tokenize": self.tokenize,
                  "others": {name: file_record(ini) for name, ini in self.others}}
        if self.baseline_rescoring:  # absent otherwise, so that the tunings before it continue
            record["baseline_rescoring"] = _rescoring_record(self.baseline_rescoring)
        if self.baseline_control:  # the same
            record["baseline_control"] = True
        if self.select_on != "none":  # the same
            record["select_on"] = self.select_on
            record["moses_tuned_on"] = ON_TUNING_HALF  # a selecting tuning before it tuned Moses on the whole dev set
        if self.nbest_distinct:  # the same
            record["nbest_distinct"] = True
        return record

    def lists(self) -> str:
        """The rescoring stage's n-best lists in words: ``100-best lists``, or ``100-best distinct lists``."""
        return f"{self.nbest_size}-best {'distinct ' if self.nbest_distinct else ''}lists"

    def selecting(self) -> bool:
        """Whether the stages are chosen on a held-out part of the dev set (``select_on`` other than none)."""
        return self.select_on != "none"

    def moses_dev(self) -> tuple[str, str]:
        """``(source, reference)`` that Moses' MERT tunes on: the dev set's tuning half (its odd lines, written by
        :func:`write_tuning_half` into the working folder's ``tuning-half/``) when selecting, else the whole dev
        set."""
        if not self.selecting():
            return self.dev_src, self.dev_ref
        folder = os.path.join(self.work_dir, TUNING_HALF)
        return (os.path.join(folder, os.path.basename(self.dev_src)),
                os.path.join(folder, os.path.basename(self.dev_ref)))


@dataclass(frozen=True)
class RouteOptions:
    """Everything ``mosesrnn tune`` is given: the plan, and where Moses' programs are (None: ``$MOSES_BIN``,
    ``$MOSES_SCRIPTS``, ``PATH``; the mert programs: the decoder's folder)."""

    plan: RoutePlan
    moses_bin: str | None = None
    moses_scripts: str | None = None
    mertdir: str | None = None

    @classmethod
    def from_options(cls, **options) -> RouteOptions:
        """The command's options, by name, collected in one call: the plan's own fields as they are, those of
        :class:`MertSettings` (``threads``, ``nbest``...) into its ``mert``, and the rescoring options (those of
        :class:`FeatureOptions`: ``features``, ``model``, ``lm``, ``device``, ``threads``...) into ``rescoring``
        (None when neither a feature nor a model file is named) and, with ``baseline_features`` for ``features``, into
        ``baseline_rescoring``; ``baseline_features`` empty (``--rescore-baseline`` with no feature) sets
        ``baseline_control`` instead: the baseline's control alone. Raises TypeError for a name that none of them
        takes."""
        own = {f.name for f in fields(RoutePlan)} - {"mert", "rescoring", "baseline_rescoring"}
        places = {f.name for f in fields(cls)} - {"plan"}
        unknown = set(options) - own - places - _MERT_FIELDS - _FEATURE_FIELDS - {"baseline_features"}
        if unknown:
            raise TypeError(f"the tuning route takes no option {', '.join(sorted(unknown))}")
        models = {name: options[name] for name in _FEATURE_FIELDS - {"features"} if name in options}
        features, baseline_features = options.get("features"), options.get("baseline_features")
        rescoring = None
        if features is not None or any(models.get(name) for name in MODEL_OPTIONS):
            rescoring = FeatureOptions(features=features, **models)
        plain = {name: options[name] for name in own if name in options}
        if baseline_features is not None and not baseline_features:
            plain["baseline_control"] = True
        plan = RoutePlan(**plain,
                         mert=MertSettings(**{name: options[name] for name in _MERT_FIELDS if name in options}),
                         rescoring=rescoring,
                         baseline_rescoring=FeatureOptions(features=baseline_features, **models)
                         if baseline_features else None)
        return cls(plan, **{name: options.get(name) for name in places})


_MERT_FIELDS = frozenset(f.name for f in fields(MertSettings))
_FEATURE_FIELDS = frozenset(f.name for f in fields(FeatureOptions))


def _rescoring_record(options: FeatureOptions | None) -> dict | None:
    if options is None:
        return None
    defaults = FeatureOptions()
    record = {key: value for key, value in asdict(options).items() if key not in ("device", "threads")
              and not (key in _ADDED_LATER and value == getattr(defaults, key))}
    for key in MODEL_OPTIONS:
        if key in record:
            record[key] = model_record(record[key])
    if "vocab" in record:  # a folder of shortlists
        record["vocab"] = file_record(record["vocab"])
    return record


def as_saved(current: dict, saved: dict) -> dict:
    """The record ``current`` (:meth:`RoutePlan.record`) in the form of ``saved``, the one in plan.json: a plan saved
    before the rescoring models were recorded by content holds each as ``[path, size]``, and is compared in that form
    (all it can tell). Run again, the tuning saves its plan in today's form, so that from then on a model rewritten to
    the same size is refused: what changed before cannot be known either way, and keeping the old form would leave
    the rest of that tuning unchecked."""
    current = json.loads(json.dumps(current))
    for key in ("rescoring", "baseline_rescoring"):
        ours, theirs = current.get(key), saved.get(key)
        if not (isinstance(ours, dict) and isinstance(theirs, dict)):
            continue
        for name, value in ours.items():
            if name in MODEL_OPTIONS and isinstance(value, list) and isinstance(theirs.get(name), list) \
                    and len(theirs[name]) == 2:
                ours[name] = value[:2]
    return current


def changed_models(current: dict, saved: dict) -> dict[tuple[str, str], str]:
    """The rescoring model files that plan.json (``saved``) and the record ``current`` (in ``saved``'s form:
    :func:`as_saved`) name by the same path, but with other content: ``{(rescoring key, model option): path}``."""
    changed = {}
    for key in ("rescoring", "baseline_rescoring"):
        ours, theirs = current.get(key), saved.get(key)
        if isinstance(ours, dict) and isinstance(theirs, dict):
            changed.update({(key, name): value[0] for name, value in ours.items() if name in MODEL_OPTIONS
                            and isinstance(value, list) and isinstance(theirs.get(name), list)
                            and theirs[name][:1] == value[:1] and theirs[name] != value})
    return changed


def dev_halves(sentences: int) -> tuple[list[int], list[int]]:
    """The two fixed halves of a dev set of ``sentences`` sentences, as 0-based line indices: the lines at odd
    line numbers (1st, 3rd, ...) tune (mosesrnn's MERT), those at even line numbers (2nd, 4th, ...) are held out to
    choose on. Alternate lines: both halves cover the whole dev set alike, whatever its order."""
    return list(range(0, sentences, 2)), list(range(1, sentences, 2))


def tuning_half(plan: RoutePlan) -> list[tuple[str, bytes]]:
    """``(path, content)`` of the dev set's tuning half, source then reference: the odd lines (:func:`dev_halves`) of
    each, where :meth:`RoutePlan.moses_dev` names them; empty without a selection."""
    if not plan.selecting():
        return []
    halves = []
    for whole, half in zip((plan.dev_src, plan.dev_ref), plan.moses_dev()):
        lines = read_lines(whole)
        halves.append((half, "".join(f"{lines[k]}\n" for k in dev_halves(len(lines))[0]).encode("utf-8")))
    return halves


def write_tuning_half(plan: RoutePlan) -> None:
    """Write the dev set's tuning half (:func:`tuning_half`), each file whole or not at all, unless it holds those
    lines already."""
    for path, content in tuning_half(plan):
        if os.path.isfile(path) and content_sha256(path) == hashlib.sha256(content).hexdigest():
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with atomic_output(path) as stream:
            stream.write(content)


def save_plan(plan: RoutePlan) -> None:
    """Write ``plan.json`` in the plan's working folder: :meth:`RoutePlan.record`, whole or not at all."""
    with atomic_output(os.path.join(plan.work_dir, PLAN)) as stream:
        stream.write((json.dumps(plan.record(), indent=1) + "\n").encode("utf-8"))


def saved_plan(folder: str) -> dict | None:
    """The record of the plan saved in ``folder`` by :func:`save_plan` (None: no ``plan.json`` there); raises
    MosesRNNError naming the file for one that is damaged or not an object."""
    path = os.path.join(folder, PLAN)
    if not os.path.exists(path):
        return None
    saved = read_json(path, "the plan `mosesrnn tune` writes")
    if not isinstance(saved, dict):
        raise MosesRNNError(f"{path}: not the plan `mosesrnn tune` writes (not an object)")
    return saved


def file_record(path: str | None) -> list | None:
    """How the plan records an input file: its absolute path and its size (None: no such file)."""
    if path is None:
        return None
    return [os.path.abspath(path), os.path.getsize(path) if os.path.isfile(path) else None]


def model_record(path: str | None) -> list | None:
    """How the plan records a rescoring model file: its absolute path, its size and the sha256 of its content, so that
    a model retrained to the same size is told apart (size and sha256 None for no such file)."""
    if path is None:
        return None
    if not os.path.isfile(path):
        return [*file_record(path), None]
    declare_input(path)  # a model file the rescoring stage reads
    return [*file_record(path), content_sha256(path)]


@dataclass(frozen=True)
class StageFiles:
    """Where one run of one system keeps its files (see :mod:`moses_integration.route`)."""

    prefix: str

    @property
    def mert_dir(self) -> str:
        return self.prefix

    @property
    def tuned_ini(self) -> str:
        return os.path.join(self.prefix, "moses.ini")

    @property
    def test_hyp(self) -> str:
        return self.prefix + ".test.hyp"

    @property
    def test_nbest(self) -> str:
        return self.prefix + ".test.nbest"

    @property
    def dev_hyp(self) -> str:
        return self.prefix + ".dev.hyp"

    @property
    def dev_nbest(self) -> str:
        return self.prefix + ".dev.nbest"

    @property
    def dev_rescored(self) -> str:
        return self.prefix + ".dev.nbest.rescored.gz"

    @property
    def test_rescored(self) -> str:
        return self.prefix + ".test.nbest.rescored.gz"

    @property
    def weights(self) -> str:
        return self.prefix + ".rescored.weights"

    @property
    def rescored_hyp(self) -> str:
        return self.prefix + ".rescored.test.hyp"

    @property
    def rescored_dev_hyp(self) -> str:
        return self.prefix + ".rescored.dev.hyp"

    @property
    def retuned_weights(self) -> str:
        return self.prefix + ".retuned.weights"

    @property
    def retuned_hyp(self) -> str:
        return self.prefix + ".retuned.test.hyp"

    @property
    def retuned_dev_hyp(self) -> str:
        return self.prefix + ".retuned.dev.hyp"


def stage_files(plan: RoutePlan, system: str, run: int) -> StageFiles:
    """The files of run ``run`` of ``system`` in the plan's working folder."""
    return StageFiles(os.path.join(plan.work_dir, f"{system}-run{run}"))
