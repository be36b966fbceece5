"""The CSLM of Cho et al. (2014), Sec. 5.1.1: a feed-forward neural target language model (Schwenk's
continuous-space LM), trained by mosesrnn and used inside Moses through NPLM's file format."""
