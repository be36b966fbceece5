"""Tuning feature weights on Moses n-best lists: Och's (2003) MERT and reranking."""
