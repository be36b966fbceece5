"""The model file: round trip, safety, format versions and the migration of version-1 files."""
import gzip
import os

import pytest
import torch
from conftest import DATA
from scoring_helpers import TABLE, assert_equal_up_to_rnn_rounding, save_tiny_model

from mosesrnn.cli import main
from mosesrnn.encdec.model_file import FORMAT_VERSION, load_encoder_decoder
from mosesrnn.text.tokenizers import MosesWords

V1 = DATA / "model-v1"


def test_round_trip_keeps_weights_codecs_and_direction(tmp_path):
    path = save_tiny_model(str(tmp_path / "model.pt"), "target-to-source")
    assert os.listdir(tmp_path) == ["model.pt"]  # no temporary file left behind
    trained = load_encoder_decoder(path)
    assert trained.direction == "target-to-source"
    assert isinstance(trained.text.source.tokenizer, MosesWords)
    assert trained.input_codec is trained.text.target and trained.output_codec is trained.text.source
    saved = torch.load(path, weights_only=True)
    assert saved["format_version"] == FORMAT_VERSION
    assert all(torch.equal(saved["state_dict"][name], value) for name, value in trained.model.state_dict().items())
    assert trained.input_codec.ids("Tom est là .")[-1] == trained.input_codec.vocabulary.stoi["."]


class Payload:
    """An arbitrary object: unpickling it would run code from the file."""


def test_load_refuses_arbitrary_pickles(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"format_version": FORMAT_VERSION, "payload": Payload()}, path)
    with pytest.raises(ValueError, match="would run code from the file") as error:
        load_encoder_decoder(str(path))
    assert "Re-running" not in str(error.value)  # torch's advice to load with weights_only=False is not repeated


@pytest.mark.parametrize("checkpoint, message", [
    ({"weights": 1}, "not a mosesrnn model file"),
    ({"format_version": 99}, "unsupported model format version 99"),
    ({"format_version": FORMAT_VERSION, "config": {}}, "it has no state_dict, direction, text"),
    ({"format_version": 1, "config": {}, "state_dict": {}}, "version-1 model file without vocabularies"),
])
def test_bad_model_files_are_named(tmp_path, checkpoint, message):
    path = tmp_path / "bad.pt"
    torch.save(checkpoint, path)
    with pytest.raises(ValueError, match=message):
        load_encoder_decoder(str(path))


def test_version_1_file_loads_and_scores_exactly_as_it_did(tmp_path):
    trained = load_encoder_decoder(str(V1 / "tiny-v1.pt"))
    assert trained.model.config.encoder == "gru" and trained.direction == "source-to-target"
    table = tmp_path / "table400"
    with gzip.open(TABLE, "rt", encoding="utf-8", newline="") as lines:
        table.write_text("".join(line for _, line in zip(range(400), lines)), encoding="utf-8", newline="")
    output = tmp_path / "table400.rnn-unk"
    result = main.main(["score", str(table), "-m", str(V1 / "tiny-v1.pt"), "-o", str(output), "-q"],
                       standalone_mode=False)
    assert result is None
    # Byte-identical on the AVX2 CPU that wrote the golden file; other kernels round the 9th digit.
    assert_equal_up_to_rnn_rounding(output.read_text(encoding="utf-8"),
                                    gzip.decompress((V1 / "table400.rnn-unk.gz").read_bytes()).decode("utf-8"))


def test_weights_stored_in_half_precision_are_computed_in_fp32(tmp_path):
    """A halved file (``halve_weights``, as examples/model/ ships) stores fp16 weights and scores within fp16's
    rounding of the original: the loaded network is fp32, as every other model's."""
    import mosesrnn
    from mosesrnn.io.model_store import halve_weights
    full = save_tiny_model(str(tmp_path / "full.pt"))
    halved = str(tmp_path / "halved.pt")
    halve_weights(full, halved)
    assert {tensor.dtype for tensor in torch.load(halved, weights_only=True)["state_dict"].values()} == {torch.float16}
    trained = load_encoder_decoder(halved)
    assert {p.dtype for p in trained.model.parameters()} == {torch.float32}
    sources, targets = ["i promise .", "i &apos;ll wait ."], ["je promets .", "je vais attendre ."]
    exact = mosesrnn.load(full, device="cpu").log_prob(sources, targets)
    rounded = mosesrnn.load(halved, device="cpu").log_prob(sources, targets)
    assert rounded == pytest.approx(exact, abs=0.02) and rounded != exact
