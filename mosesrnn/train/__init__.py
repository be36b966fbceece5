"""Training shared by every model family: the loop (each family's Task gives it the network, its optimizer
and its batches), the order of the examples, several processes, the log."""
