"""Damaged model files and training states are refused in one line naming the file, never loaded and used.

``torch.load`` checks none of the CRC-32s of the zip archive ``torch.save`` writes: bytes flipped inside a tensor's
stored data loaded as wrong weights, and `mosesrnn score` wrote a table of log p = -1.3M (issue 42). Each model family
(the encoder-decoder, the CSLM, the joint model) is damaged here as a disk or a copy damages a file (bytes flipped,
the file cut short) and as a faulty writer would (a NaN, a weight of another shape), and every command that reads a
model is run on a damaged one.
"""
from __future__ import annotations

import gzip
import shutil
import struct
import zipfile
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from scoring_helpers import TABLE, save_tiny_joint_model, save_tiny_model
from test_hostile import assert_refused, base, ids, rows_with, run, snapshot, workspace_files, ws  # noqa: F401

from mosesrnn.bilm.model_file import load_joint
from mosesrnn.cli import main
from mosesrnn.cslm.config import CSLMConfig
from mosesrnn.cslm.model import CSLM
from mosesrnn.cslm.model_file import TrainedCSLM, load_cslm, save_cslm
from mosesrnn.cslm.scoring import text_stats
from mosesrnn.encdec.model_file import load_encoder_decoder
from mosesrnn.io.model_store import ModelFileError, StateFileError, read_state_file, save_file
from mosesrnn.text.codec import Codec
from mosesrnn.text.tokenizers import MosesWords
from mosesrnn.text.vocab import Vocabulary

SHIPPED = Path(__file__).parent.parent / "examples" / "model" / "tatoeba-small.pt"


def save_tiny_lm(path: str) -> str:
    """A freshly initialised CSLM, whose log Z is about 0 (so that `lm export` takes it); returns ``path``."""
    codec = Codec(MosesWords(), Vocabulary(["<s>", "la", "maison"]))
    torch.manual_seed(0)
    lm = CSLM(CSLMConfig(len(codec.vocabulary), order=3, embed_dim=4, hidden_dims=(8,)))
    stats = text_stats(TrainedCSLM(lm, codec, {}, ""), ["la maison", "la la maison"])
    save_cslm(path, lm, codec, {"log_z_mean": stats.log_z_mean})
    return path


#: family -> (write a tiny model file, load one, the command that reads it with {model} and {out})
FAMILIES = {
    "encoder-decoder": (save_tiny_model, load_encoder_decoder, ["score", str(TABLE), "-m", "{model}", "-o", "{out}"]),
    "cslm": (save_tiny_lm, load_cslm, ["lm", "export", "-m", "{model}", "-o", "{out}"]),
    "joint": (save_tiny_joint_model, load_joint, ["bilm", "export", "-m", "{model}", "-o", "{out}"]),
}


def tensor_records(path: Path) -> list[tuple[int, int]]:
    """``(offset, size)`` in the file of each tensor's stored bytes (the ``.../data/N`` records of the zip)."""
    data = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        records = [info for info in archive.infolist() if "/data/" in info.filename and info.file_size]
    spans = []
    for info in records:
        name_length, extra_length = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
        spans.append((info.header_offset + 30 + name_length + extra_length, info.file_size))
    return spans


def flip_bytes(path: Path, count: int = 64) -> None:
    """Invert the first ``count`` bytes of every tensor's stored data, as the damaged file of issue 42."""
    data = bytearray(path.read_bytes())
    for offset, size in tensor_records(path):
        for index in range(offset, offset + min(count, size)):
            data[index] ^= 0xFF
    path.write_bytes(bytes(data))


def rewrite_weights(path: Path, change) -> str:
    """Save the model file again (with valid CRCs) after ``change(state_dict, name)`` on its first matrix;
    returns what ``change`` says the refusal must mention."""
    contents = torch.load(path, weights_only=True)
    state = contents["state_dict"]
    name = next(name for name, tensor in state.items() if tensor.is_floating_point() and tensor.dim() == 2)
    mention = change(state, name)
    save_file(str(path), contents)
    return mention


def put_nan(state: dict, name: str) -> str:
    state[name][0, 0] = float("nan")
    return f"its weights hold NaN or infinite values (1 of the {state[name].numel():,} of {name})"


def put_inf(state: dict, name: str) -> str:
    state[name][-1, -1] = float("-inf")
    return f"its weights hold NaN or infinite values (1 of the {state[name].numel():,} of {name})"


def add_a_row(state: dict, name: str) -> str:
    rows, columns = state[name].shape
    state[name] = torch.cat([state[name], state[name][:1]])
    return f"its weights do not fit its configuration ({name} is {rows + 1}x{columns}, not {rows}x{columns})"


def drop_a_weight(state: dict, name: str) -> str:
    del state[name]
    return f"its weights do not fit its configuration (no {name})"


CHANGES = {"NaN": put_nan, "inf": put_inf, "a weight of another shape": add_a_row, "a weight missing": drop_a_weight}
CUTS = ("cut by one byte", "cut in half", "cut inside a tensor")
KINDS = ["flipped bytes", *CUTS, *CHANGES]


def damage(path: Path, kind: str) -> str:
    """Damage the model file ``path`` in the way ``kind`` says; returns what its refusal must mention."""
    if kind == "flipped bytes":
        flip_bytes(path)
        return "does not hold the bytes written (their CRC-32 differs)"
    if kind in CUTS:
        offset, size = tensor_records(path)[0]
        whole = path.stat().st_size
        keep = {"cut by one byte": whole - 1, "cut in half": whole // 2, "cut inside a tensor": offset + size // 2}
        path.write_bytes(path.read_bytes()[:keep[kind]])
        return "is not a mosesrnn model file: it is truncated or damaged"
    return rewrite_weights(path, CHANGES[kind])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("family", FAMILIES)
def test_a_damaged_model_file_is_refused_naming_it(tmp_path, family, kind):
    write, load, _ = FAMILIES[family]
    path = tmp_path / "model.pt"
    write(str(path))
    load(str(path))  # whole, it loads
    mention = damage(path, kind)
    with pytest.raises(ModelFileError) as error:
        load(str(path))
    message = str(error.value)
    assert message.startswith(str(path)) and mention in message and "\n" not in message, message


@pytest.mark.parametrize("kind", ["flipped bytes", "cut inside a tensor", "NaN", "a weight of another shape"])
@pytest.mark.parametrize("family", FAMILIES)
def test_each_familys_command_refuses_a_damaged_model_and_writes_nothing(tmp_path, family, kind):
    write, _, command = FAMILIES[family]
    path = tmp_path / "model.pt"
    write(str(path))
    damage(path, kind)
    before = sorted(p.name for p in tmp_path.iterdir())
    out = tmp_path / "out"
    result = CliRunner().invoke(main, [arg.format(model=path, out=out) for arg in command])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    errors = result.stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith(f"Error: {path}"), result.stderr
    assert result.stdout == "" and sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("row", rows_with("models"), ids=ids(rows_with("models")))
def test_every_command_that_reads_a_model_refuses_flipped_bytes(row, ws):  # noqa: F811 (a fixture)
    bad = {}
    for placeholder in row.models:
        path = ws / f"damaged-{placeholder}.pt"
        shutil.copy(workspace_files(ws)[placeholder], path)
        flip_bytes(path)
        bad[placeholder] = str(path)
    before = snapshot(ws)
    result = run(row, ws, **bad)
    assert_refused(result, before, snapshot(ws), *bad.values(), "CRC-32")


def test_the_shipped_model_with_flipped_bytes_scores_nothing(tmp_path):
    """Issue 42's case: 64 bytes flipped in every tensor of the shipped model; `score` wrote 6,229 lines of
    log p = -1.3M and exited 0."""
    model = tmp_path / "tatoeba-small.pt"
    shutil.copy(SHIPPED, model)
    flip_bytes(model)
    table = tmp_path / "table"
    table.write_bytes(b"".join(gzip.open(TABLE).readlines()[:20]))
    out = tmp_path / "scored"
    result = CliRunner().invoke(main, ["score", str(table), "-m", str(model), "-o", str(out), "-q"])
    assert result.exit_code == 1 and result.stderr.splitlines() == [
        f"Error: {model} is not a mosesrnn model file: it is damaged: its record archive/data/0 does not hold the "
        f"bytes written (their CRC-32 differs)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table", "tatoeba-small.pt"]


def test_the_shipped_model_passes_its_checks():
    load_encoder_decoder(str(SHIPPED))


def test_a_damaged_training_state_is_refused_naming_it(tmp_path):
    path = tmp_path / "state.pt"
    save_file(str(path), {"version": 3, "model": {"w": torch.randn(64, 8)}, "best": float("inf")})
    assert read_state_file(str(path), 3)["best"] == float("inf")  # an inf outside the weights is a value
    flip_bytes(path)
    with pytest.raises(StateFileError, match=rf"^{path} is not a training state to resume from: it is damaged: its "
                                             rf"record archive/data/0 does not hold the bytes written .*--restart"):
        read_state_file(str(path), 3)


def test_a_file_written_without_crcs_still_loads(tmp_path):
    """``torch.save`` under ``set_crc32_options(False)`` records CRC 0 everywhere: nothing to check, not damage."""
    path = tmp_path / "model.pt"
    save_tiny_model(str(path))
    contents = torch.load(path, weights_only=True)
    torch.serialization.set_crc32_options(False)
    try:
        torch.save(contents, path)
    finally:
        torch.serialization.set_crc32_options(True)
    with zipfile.ZipFile(path) as archive:
        assert {info.CRC for info in archive.infolist()} == {0}
    load_encoder_decoder(str(path))
