"""Tests of mosesrnn.runtime.devices: the device and the batch size that suits it."""
import pytest
from scoring_helpers import save_tiny_model

from mosesrnn.features.options import FeatureOptions
from mosesrnn.features.rnn import build
from mosesrnn.features.selection import LoadedModels
from mosesrnn.runtime.devices import default_batch_tokens, resolve_device


@pytest.mark.parametrize("device, tokens", [("cpu", 4096), ("cuda", 32768), ("cuda:1", 32768)])
def test_default_batch_tokens(device, tokens):
    assert default_batch_tokens(device) == tokens


@pytest.mark.parametrize("given, used", [(None, 4096), (512, 512)])
def test_the_rnn_column_takes_the_resolved_devices_batch_size_unless_given(tmp_path, given, used):
    options = FeatureOptions(model=save_tiny_model(str(tmp_path / "tiny.pt")), device="cpu", batch_tokens=given)
    assert build(options, LoadedModels(options)).batch_tokens == used


def test_auto_is_a_gpu_only_where_torch_sees_one():
    import torch
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
