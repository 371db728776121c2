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


def _flat(node, prefix: str = "") -> dict[str, str]:
    if isinstance(node, dict):
        return {k: v for key, sub in node.items() for k, v in _flat(sub, f"{prefix}.{key}").items()}
    return {prefix: str(node)}


def _resolved(overrides: list[str], tmp_path) -> dict[str, str]:
    from omegaconf import OmegaConf

    return _flat(OmegaConf.to_container(compose_cfg(overrides, tmp_path), resolve=True))


def _changed(above: dict[str, str], row: dict[str, str]) -> set[str]:
    """What a row changes, by name: a key's last part, ``attention`` and ``score`` whole."""
    keys = {k for k in above.keys() | row.keys() if above.get(k) != row.get(k)}
    named = {"attention" if ".attention" in k else "score" if ".score" in k else k for k in keys}
    return {k.rsplit(".", 1)[-1] for k in named}


# Each row of the paper's ladders, and what it adds to the row above (Tables 1 and 3).
LADDER_STEPS = {
    "table1_reverse": ("table1_base", {"reverse_source"}),
    "table1_dropout": ("table1_reverse", {"dropout", "hidden_dropout"}),
    "table1_global_location": ("table1_dropout", {"attention", "score"}),
    "table1_feed_input": ("table1_global_location", {"feed_input"}),
    "table1_local_p_general": ("table1_feed_input", {"attention", "score"}),
    "table3_base_reverse": ("table1_reverse", {"src_lang", "tgt_lang"}),  # De→En
    "table3_global_location": ("table3_base_reverse", {"attention", "score"}),
    "table3_feed_input": ("table3_global_location", {"feed_input"}),
    "table3_global_dot_dropout": ("table3_feed_input", {"score", "dropout", "hidden_dropout"}),
}


def test_every_ladder_row_changes_only_what_the_papers_row_adds(tmp_path):
    """Composed as the sweep composes them, every row equals the row above but for the paper's
    addition; the base row has no reversal, dropout or attention; the last row of Table 1 is
    the main job's recipe with local-p for its global attention."""
    rows = {
        p.stem: _resolved([f"ladder={p.stem}"], tmp_path) for p in CONF_DIR.glob("ladder/*.yaml")
    }
    assert set(rows) == set(LADDER_STEPS) | {"table1_base"}
    for name, (above, adds) in LADDER_STEPS.items():
        assert _changed(rows[above], rows[name]) == adds, name
    base = rows["table1_base"]
    assert base[".reverse_source"] == base[".feed_input"] == "False"
    assert base[".model.net.dropout"] == base[".model.net.hidden_dropout"] == "0.0"
    assert base.get(".model.net.attention", base.get(".model.net.attention.name")) == "None"
    last = rows["table1_local_p_general"]
    assert (
        last[".model.net.attention.name"] == "local_p"
        and last[".model.net.score.name"] == "general"
    )
    assert _changed(_resolved([], tmp_path), last) == {"attention"}  # the main job: global
