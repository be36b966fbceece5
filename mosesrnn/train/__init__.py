"""Training: the data as compact id arrays, the Adadelta loop with validation and resume, its log."""
