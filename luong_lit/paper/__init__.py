"""The paper study: Luong et al. (2015) itself, apart from the kit that reproduces it.

* :mod:`.numbers`: the paper's reported figures (Tables 1, 3, 4 and 6) and a run's row of them,
  which ``report`` and the notebook's tables set beside every run;
* :mod:`.resolvers`: the paper's recipe in the configs, its epochs and halving by dropout;
* :mod:`.study`: Tables 1 and 3 laid out from ladder runs, each step judged, and the exhibits
  (Table 5, Figure 7) drawn from them.

The first two import nothing of the kit; the study reads runs with :mod:`luong_lit.analysis`.
Nothing is imported here, so that the kit can read the paper's figures without the study.
"""
