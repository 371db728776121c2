"""The paper's facts: Luong et al. (2015) itself, apart from the kit that reproduces it.

* :mod:`.numbers`: the paper's reported figures (Tables 1, 3, 4 and 6) and a run's row of them,
  which ``report`` and the notebook's tables set beside every run;
* :mod:`.resolvers`: the paper's recipe in the configs, its epochs and halving by dropout.

Both import nothing of the kit, so the package sits low, at one height. The study that lays out
Tables 1 and 3 from our runs reads them with :mod:`luong_lit.analysis` and lives above it, in
:mod:`luong_lit.study`. Nothing is imported here.
"""
