"""`nim-specdec tune`: measure speculation on this hardware, fit a cost model, choose a K per batch size."""
