"""The joint model's presets: window sizes, the network's shape, the shortlists (no torch here).

``moses`` follows Devlin et al. (2014) in its windows — 3 target words of history (``order`` 4)
and 11 source words (``source_window`` 5 on each side of the affiliated word) — with the CSLM's
one-hidden-layer shape that Moses' NPLM evaluates right; ``small`` trains in minutes on a CPU.
Both train with the CSLM's ``moses`` recipe (NCE, self-normalised, warm-up, decay, dropout).
"""
from __future__ import annotations

from ..cslm.config import LM_RECIPES, CSLMConfig
from ..models import JOINT, MODELS

__all__ = ["JOINT_PRESETS", "JOINT_RECIPE", "EXPORT_FILES", "joint_network_config"]

JOINT_PRESETS = {
    "moses": dict(order=4, source_window=5, embed_dim=192, hidden_dims=(512,), target_shortlist=16000,
                  source_shortlist=16000),
    "small": dict(order=3, source_window=2, embed_dim=64, hidden_dims=(256,), target_shortlist=8000,
                  source_shortlist=8000),
}

#: What ``mosesrnn bilm export`` writes beside the NPLM file (PATH + each suffix): the target and source
#: vocabularies (BilingualNPLM's ``target_vocab`` and ``source_vocab``) and the windows (``.json``); defined
#: in the model registry's row, which ``moses-ini --bilm`` reads them by.
EXPORT_FILES = MODELS[JOINT].decoder.companions

#: How every preset trains: the CSLM's recipe for Moses (docs/cslm.md).
JOINT_RECIPE = LM_RECIPES["moses"]


def joint_network_config(order: int, source_window: int, output_size: int, input_size: int, embed_dim: int,
                         hidden_dims: tuple[int, ...], self_norm: float) -> CSLMConfig:
    """The network of a joint model: NPLM n-grams of ``2 * source_window + 1 + order`` ids."""
    return CSLMConfig(vocab_size=output_size, input_vocab_size=input_size, order=2 * source_window + 1 + order,
                      embed_dim=embed_dim, hidden_dims=tuple(hidden_dims), self_norm=self_norm)
