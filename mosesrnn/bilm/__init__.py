"""The neural network joint model of Devlin et al. (2014): a CSLM that also reads a window of source words.

Trained here on a word-aligned parallel corpus, exported for Moses' ``BilingualNPLM`` feature (a
Moses built ``--with-nplm``), and a feature of n-best lists. The network is the CSLM's
(:mod:`mosesrnn.cslm.model`) with an input vocabulary of target and source words; the examples are
those the decoder queries (:mod:`mosesrnn.bilm.data`).
"""
