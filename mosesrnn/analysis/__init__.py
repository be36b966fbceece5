"""What a trained model tells beyond its scores (C14 Sec. 4.3-4.4; Kalchbrenner & Blunsom 2013 Table 1).

- :mod:`.perplexity`: per-token perplexity of gold targets, and with shuffled sources as a control;
- :mod:`.embeddings`: word embeddings e(x) and phrase representations c, 2-D maps, cosine neighbours;
- :mod:`.topk`: the targets the RNN ranks highest among a phrase table's candidates (C14 Table 2);
- :mod:`.report`: the RNN column of a scored table against the translation model's (C14 Fig. 3).

Plots use matplotlib (Agg backend) and projections scikit-learn; both are imported only when used.
"""
