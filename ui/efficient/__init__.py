"""The Beyond n² page's tabs: sparse patterns, kernels and low rank, accuracy, and cost (Run, Cancel, LRA)."""
