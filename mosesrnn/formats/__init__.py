"""Readers and writers of the file formats mosesrnn streams: phrase tables, n-best lists."""
