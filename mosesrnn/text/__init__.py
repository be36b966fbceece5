"""Text to token ids and back: tokenizers (Moses words today) and the vocabularies of their tokens."""
