"""The one place that reads and writes PyTorch files: model files of every kind and training states.

Written with ``torch.save`` (atomically, with Ctrl-C held back until the file is whole) and read
with ``torch.load(weights_only=True)``: besides the tensors everything is plain lists, dicts,
strings and numbers, so loading a file cannot run code. Every way a file can fail to be what was
asked for (missing, a folder, empty, truncated, text, gzip, another program's pickle or checkpoint,
a newer format, a model of another kind) raises one line naming the file and why:
:class:`ModelFileError` for model files, :class:`StateFileError` for a training state.

A model file is a dict with ``format_version`` and ``kind`` (:data:`~mosesrnn.io.roles.MODEL_KINDS`;
a file without ``kind`` is an encoder-decoder's, as version 1 and 2 files are); each model family
reads its own keys (:mod:`mosesrnn.encdec.model_file`, :mod:`mosesrnn.cslm.model_file`) and
passes its format version and migrations.
"""
from __future__ import annotations

import hashlib
import os
import pickle
from typing import Callable, Mapping

import torch

from ..version import __version__
from .atomic import atomic_file
from .compressed import open_raw, read_head
from .roles import ENCODER_DECODER, MODEL_KINDS
from .signals import signals_deferred

__all__ = ["ModelFileError", "StateFileError", "save_file", "read_model_file", "load_weights", "halve_weights",
           "read_state_file", "model_kind", "file_digest"]


#: Storage dtypes of weights that are widened to fp32 when a model is loaded.
_HALF_DTYPES = (torch.float16, torch.bfloat16)


class ModelFileError(ValueError):
    """A file that cannot be used as the model asked for; the message names it and says why."""


class StateFileError(ValueError):
    """A training state (``state.pt``) that cannot be resumed from; the message names it and says why."""


def save_file(path: str, contents: dict) -> None:
    """Write ``contents`` (tensors and plain values) to ``path`` with ``torch.save``, atomically; Ctrl-C and
    SIGTERM wait until the file is whole (:mod:`mosesrnn.io.signals`)."""
    with signals_deferred(), atomic_file(path) as stream:
        torch.save(contents, stream)


def _load(path: str, map_location, refuse: Callable[[str], ValueError]) -> object:
    """``torch.load(weights_only=True)`` with every failure as ``refuse(why)``."""
    try:
        with open_raw(path) as stream:
            return torch.load(stream, map_location=map_location, weights_only=True)
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
    raises ModelFileError if they do not fit it. Weights stored in half precision (a shipped file half the
    size, :func:`halve_weights`) are computed in fp32, as every other model's."""
    with torch.device("meta"):  # skip the random initialisation; the weights are loaded below
        model = build()
    state = {name: tensor.float() if tensor.dtype in _HALF_DTYPES else tensor
             for name, tensor in contents["state_dict"].items()}
    try:
        model.load_state_dict(state, assign=True)
    except (RuntimeError, TypeError, AttributeError) as error:
        raise ModelFileError(f"{path}: its weights do not fit its configuration ({str(error).splitlines()[0]})") \
            from None
    return model.eval()


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
    """The kind of model a mosesrnn model file holds (:data:`~mosesrnn.io.roles.MODEL_KINDS`)."""
    contents = _load(path, "cpu", lambda reason: ModelFileError(f"{path} is not a mosesrnn model file: {reason}"))
    if not isinstance(contents, dict) or "format_version" not in contents:
        raise ModelFileError(f"{path} is not a mosesrnn model file: a PyTorch file, but not one that mosesrnn "
                             f"wrote (it has no format_version)")
    kind = contents.get("kind", ENCODER_DECODER)
    if kind not in MODEL_KINDS:
        raise ModelFileError(f"{path}: a model of an unknown kind {kind!r} (a newer mosesrnn's?)")
    return kind


def file_digest(path: str) -> str:
    """A short hash of a file's bytes, for signatures."""
    with open_raw(path) as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()[:12]


def _starts_like_a_zip_or_pickle(path: str) -> bool:
    head = read_head(path, 4)
    return head.startswith(b"PK\x03\x04") or head[:1] == b"\x80"


def _what_it_looks_like(path: str) -> str:
    """A few words on a file's first bytes: empty, gzip, text (quoted) or binary."""
    head = read_head(path, 64)
    if not head:
        return "an empty file"
    if head.startswith(b"\x1f\x8b"):
        return "gzip-compressed data"
    if head.startswith(b"PK\x03\x04"):
        return f"a zip archive of {os.path.getsize(path):,} bytes"
    try:
        text = head.decode("utf-8").split("\n")[0]
    except UnicodeDecodeError:
        return "binary data"
    return f"text starting {text[:40]!r}"
