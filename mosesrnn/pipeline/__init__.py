"""Streaming jobs over a phrase table: scoring, shards, checkpoints and resume, merging shards."""
