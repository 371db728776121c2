"""Word alignments and their scores (paper §5.4, Table 6): gold text read in a model's direction
and tokens (:mod:`.gold`), the alignment report with AER and its baselines (:mod:`.report`), and
the eflomal aligner (:mod:`.eflomal`)."""

from luong_lit.alignment.gold import model_tokens, rwth_files
from luong_lit.alignment.report import align_report, baseline_links, member_conventions

__all__ = ["align_report", "baseline_links", "member_conventions", "model_tokens", "rwth_files"]
