"""``luong_lit.config`` and ``conf/``: every experiment composes and builds its model, the Table 4
grid and the ladders, a user's own config folder, ``train --help``."""

from __future__ import annotations

import pytest
from conftest import compose_cfg, run_here

from luong_lit.config import CONF_DIR

EXPERIMENTS = sorted(p.stem for p in (CONF_DIR / "experiment").glob("[!_]*.yaml"))


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_config_builds_its_model(name, tmp_path):
    import hydra

    cfg = compose_cfg(
        [f"experiment={name}", "model.net.embed_size=8", "model.net.hidden_size=8"], tmp_path
    )
    net = hydra.utils.instantiate(cfg.model.net)(src_vocab_size=12, tgt_vocab_size=12)
    prefix = next((p for p in ("table4_", "align_") if name.startswith(p)), None)
    if prefix:  # the file names the Table 4 or Table 6 row: attention and score
        attention, score = name[len(prefix) :].rsplit("_", 1)
        kind = {
            "global": "GlobalAttention",
            "local_m": "LocalMonotonicAttention",
            "local_p": "LocalPredictiveAttention",
        }[attention]
        assert type(net.decoder.attention).__name__ == kind
        assert type(net.decoder.attention.score).__name__ == f"{score.capitalize()}Score"
        assert cfg.feed_input and cfg.dropout == 0.2
    if prefix == "align_":  # one corpus: the WMT samples and Multi30k, lowercased
        assert list(cfg.data.train) == [
            "europarl_v7_head20k",
            "opennmt_toy_ende",
            "nmt_hybrid_train10k",
            "multi30k:train",
        ]
        assert cfg.data.tokenizer_opts.lowercase


def test_table4_has_every_attention_row():
    rows = {n for n in EXPERIMENTS if n.startswith("table4_")}
    assert rows == {
        f"table4_{a}_{s}" for a in ("global", "local_m", "local_p") for s in ("dot", "general")
    } | {"table4_global_location"}


def test_a_users_own_config_folder_joins_the_search_path(tmp_path):
    """``hydra.searchpath`` adds a folder of configs beside the shipped ones."""
    from luong_lit.config import compose

    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - m30k_small\nmodel:\n  net:\n    hidden_size: 64\n"
    )
    cfg = compose([f"hydra.searchpath=[file://{tmp_path}]", "experiment=mine"])
    assert cfg.model.net.hidden_size == 64 and cfg.model.net.embed_size == 256


def test_train_help_is_the_kits_own_page_without_internal_fragments():
    res = run_here(["train", "--help"])
    page = res.stdout.decode()
    assert res.returncode == 0 and "powered by Hydra" not in page
    assert "attention   global*, local_m, local_p, none" in page and "m30k_small*" in page
    assert page.count("python -m luong_lit.train ") >= 3  # the examples
    assert "_align_ende" not in page and "recipes" not in page and "wmt14_paper" not in page
