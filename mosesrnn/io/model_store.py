"""The one place that reads and writes PyTorch files: model files of every kind and training states.

Written with ``torch.save`` (atomically, with Ctrl-C held back until the file is whole) and read
with ``torch.load(weights_only=True)``: besides the tensors everything is plain lists, dicts,
strings and numbers, so loading a file cannot run code. Every way a file can fail to be what was
asked for (missing, a folder, empty, truncated, text, gzip, another program's pickle or checkpoint,
a newer format, a model of another kind, bytes changed since they were written (the CRC-32s of the
zip archive, which ``torch.load`` does not check), weights that do not fit the model's configuration
or hold NaN or infinite values) raises one line naming the file and why:
:class:`ModelFileError` for model files, :class:`StateFileError` for a training state.

A model file is a dict with ``format_version`` and ``kind`` (:data:`~mosesrnn.models.MODEL_KINDS`;
a file without ``kind`` is an encoder-decoder's, as version 1 and 2 files are); each model family
reads its own keys (:mod:`mosesrnn.encdec.model_file`, :mod:`mosesrnn.cslm.model_file`) and
passes its format version and migrations.
"""
from __future__ import annotations

import math
import os
import pickle
import zipfile
from typing import BinaryIO, Callable, Mapping

import torch

from ..errors import MosesRNNError
from ..models import ENCODER_DECODER, MODEL_KINDS
from ..version import __version__
from .atomic import atomic_file
from .compressed import open_raw, read_head
from .digests import content_sha256
from .signals import signals_deferred

__all__ = ["ModelFileError", "StateFileError", "save_file", "read_model_file", "load_weights", "halve_weights",
           "read_state_file", "model_kind", "model_info", "file_digest"]


#: Storage dtypes of weights that are widened to fp32 when a model is loaded.
_HALF_DTYPES = (torch.float16, torch.bfloat16)
#: The first bytes of a zip archive, the format of ``torch.save``.
_ZIP_MAGIC = b"PK\x03\x04"
#: How much of a record is read at a time to check its CRC-32.
_CHUNK = 1 << 20


class ModelFileError(MosesRNNError):
    """A file that cannot be used as the model asked for; the message names it and says why."""


class StateFileError(MosesRNNError):
    """A training state (``state.pt``) that cannot be resumed from; the message names it and says why."""


def save_file(path: str, contents: dict) -> None:
    """Write ``contents`` (tensors and plain values) to ``path`` with ``torch.save``, atomically; Ctrl-C and
    SIGTERM wait until the file is whole (:mod:`mosesrnn.io.signals`)."""
    with signals_deferred(), atomic_file(path) as stream:
        torch.save(contents, stream)


class _Damaged(Exception):
    """A file whose stored bytes are not those written (raised inside :func:`_load`, refused there)."""


def _load(path: str, map_location, refuse: Callable[[str], ValueError]) -> object:
    """``torch.load(weights_only=True)`` of a file whose records pass their CRC-32 check, with every failure as
    ``refuse(why)``."""
    try:
        with open_raw(path) as stream:
            _check_records(stream)
            return torch.load(stream, map_location=map_location, weights_only=True)
    except _Damaged as damage:
        raise refuse(str(damage)) from None
    except FileNotFoundError:
        raise refuse("there is no such file") from None
    except IsADirectoryError:
        raise refuse("it is a folder (model files are the best.pt or last.pt inside a model folder)") from None
    except pickle.UnpicklingError:
        if _starts_like_a_zip_or_pickle(path):
            # torch's own message suggests weights_only=False, which would run the file's code.
            raise refuse("it holds Python objects beyond tensors and plain values, and loading those would run "
                         "code from the file (do not load it with weights_only=False unless you trust whoever "
                         "made it)") from None
        raise refuse(f"it is not a PyTorch file but {_what_it_looks_like(path)}") from None
    except (RuntimeError, EOFError, OSError, ValueError, KeyError, IndexError, AttributeError, TypeError):
        # a text or damaged file reaches torch's zip and pickle readers in many ways (KeyError 544502645,
        # "pop from empty list", a miniz error...): all of them say the file is not one
        raise refuse(f"it is truncated or damaged ({_what_it_looks_like(path)} that PyTorch cannot read)") from None


def _check_records(stream: BinaryIO) -> None:
    """Raise :class:`_Damaged` unless every record of a zip-format file (what ``torch.save`` writes) holds the bytes
    whose CRC-32 was written with it; ``stream`` is left at its start. ``torch.load`` checks no CRC: a flipped byte
    in a tensor's data loads as a wrong weight. Costs one more read of the file, at about 1.6 GB/s (3 ms for the
    4.5 MB shipped model). Other files are left to ``torch.load`` to refuse."""
    if stream.read(4) != _ZIP_MAGIC:
        stream.seek(0)
        return
    try:
        archive = zipfile.ZipFile(stream)
    except zipfile.BadZipFile:
        raise _Damaged(f"it is truncated or damaged (a zip archive of {os.fstat(stream.fileno()).st_size:,} bytes "
                       f"without the directory a whole one ends with)") from None
    with archive:
        for record in archive.infolist():
            if record.CRC == 0:  # torch.save under set_crc32_options(False) records none
                continue
            try:
                with archive.open(record) as member:
                    while member.read(_CHUNK):
                        pass
            except (zipfile.BadZipFile, EOFError, NotImplementedError, ValueError) as error:
                why = "does not hold the bytes written (their CRC-32 differs)" if "CRC-32" in str(error) \
                    else f"cannot be read ({error})"
                raise _Damaged(f"it is damaged: its record {record.filename} {why}") from None
    stream.seek(0)


def read_model_file(path: str, kind: str, version: int,
                    migrations: Mapping[int, Callable[[dict], dict]] | None = None,
                    required: tuple[str, ...] = (), map_location="cpu") -> dict:
    """The contents of a mosesrnn model file of ``kind``, migrated to format ``version``.

    ``migrations`` maps an older version to the function that turns it into the next;
    ``required``: the keys the family needs. Raises :class:`ModelFileError` (see the module
    docstring), also for a model of another kind.
    """
    def refuse(reason: str) -> ModelFileError:
        return ModelFileError(f"{path} is not a mosesrnn model file: {reason}")

    contents = _load(path, map_location, refuse)
    if not isinstance(contents, dict) or "format_version" not in contents:
        raise refuse("a PyTorch file, but not one that mosesrnn wrote (it has no format_version)")
    found = contents.get("kind", ENCODER_DECODER)
    if found != kind:
        name = MODEL_KINDS.get(found, repr(found))
        raise ModelFileError(f"{path} is {name}, not {MODEL_KINDS[kind].split(' (')[0]}")
    current = contents["format_version"]
    while migrations and current in migrations:
        try:
            contents = migrations[current](contents)
        except (KeyError, TypeError, ValueError) as error:
            raise refuse(f"a version-{current} file that cannot be read ({error})") from None
        current = contents["format_version"]
    if current != version:
        raise ModelFileError(f"{path}: unsupported model format version {current} "
                             f"(this mosesrnn {__version__} reads up to {version})")
    missing = [key for key in required if key not in contents]
    if missing:
        raise refuse(f"it has no {', '.join(missing)}")
    return contents


def load_weights(path: str, contents: dict, build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    """The network ``build()`` makes, holding the weights of a model file's ``contents`` (eval mode);
    raises ModelFileError if its configuration cannot be built, or its weights do not fit it (names and shapes)
    or hold NaN or infinite values. Weights stored in half precision (a shipped file half the size,
    :func:`halve_weights`) are computed in fp32, as every other model's."""
    try:
        with torch.device("meta"):  # skip the random initialisation; the weights are loaded below
            model = build()
    except (KeyError, TypeError, ValueError) as error:
        raise ModelFileError(f"{path}: its configuration cannot be read ({error})") from None
    stored = contents["state_dict"]
    if not isinstance(stored, dict) or not all(isinstance(tensor, torch.Tensor) for tensor in stored.values()):
        raise ModelFileError(f"{path} is not a mosesrnn model file: its state_dict is not a table of tensors")
    misfits = _misfits(model.state_dict(), stored)
    if misfits:
        raise ModelFileError(f"{path}: its weights do not fit its configuration ({'; '.join(misfits[:3])}"
                             f"{'; ...' if len(misfits) > 3 else ''})")
    for name, tensor in stored.items():
        # NaN and inf carry into the sum: 1 ms for the shipped model where torch.isfinite takes 15
        if tensor.is_floating_point() and not math.isfinite(tensor.sum(dtype=torch.float32)):
            bad = int((~torch.isfinite(tensor)).sum())
            raise ModelFileError(f"{path}: its weights hold NaN or infinite values ({bad:,} of the {tensor.numel():,} "
                                 f"of {name}): a damaged file, or a training run that diverged")
    state = {name: tensor.float() if tensor.dtype in _HALF_DTYPES else tensor for name, tensor in stored.items()}
    try:
        model.load_state_dict(state, assign=True)
    except (RuntimeError, TypeError, AttributeError) as error:
        raise ModelFileError(f"{path}: its weights do not fit its configuration ({str(error).splitlines()[0]})") \
            from None
    return model.eval()


def _misfits(expected: Mapping[str, torch.Tensor], stored: Mapping[str, torch.Tensor]) -> list[str]:
    """What keeps ``stored`` weights from loading into a network whose state is ``expected``: weights missing,
    unknown, or of another shape (each named)."""
    def shape(tensor: torch.Tensor) -> str:
        return "x".join(map(str, tensor.shape)) or "a scalar"

    return ([f"no {name}" for name in expected if name not in stored] +
            [f"an unknown weight {name}" for name in stored if name not in expected] +
            [f"{name} is {shape(stored[name])}, not {shape(tensor)}" for name, tensor in expected.items()
             if name in stored and stored[name].shape != tensor.shape])


def halve_weights(source: str, output: str) -> None:
    """Write the model file ``source`` again as ``output`` with its floating-point weights in fp16: half the
    bytes, for a model that travels with the code (``examples/model/``); everything else is kept as it is.
    fp16 keeps 11 significant bits, enough for scores (the file's README measures how close)."""
    contents = _load(source, "cpu", lambda reason: ModelFileError(f"{source} is not a model file: {reason}"))
    if not isinstance(contents, dict) or "state_dict" not in contents:
        raise ModelFileError(f"{source} is not a mosesrnn model file: it has no weights")
    state = {name: tensor.half() if tensor.dtype == torch.float32 else tensor
             for name, tensor in contents["state_dict"].items()}
    save_file(output, {**contents, "state_dict": state})


def read_state_file(path: str, version: int) -> dict:
    """A training state written by the training loop (``state.pt``), of ``version``; raises
    :class:`StateFileError` naming the file and what to do when it cannot be resumed from."""
    def refuse(reason: str) -> StateFileError:
        return StateFileError(f"{path} is not a training state to resume from: {reason} (start over with "
                              f"--restart, or remove it)")

    state = _load(path, "cpu", refuse)
    if not isinstance(state, dict) or state.get("version") != version:
        found = state.get("version") if isinstance(state, dict) else None
        raise refuse(f"it is not a mosesrnn training state of version {version}" +
                     (f" (version {found})" if found is not None else ""))
    return state


def model_kind(path: str) -> str:
    """The kind of model a mosesrnn model file holds (:data:`~mosesrnn.models.MODEL_KINDS`)."""
    return _kind_of(path, _model_contents(path))


def model_info(path: str) -> dict:
    """The training facts a mosesrnn model file of any kind records (its ``info``; empty when it has none)."""
    contents = _model_contents(path)
    _kind_of(path, contents)
    return contents["info"] if isinstance(contents.get("info"), dict) else {}


def _model_contents(path: str) -> dict:
    contents = _load(path, "cpu", lambda reason: ModelFileError(f"{path} is not a mosesrnn model file: {reason}"))
    if not isinstance(contents, dict) or "format_version" not in contents:
        raise ModelFileError(f"{path} is not a mosesrnn model file: a PyTorch file, but not one that mosesrnn "
                             f"wrote (it has no format_version)")
    return contents


def _kind_of(path: str, contents: dict) -> str:
    kind = contents.get("kind", ENCODER_DECODER)
    if kind not in MODEL_KINDS:
        raise ModelFileError(f"{path}: a model of an unknown kind {kind!r} (a newer mosesrnn's?)")
    return kind


def file_digest(path: str) -> str:
    """A short hash of a file's bytes, for signatures: the first 12 hex digits of its sha256."""
    return content_sha256(path)[:12]


def _starts_like_a_zip_or_pickle(path: str) -> bool:
    head = read_head(path, 4)
    return head.startswith(_ZIP_MAGIC) or head[:1] == b"\x80"


def _what_it_looks_like(path: str) -> str:
    """A few words on a file's first bytes: empty, gzip, text (quoted) or binary."""
    head = read_head(path, 64)
    if not head:
        return "an empty file"
    if head.startswith(b"\x1f\x8b"):
        return "gzip-compressed data"
    if head.startswith(_ZIP_MAGIC):
        return f"a zip archive of {os.path.getsize(path):,} bytes"
    try:
        text = head.decode("utf-8").split("\n")[0]
    except UnicodeDecodeError:
        return "binary data"
    return f"text starting {text[:40]!r}"
