"""``luong_lit.config`` and ``conf/``: every experiment composes and builds its model, the Table 4
grid and the ladders, a user's own config folder, ``train --help``."""

from __future__ import annotations

import pytest
from conftest import compose_cfg, run_here

from luong_lit.config import CONF_DIR

EXPERIMENTS = sorted(p.stem for p in (CONF_DIR / "experiment").glob("[!_]*.yaml"))


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_config_builds_its_model(name, tmp_path):
    from luong_lit.nn.build import build_net
    from luong_lit.training.instantiate import net_description

    cfg = compose_cfg(
        [f"experiment={name}", "model.net.embed_size=8", "model.net.hidden_size=8"], tmp_path
    )
    net = build_net(net_description(cfg), src_vocab_size=12, tgt_vocab_size=12)
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


@pytest.mark.parametrize("group", ["attention", "score"])
def test_a_part_declares_its_options_once_in_its_constructor(group, tmp_path):
    """No file of ``conf/`` repeats a part's options: ``group=NAME`` composes to the name and
    the constructor's own defaults, one of them set from the command line changes that one,
    and the model built from it holds the value."""
    from luong_lit.config import compose, groups
    from luong_lit.config_parts import constructor_defaults
    from luong_lit.nn.names import ATTENTIONS, SCORES

    table = {"attention": ATTENTIONS, "score": SCORES}[group]
    assert {p.stem for p in (CONF_DIR / group).glob("*.yaml")} <= {"none"}  # no part's file
    assert set(table) <= set(groups()[group])  # every part an option, as --help lists them
    for name, cls in table.items():
        node = compose([f"{group}={name}"] if group == "attention" else [f"score={name}",
                        "attention=global"]).model.net[group]  # fmt: skip
        assert dict(node) == {"name": name, **constructor_defaults(cls)}, name
    cfg = compose_cfg(["attention=local_p", "model.net.attention.D=3", "score=dot"], tmp_path)
    assert cfg.model.net.attention.D == 3 and cfg.model.net.attention.clip_to == "sentence"
    from luong_lit.nn.build import build_net
    from luong_lit.training.instantiate import net_description

    net = build_net(net_description(cfg), src_vocab_size=12, tgt_vocab_size=12)
    assert net.decoder.attention.D == 3


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


#: The options of Seq2Seq and TranslationDataModule with their defaults, as each took them one by
#: one before they were grouped: every one is still a keyword of the class, with that default.
NET_DEFAULTS = {
    "embed_size": 256, "hidden_size": 256, "num_layers": 2, "dropout": 0.0,
    "attention": "global", "score": "general", "feed_input": True, "reverse_source": False,
    "bias": True, "init_scale": 0.1, "forget_bias": 0.0, "hidden_dropout": 0.0,
    "init": "uniform", "src_eos": False, "init_state": "copy", "tie_output": False,
    "output_dropout": 0.0,
}  # fmt: skip
DATA_DEFAULTS = {
    "dataset": "multi30k", "src_lang": "en", "tgt_lang": "de", "train": "train", "dev": "val",
    "test": None, "variant": "tok", "tokenizer": "none", "tokenizer_opts": None,
    "vocab_size": 50000, "min_freq": 1, "max_len": 50, "length_mode": "filter",
    "batch_size": 128, "batch_by": "sentences", "max_tokens": None, "eval_batch_size": 128,
    "chunk_batches": 100,
    "seed": 1234, "mirror": None, "num_workers": None, "prepare_workers": None,
    "clean_control": False, "preprocess": None, "recase_from": None,
}  # fmt: skip


def _fields(groups) -> dict[str, object]:
    """The fields of option groups and their defaults; no field is in two groups."""
    from dataclasses import fields

    found = [(f.name, f.default) for group in groups for f in fields(group)]
    assert len(found) == len(dict(found)), found
    return dict(found)


def test_the_option_groups_hold_the_config_keys():
    """The fields of the option groups of ``Seq2Seq`` (:mod:`luong_lit.nn.options`) are the keys
    of ``model.net`` (attention and score come from their own config groups), those of
    ``TranslationDataModule`` (:mod:`luong_lit.data.loading.options`) the keys of the data
    configs; the class's signature names each, with its default."""
    import inspect

    from omegaconf import OmegaConf

    from luong_lit.data import TranslationDataModule
    from luong_lit.data.loading.options import DATA_OPTIONS
    from luong_lit.nn import Seq2Seq
    from luong_lit.nn.options import NET_OPTIONS

    net = set(OmegaConf.load(CONF_DIR / "model" / "luong.yaml").net)
    assert set(_fields(NET_OPTIONS)) - {"attention", "score"} == net
    data = [set(OmegaConf.load(p)) - {"_target_"} for p in (CONF_DIR / "data").glob("*.yaml")]
    assert set().union(*data) == set(_fields(DATA_OPTIONS))
    assert _fields(NET_OPTIONS) == NET_DEFAULTS and _fields(DATA_OPTIONS) == DATA_DEFAULTS
    net_sig = inspect.signature(Seq2Seq).parameters
    assert list(net_sig)[:4] == ["src_vocab_size", "tgt_vocab_size", "pad_id", "eos_id"]
    assert {n: p.default for n, p in list(net_sig.items())[4:]} == NET_DEFAULTS
    data_sig = inspect.signature(TranslationDataModule).parameters
    assert {n: p.default for n, p in data_sig.items()} == DATA_DEFAULTS


@pytest.mark.parametrize("path,key", [("model.net", "hiden_size"), ("data", "batchsize")])
def test_an_unknown_key_is_one_line_naming_it(path, key, tmp_path):
    """Refused before anything is built (the key check reads the class's signature: the data's
    ``_target_``, the network's one builder), and by the class itself where it is built from the
    config's keys alone (``prepare``'s datamodule)."""
    from omegaconf import OmegaConf

    from luong_lit.data.loading.datamodule import corpus_datamodule
    from luong_lit.errors import ConfigError
    from luong_lit.training.instantiate import instantiate_at, model_parts

    cfg = compose_cfg([f"+{path}.{key}=8"], tmp_path)
    node = OmegaConf.select(cfg, path)
    target = node.get("_target_", "luong_lit.nn.Seq2Seq")
    with pytest.raises(ConfigError) as err:
        model_parts(cfg) if path == "model.net" else instantiate_at(path, node)
    said = str(err.value)
    assert said.startswith(f"{path}.{key} is not an option of {target}; its options: ")
    assert "\n" not in said
    if path == "data":
        with pytest.raises(ConfigError, match=rf"^data\.{key} is not an option of Translation"):
            corpus_datamodule(cfg.data)


#: The paper's recipe (§4.1), setting by setting, as experiment=m30k_paper composes it under each
#: ladder row: (what the paper states, the config key, the value in a row without dropout, with)
PAPER_RECIPE = [
    ("SGD", "model.optimizer._target_", "torch.optim.SGD", "torch.optim.SGD"),
    ("learning rate 1.0", "model.optimizer.lr", 1.0, 1.0),
    ("halving the rate every epoch", "model.scheduler._target_",
     "luong_lit.training.schedules.Halving", "luong_lit.training.schedules.Halving"),
    ("after 5 epochs, 8 with dropout", "model.scheduler.after", 5, 8),
    ("10 epochs, 12 with dropout", "trainer.max_epochs", 10, 12),
    ("mini-batches of 128", "data.batch_size", 128, 128),
    ("uniform initialisation in [-0.1, 0.1]", "model.net.init_scale", 0.1, 0.1),
    ("uniform initialisation", "model.net.init", "uniform", "uniform"),
    ("gradient norm rescaled at 5", "trainer.gradient_clip_val", 5.0, 5.0),
    ("dropout 0.2 where the row has it", "dropout", 0.0, 0.2),
    ("the decoder starts from each encoder layer's final state", "model.net.init_state",
     "copy", "copy"),
    ("no label smoothing", "model.label_smoothing", 0.0, 0.0),
    ("separate output matrix", "model.net.tie_output", False, False),
    ("no </s> read by the encoder", "model.net.src_eos", False, False),
    ("no dropout on [c_t; h_t]", "model.net.hidden_dropout", 0.0, 0.0),
    ("every training word in the vocabulary", "data.min_freq", 1, 1),
    ("no vocabulary cut below the training words", "data.vocab_size", None, None),
    ("sentences over 50 words dropped", "data.max_len", 50, 50),
    ("the loss summed over a sentence, averaged over the batch", "model.loss_norm",
     "sentences", "sentences"),
    ("the main job's size, 2x256, said on every row", "model.net.hidden_size", 256, 256),
]  # fmt: skip


@pytest.mark.parametrize(
    "setting,key,without,with_dropout", PAPER_RECIPE, ids=[p[0] for p in PAPER_RECIPE]
)
def test_the_paper_recipe_sets_what_the_paper_states(setting, key, without, with_dropout, tmp_path):
    """Each setting the paper states (§4.1), in a ladder row without dropout (Table 1's base)
    and in one with it (its last row)."""
    from omegaconf import OmegaConf

    from luong_lit.sweeps.resolvers import register_resolvers

    register_resolvers()  # the paper's epochs and halving follow dropout
    for row, want in (("table1_base", without), ("table1_local_p_general", with_dropout)):
        cfg = compose_cfg(["experiment=m30k_paper", f"ladder={row}"], tmp_path)
        assert OmegaConf.select(cfg, key) == want, f"{row}: {key}"
