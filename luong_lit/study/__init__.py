"""The paper's ladders from our runs: Tables 1 and 3 (:mod:`.ladders`) with each step judged
(:mod:`.steps`), the notebook's views of them (:mod:`.ladder_views`) and Table 5 and Figure 7
(:mod:`.exhibits`). ``report`` and the analysis notebook are its readers; the kit imports none
of it."""
