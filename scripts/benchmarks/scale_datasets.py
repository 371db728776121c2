"""The candidate library of ``scripts.benchmarks.scale``: the corpus through ``datasets``.

The pipeline a user of ``datasets`` would write: pairs read by ``Dataset.from_generator``
(Arrow files), tokenised and length-filtered by ``map``/``filter`` with ``num_proc`` workers,
words counted over the tokenised column, ids written by a second ``map``, ``save_to_disk``;
training opens it with ``load_from_disk`` (memory-mapped Arrow) and reads the lengths column
for the batch sampler. Both strings run in a fresh interpreter
(``scripts.benchmarks.scale.run_child``).
"""

PREPARE = """
import gzip, json, os, resource, time
from collections import Counter
import datasets
from luong_lit.data.vocab import Vocab

def memory():
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return {{"peak_mib": int(status["VmHWM"].split()[0]) / 1024}}

out, workers, cache = {out!r}, {workers}, os.environ["LUONG_LIT_CACHE"]
t0 = time.perf_counter()

def pairs():
    with gzip.open(out + "/train.en.gz", "rt", encoding="utf-8") as fs, \\
         gzip.open(out + "/train.de.gz", "rt", encoding="utf-8") as ft:
        for s, t in zip(fs, ft):
            yield {{"src": s.rstrip("\\n"), "tgt": t.rstrip("\\n")}}

ds = datasets.Dataset.from_generator(pairs, cache_dir=cache)
def tokenize(b):
    return {{"src_tok": [x.split() for x in b["src"]], "tgt_tok": [x.split() for x in b["tgt"]]}}

def keep(b):
    return [0 < len(s) <= 50 and 0 < len(t) <= 50 for s, t in zip(b["src_tok"], b["tgt_tok"])]

ds = ds.map(tokenize, batched=True, num_proc=workers, remove_columns=["src", "tgt"])
ds = ds.filter(keep, batched=True, num_proc=workers)
counts = {{"src": Counter(), "tgt": Counter()}}
for batch in ds.iter(batch_size=10000):
    for side in ("src", "tgt"):
        for sent in batch[side + "_tok"]:
            counts[side].update(sent)
stoi = {{side: Vocab.from_counts(counts[side], 50000, 1).stoi for side in ("src", "tgt")}}

def encode(b):
    out = {{}}
    for side in ("src", "tgt"):
        get = stoi[side].get
        out[side + "_ids"] = [[get(w, 1) for w in s] for s in b[side + "_tok"]]
        out[side + "_len"] = [len(s) for s in b[side + "_tok"]]
    return out

ids, length = datasets.Sequence(datasets.Value("uint16")), datasets.Value("int32")
columns = {{"src_ids": ids, "tgt_ids": ids, "src_len": length, "tgt_len": length}}
features = datasets.Features(columns)
ds = ds.map(encode, batched=True, num_proc=workers, remove_columns=["src_tok", "tgt_tok"],
            features=features)
ds.save_to_disk(cache + "/store")
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({{"seconds": time.perf_counter() - t0, "pairs": len(ds),
                   "workers_peak_mib": children, **memory()}}))
"""

OPEN = """
import itertools, json, os, time
import lightning, torch

def memory():
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    mib = lambda k: int(status[k].split()[0]) / 1024
    return {{"peak_mib": mib("VmHWM"), "anon_mib": mib("RssAnon"), "file_mib": mib("RssFile")}}

base = memory()
import datasets
import numpy as np
from torch.utils.data import DataLoader
from luong_lit.data import BucketBatchSampler, collate

ds = datasets.load_from_disk(os.environ["LUONG_LIT_CACHE"] + "/store")
src_len, tgt_len = (ds.data.column(c).to_numpy() for c in ("src_len", "tgt_len"))  # Arrow, no copy

class Pairs:
    def __len__(self):
        return len(ds)
    def __getitem__(self, i):
        return self.__getitems__([i])[0]
    def __getitems__(self, idx):  # one Arrow read per batch (DataLoader's batched fetch)
        rows = ds[[int(i) for i in idx]]
        return [(int(i), s, t) for i, s, t in zip(idx, rows["src_ids"], rows["tgt_ids"])]

sampler = BucketBatchSampler(src_len, tgt_len, 128, seed=1234)
batches = iter(DataLoader(Pairs(), batch_sampler=sampler, collate_fn=collate))
next(batches)
first = time.time()
for _ in itertools.islice(batches, 999):
    pass
print(json.dumps({{"first_batch_at": first, "batches": 1000, "after_imports": base, **memory()}}))
"""
