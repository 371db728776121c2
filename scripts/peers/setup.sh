#!/usr/bin/env bash
# Set up the two peer toolkits for scripts/peers/throughput.py:
#   OpenNMT-py 3.5.1 and Joey NMT 2.3.0, each in its own virtualenv,
#   plus the Multi30k data / vocabularies they need.
#
# Environment:
#   PEERS_DIR       where venvs and prepared data go (default: <repo>/.peers;
#                   keep it out of version control)
#   LUONG_LIT_DATA  local data mirror holding multi30k/tok/*.lc.norm.tok.{en,de}.gz
#                   (required)
#   PYTHON          interpreter used to create the venvs (default: python3)
#   FORCE=1         delete existing venvs / prepared data first
#   OFFLINE_PYTHON  an interpreter that already imports torch, OpenNMT-py 3.5.1 and its
#                   runtime needs (a GPU machine without a package index, the wheels of
#                   scripts/gpu/wheelhouse.sh on its PYTHONPATH): no venvs are made and
#                   nothing is installed; onmt-venv/bin/python runs that interpreter, and
#                   Joey NMT is left out
#
# Layout produced:
#   $PEERS_DIR/constraints.txt           torch==2.13.0 (passed to EVERY pip call)
#   $PEERS_DIR/onmt-venv, joey-venv
#   $PEERS_DIR/data/m30k/{train,val,test}.{en,de}        (uncompressed copies)
#   $PEERS_DIR/data/onmt/vocab.{en,de}                  (onmt_build_vocab counts)
#   $PEERS_DIR/data/joey/{src,trg}_vocab.txt            (Joey's own vocab builder)
#   $PEERS_DIR/data/configs/*.yaml                      (configs with paths filled in)
#
# torch is only ever installed as the exact pin below; OpenNMT-py (which
# declares torch<2.3) and Joey NMT are installed with --no-deps and their
# runtime requirements come from the pinned *_requirements.txt files here.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PEERS_DIR="${PEERS_DIR:-$REPO/.peers}"
LUONG_LIT_DATA="${LUONG_LIT_DATA:?set LUONG_LIT_DATA to a local mirror of the corpora (README, Data)}"
PYTHON="${PYTHON:-python3}"
TORCH_PIN="torch==2.13.0"
ONMT_PIN="OpenNMT-py==3.5.1"
JOEY_PIN="joeynmt==2.3.0"

mkdir -p "$PEERS_DIR"
PEERS_DIR="$(cd "$PEERS_DIR" && pwd)"
M30K_SRC="$LUONG_LIT_DATA/multi30k/tok"
if [[ ! -f "$M30K_SRC/train.lc.norm.tok.en.gz" ]]; then
    echo "error: $M30K_SRC/train.lc.norm.tok.en.gz not found (set LUONG_LIT_DATA)" >&2
    exit 1
fi

CONSTRAINTS="$PEERS_DIR/constraints.txt"
echo "$TORCH_PIN" > "$CONSTRAINTS"

log() { echo "[scripts/peers/setup.sh] $*"; }

pip_in() {  # pip_in VENV ARGS...  -- every install goes through the torch constraint
    local venv="$1"; shift
    "$venv/bin/python" -m pip install --disable-pip-version-check -q -c "$CONSTRAINTS" "$@"
}

check_torch() {  # fail loudly if anything replaced the pinned torch
    local venv="$1"
    "$venv/bin/python" - "$TORCH_PIN" <<'EOF'
import sys, importlib.metadata as md
want = sys.argv[1].split("==")[1]
have = md.version("torch")
if have.split("+")[0] != want:
    sys.exit(f"torch {have} installed, expected {want}")
print(f"torch {have} ok")
EOF
}

make_venv() {  # make_venv NAME TOOLKIT_PIN REQUIREMENTS_FILE
    local venv="$PEERS_DIR/$1-venv" pin="$2" reqs="$3"
    if [[ "${FORCE:-0}" == 1 && -d "$venv" ]]; then
        log "removing $venv"; rm -rf "$venv"
    fi
    [[ -x "$venv/bin/python" ]] || { log "creating $venv"; "$PYTHON" -m venv "$venv"; }
    log "$1: $TORCH_PIN"
    pip_in "$venv" "$TORCH_PIN"
    log "$1: $pin (--no-deps)"
    pip_in "$venv" --no-deps "$pin"
    log "$1: runtime requirements ($(basename "$reqs"))"
    log "(pip's 'dependency conflicts' notice about the toolkit's declared deps, e.g. torch<2.3, is expected)"
    pip_in "$venv" -r "$reqs"
    check_torch "$venv"
    "$venv/bin/python" -m pip freeze --disable-pip-version-check > "$venv/installed.txt"
}

ONMT_PY="$PEERS_DIR/onmt-venv/bin/python"
JOEY_PY="$PEERS_DIR/joey-venv/bin/python"
if [[ -n "${OFFLINE_PYTHON:-}" ]]; then
    mkdir -p "$PEERS_DIR/onmt-venv/bin"
    printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v "$OFFLINE_PYTHON")" > "$ONMT_PY"
    chmod +x "$ONMT_PY"
    log "onmt: $OFFLINE_PYTHON as it is (PYTHONPATH=${PYTHONPATH:-}); Joey NMT left out"
else
    make_venv onmt "$ONMT_PIN" "$HERE/onmt_requirements.txt"
    make_venv joey "$JOEY_PIN" "$HERE/joey_requirements.txt"
    "$JOEY_PY" -W ignore -c "import joeynmt.training, joeynmt.data"
fi
"$ONMT_PY" -W ignore "$HERE/boot.py" 1 onmt.bin.train -h > /dev/null

# ------------------------------------------------------------------ data
DATA="$PEERS_DIR/data"
if [[ "${FORCE:-0}" == 1 ]]; then rm -rf "$DATA"; fi
mkdir -p "$DATA/m30k" "$DATA/onmt" "$DATA/joey" "$DATA/configs"
for split in train val test; do
    up="$split"; [[ "$split" == test ]] && up="test_2016_flickr"
    for lang in en de; do
        # Both toolkits split on single spaces; squeeze runs of spaces and strip
        # leading/trailing ones so no empty "" token appears (one training line,
        # train.en:16217, has a double and a trailing space; OpenNMT-py's vocab
        # reader crashes on the resulting empty word).
        gzip -dc "$M30K_SRC/$up.lc.norm.tok.$lang.gz" \
            | sed -e 's/  */ /g' -e 's/^ //' -e 's/ $//' > "$DATA/m30k/$split.$lang"
    done
done
log "multi30k: $(wc -l < "$DATA/m30k/train.en") training pairs"

# Fill in ${PEER_DATA}; ${RUN_DIR} points to a scratch dir for the vocab runs.
fill() {  # fill SRC DST RUN_DIR
    sed -e "s|\${PEER_DATA}|$DATA|g" -e "s|\${RUN_DIR}|$3|g" "$1" > "$2"
}
fill "$HERE/onmt_m30k_small.yaml" "$DATA/configs/onmt_vocab.yaml" "$DATA/onmt/vocab_run"
fill "$HERE/joey_m30k_small.yaml" "$DATA/configs/joey_vocab.yaml" "$DATA/joey/vocab_run"

# OpenNMT-py: counts over the full (filtertoolong-filtered) training corpus;
# the min-frequency-2 cut is applied at training time (src/tgt_words_min_frequency).
rm -f "$DATA/onmt/vocab.en" "$DATA/onmt/vocab.de"
mkdir -p "$DATA/onmt/vocab_run"
( cd "$DATA/onmt/vocab_run" && OMP_NUM_THREADS=1 "$ONMT_PY" -W ignore "$HERE/boot.py" 1 onmt.bin.build_vocab \
    -config "$DATA/configs/onmt_vocab.yaml" -n_sample -1 -num_threads 1 )
log "onmt vocab: $(wc -l < "$DATA/onmt/vocab.en") en / $(wc -l < "$DATA/onmt/vocab.de") de word types (before the >=2 cut)"

if [[ -z "${OFFLINE_PYTHON:-}" ]]; then
# Joey NMT: its own load_data() builds the vocabularies from the training set
# (after max_length filtering) with voc_min_freq; written with Vocabulary.to_file.
rm -f "$DATA/joey/src_vocab.txt" "$DATA/joey/trg_vocab.txt"
OMP_NUM_THREADS=1 "$JOEY_PY" -W ignore - "$DATA/configs/joey_vocab.yaml" "$DATA/joey" <<'EOF'
import sys
from pathlib import Path
from joeynmt.config import load_config, _check_special_symbols
from types import SimpleNamespace
from joeynmt.data import load_data

cfg = load_config(Path(sys.argv[1]))
out = Path(sys.argv[2])
data_cfg = cfg["data"]
data_cfg["special_symbols"] = SimpleNamespace(
    **_check_special_symbols(data_cfg.get("special_symbols", {})))
for side in ("src", "trg"):
    data_cfg[side].pop("voc_file", None)  # force building from the training data
src_vocab, trg_vocab, *_ = load_data(data_cfg, datasets=["train"])
src_vocab.to_file(out / "src_vocab.txt")
trg_vocab.to_file(out / "trg_vocab.txt")
print(f"joey vocab: {len(src_vocab)} src / {len(trg_vocab)} trg entries (incl. specials)")
EOF
fi
rm -rf "$DATA/onmt/vocab_run" "$DATA/joey/vocab_run" "$DATA/configs/onmt_vocab.yaml" "$DATA/configs/joey_vocab.yaml"
log "done: PEERS_DIR=$PEERS_DIR"
