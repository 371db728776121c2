#!/usr/bin/env bash
# Wheels for a GPU machine that has PyTorch, Lightning and the scientific stack but no package
# index (an offline cluster node, a locked-down cloud image): what luong_lit and OpenNMT-py
# 3.5.1 need beyond such an image, fetched here for its Python and platform.
#
#   bash scripts/gpu/wheelhouse.sh [DIR]          # default DIR: .whl (keep it out of git)
#   PY_VERSION=3.11 bash scripts/gpu/wheelhouse.sh .whl311
#
# There, with DIR copied beside the repository:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site DIR/*.whl
#   export PYTHONPATH=/tmp/site:$PWD
#
# luong_lit: hydra-core, omegaconf, antlr4 (sdist only: built into a wheel here), sacremoses,
# the joblib launcher. OpenNMT-py: itself, ConfigArgParse, pyonmttok, RapidFuzz, pyahocorasick
# (spacy and fasttext are imported but unused: scripts/peers/boot.py stands in for
# them). Everything else is taken from the image: torch, lightning, torchmetrics, sacrebleu,
# sentencepiece, matplotlib, numpy, pyyaml, regex, six, click, joblib, tqdm, aiohttp.
set -euo pipefail
DIR="${1:-.whl}"
PY_VERSION="${PY_VERSION:-3.12}"
PIP="${PIP:-python3 -m pip}"
mkdir -p "$DIR"
PLATFORMS=""
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
         manylinux1_x86_64; do PLATFORMS="$PLATFORMS --platform $p"; done
$PIP download -q --no-deps --only-binary=:all: --python-version "$PY_VERSION" --implementation cp \
    $PLATFORMS -d "$DIR" \
    hydra-core==1.3.2 omegaconf==2.3.0 sacremoses==0.1.1 hydra-joblib-launcher==1.2.0 \
    OpenNMT-py==3.5.1 ConfigArgParse==1.9.0 pyonmttok==1.38.1 RapidFuzz==3.14.6 \
    pyahocorasick==2.3.1
$PIP wheel -q --no-deps -w "$DIR" antlr4-python3-runtime==4.9.3   # pure Python
echo "$(ls "$DIR" | wc -l) wheels, $(du -sh "$DIR" | cut -f1) in $DIR"
