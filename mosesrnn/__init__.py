"""mosesrnn: the RNN Encoder-Decoder of Cho et al. (2014) for scoring Moses phrase tables."""

__version__ = "0.1.0"
