"""A training corpus prepared once (tokenised in parallel, filtered, given its vocabularies) into a
memory-mapped store that every later run opens."""
