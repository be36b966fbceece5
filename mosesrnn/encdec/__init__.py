"""The model seam: encoders, the C14 decoder, the encoder-decoder built from a config, and its file."""
