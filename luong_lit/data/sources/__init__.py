"""Where corpora come from: the registry of named corpora, their download from the official
sources (checksummed and cached) or a local mirror (``LUONG_LIT_DATA``), and IWSLT'14's archive."""
