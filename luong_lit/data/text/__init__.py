"""Text: tokenisers, the corpora's preprocessing recipes, the recaser, what a checkpoint keeps to
read raw text and write natural text, and word dictionaries for unknown-word replacement."""
