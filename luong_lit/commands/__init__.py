"""The command-line tools, one module each: ``python -m luong_lit <command>``.

No command imports another; what they share lives in library modules (:mod:`luong_lit.cli`,
:mod:`luong_lit.checkpoint`, :mod:`luong_lit.data.loading.model_data`, :mod:`luong_lit.evaluation`).
"""
