"""The contracts between the package's rooms, held by its source: every decode-time model is a
:class:`~luong_lit.nn.interface.DecodeModel` and no caller probes what it was given; no module
reaches into another package's ``_private`` names (Lightning's: only
:mod:`luong_lit.training.lightning_internals`; torch's: only
:mod:`luong_lit.nn.fast.compiled`; sacreBLEU's: only
:mod:`luong_lit.metrics.sacrebleu_internals`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import torch
from torch import Tensor

from luong_lit.decoding.ensemble import Ensemble, SummedAlignment
from luong_lit.nn import Seq2Seq
from luong_lit.nn.fast.stepper import FastStepper
from luong_lit.nn.interface import AnyDecodeModel, DecodeModel, StepAttention

PKG = Path(__file__).resolve().parents[1] / "luong_lit"
#: what callers must not probe for: a decode-time model's members and internals, and what
#: crosses the boundary (:mod:`luong_lit.nn.interface`: memory, state, a step's attention)
PROBED = {"members", "has_attention", "content_based", "src_eos", "attention", "decoder", "window"}
PROBED |= {"attention_kind", "tgt_vocab_size", "encode", "step", "index_select", "dense", "p_t"}
NAMEDTUPLE = {"_replace", "_asdict", "_fields", "_make"}  # public, though they start with _
#: the modules that may use an outside package's private names, each for one reason (its
#: docstring says which names and why)
ALLOWED = {
    "training/lightning_internals.py": "Lightning's and submitit's, where no public API exists",
    "nn/fast/compiled.py": "torch's setting for the compiled step's backward under autocast",
    "metrics/sacrebleu_internals.py": "sacreBLEU's chrF statistics, for the paired tests",
    "nn/fast/fused_cell.py": "torch's fused LSTM cell: no public function takes gates",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def probes(source: str) -> list[str]:
    """``getattr``/``hasattr`` of a decode-time model's members by name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        if node.func.id in ("getattr", "hasattr"):
            name = node.args[1] if len(node.args) > 1 else None
            if isinstance(name, ast.Constant) and name.value in PROBED:
                found.append(f"line {node.lineno}: {node.func.id}(..., {name.value!r})")
    return found


def own_private_names(tree: ast.Module) -> set[str]:
    """The ``_names`` a module defines: functions, classes, assignments, ``self._x``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {n for n in names if _private(n)}


def foreign_privates(source: str, package: str) -> list[tuple[str, str]]:
    """``(owner, where)`` for each use of another package's private name in a module of
    ``package`` (``luong_lit.nn``): an import of a ``_`` name or module from elsewhere, and
    ``x._name`` (not on ``self``/``cls``) of a name this module does not define itself. The
    owner is the outside package (``torch``), or ``luong_lit`` for another room's."""
    tree = ast.parse(source)
    own, found = own_private_names(tree), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            mod = node.module
            inside = mod.startswith("luong_lit")
            other = not inside or not (mod == package or mod.startswith(package + "."))
            names = [a.name for a in node.names] + mod.split(".")[1:]
            if other and any(_private(n) for n in names):
                found.append((mod.split(".")[0], f"line {node.lineno}: from {mod} import ..."))
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if node.attr in NAMEDTUPLE or node.attr in own:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            owner = node.value.id if isinstance(node.value, ast.Name) else "luong_lit"
            found.append((owner, f"line {node.lineno}: {ast.unparse(node)}"))
    return found


def test_the_finders_find_each_kind():
    assert probes("n = getattr(m, 'members', [m])\nhasattr(m, 'decoder')") == [
        "line 1: getattr(..., 'members')",
        "line 2: hasattr(..., 'decoder')",
    ]
    source = (
        "from luong_lit.nn.attention import _Attention\n"
        "import torch\n"
        "x = torch._VF.lstm\n"
        "def f(enc, s):\n"
        "    s._replace(a=1)\n"
        "    return enc._original_order\n"
    )
    found = foreign_privates(source, "luong_lit.nn.fast")
    assert [o for o, _ in found] == ["luong_lit", "torch", "enc"]
    assert foreign_privates(source.splitlines()[0], "luong_lit.nn") == []  # its own room's


def decode_time_forms(net: Seq2Seq) -> list[AnyDecodeModel]:
    """A model's decode-time forms. Annotated: mypy (``.ci/run``, which checks this file)
    holds each to the Protocol's signatures, as ``isinstance`` holds it to its names."""
    return [net, FastStepper(net), Ensemble([net, net])]


def step_attentions(net: Seq2Seq, src: Tensor) -> list[StepAttention]:
    """The attention of a model's first step, alone and summed as an ensemble's."""
    memory, state = net.encode(src, torch.tensor([src.size(1)]))
    _, _, align = net.step(torch.tensor([2]), state, memory, 0)
    assert align is not None
    return [align, SummedAlignment((align, None))]


def test_decode_time_models_keep_the_contract_and_no_caller_probes():
    net = Seq2Seq(src_vocab_size=9, tgt_vocab_size=9, embed_size=4, hidden_size=4).eval()
    for model in decode_time_forms(net):
        assert isinstance(model, DecodeModel), type(model).__name__
        assert all(isinstance(m, DecodeModel) for m in model.members)
    assert net.members == (net,) and net.window is None and net.attention_kind == "GlobalAttention"
    local = Seq2Seq(src_vocab_size=9, tgt_vocab_size=9, embed_size=4, hidden_size=4,
                    attention="local_p").eval()  # fmt: skip
    src = torch.tensor([[5, 6, 7]])
    with torch.no_grad():
        (plain, summed), (windowed, _) = step_attentions(net, src), step_attentions(local, src)
    assert plain.p_t is None and summed.p_t is None and windowed.p_t is not None
    assert summed.dense(3).shape == plain.dense(3).shape == (1, 1, 3)
    found = {
        str(p.relative_to(PKG)): hits
        for p in sorted(PKG.rglob("*.py"))
        if (hits := probes(p.read_text("utf-8")))
    }
    assert not found, f"callers probe a decode-time model instead of its contract: {found}"


def test_no_module_reaches_into_another_packages_private_names():
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(PKG))
        package = ".".join(("luong_lit", *path.relative_to(PKG).parts[:-1]))
        if rel in ALLOWED:
            continue
        hits = [where for _, where in foreign_privates(path.read_text("utf-8"), package)]
        if hits:
            found[rel] = hits
    assert not found, f"private names of another package: {found}"
    assert torch.lstm is not None  # the public name of the left-padded encoder's LSTM call


def test_one_option_error_type_names_an_option_where_it_was_given():
    """Config checks and the API's keyword checks raise the one ``OptionError``: a config key
    within its group, a keyword as the API names it, a flag on the command line."""
    from luong_lit.errors import ConfigError, UsageError
    from luong_lit.translator.options import SearchOptions
    from luong_lit.validate import OptionError, integer

    with pytest.raises(OptionError) as config:
        integer("hidden_size", -3, 1)
    assert str(config.value.within("model.net")).startswith("model.net.hidden_size=-3 ")
    with pytest.raises(OptionError) as api:
        SearchOptions(beam=0).search()
    assert str(api.value) == "beam must be an integer >= 1, got 0"
    assert str(api.value.flagged()) == "--beam must be an integer >= 1, got 0"
    assert isinstance(api.value, ConfigError) and isinstance(api.value, UsageError)
    classes = [re.findall(r"^class (\w*Option\w*)\(", p.read_text("utf-8"), re.M)
               for p in PKG.rglob("*.py")]  # fmt: skip
    named = [n for found in classes for n in found if "Error" in n or n.startswith("Bad")]
    assert named == ["OptionError"], named


def test_one_vocabulary_one_name_for_each_thing():
    """The beam is ``beam`` in the API, the server, the search and the training callback; no
    two classes of the kit share a name; each option check is defined once; a paper switch is
    set at the config's root only, and a run started under an old key resumes under the new."""
    from luong_lit.config import compose
    from luong_lit.errors import ConfigError
    from luong_lit.training.resume import RENAMED, _as_today

    texts = {p: p.read_text("utf-8") for p in PKG.rglob("*.py")}
    texts.update({p: p.read_text("utf-8") for p in (PKG.parent / "conf").rglob("*.yaml")})
    named = [p.name for p, text in texts.items() if re.search(r"\bbeam_size\b", text)]
    assert named == ["resume.py"], named  # the old name, only where it is renamed
    defined: dict[str, list[str]] = {}
    for p, text in texts.items():
        for kind, name in re.findall(r"^(class|def) ([A-Za-z]\w*)", text, re.M):
            defined.setdefault(f"{kind} {name}", []).append(p.name)
    twice = {k: v for k, v in defined.items() if len(v) > 1 and k.startswith("class ")}
    assert not twice, twice
    for check in ("one_of", "split_options", "refuse_unknown"):
        assert defined[f"def {check}"] == ["validate.py"], check
    assert compose(["dropout=0.2"]).model.net.dropout == 0.2
    for switch in ("model.net.dropout=0.2", "model.net.feed_input=false"):
        with pytest.raises(ConfigError, match=rf"^{re.escape(switch.split('=')[0])} is set from"):
            compose([switch])
    old = "callbacks.beam_bleu.beam_size=3"
    assert _as_today(old) == f"{RENAMED[old.split('=')[0]]}=3"
    assert _as_today("+" + old) == "++callbacks.beam_bleu.beam=3"
    assert compose([_as_today(old)]).callbacks.beam_bleu.beam == 3
