"""Reading run directories: figures, the comparison with the paper's tables, notebook helpers."""
