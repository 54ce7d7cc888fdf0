"""Test double of Hugging Face `datasets`' load_dataset, for the one dataset a job fetches with it:
Salesforce/wikitext (the Megatron preprocessing step in templates/megatron-lm/perlmutter/).

What the real one does and this one keeps: the dataset's configs are the four the Hub's
Salesforce/wikitext card lists (wikitext-103-raw-v1, wikitext-103-v1, wikitext-2-raw-v1,
wikitext-2-v1); another name fails with datasets' "BuilderConfig ... not found. Available: [...]"
ValueError; a repository it does not know fails as an unknown Hub dataset does
(DatasetNotFoundError); rows are {"text": ...} dicts in WikiText's shape (" = Heading = \n"
lines, paragraph lines, and empty rows between them), read through split="train". Set
CCL_DOUBLE_HF_OFFLINE=1 to fail as an unreachable Hub does (a ConnectionError), and
CCL_DOUBLE_HF_CALLS=FILE to have each call appended to FILE.

The rows are the double's own text, not WikiText's.
"""
import os

CONFIGS = ["wikitext-103-raw-v1", "wikitext-103-v1", "wikitext-2-raw-v1", "wikitext-2-v1"]


class DatasetNotFoundError(FileNotFoundError):
    pass


def _rows(config):
    heading = " = Collective communication = \n"
    paragraphs = [
        " An all-reduce sums a tensor over every rank and leaves the sum on each of them . \n",
        " A ring all-reduce sends each chunk around the ring twice : once to reduce , once to gather . \n",
        " Expert parallelism exchanges tokens with an all-to-all before and after the experts . \n",
    ]
    rows = [{"text": ""}, {"text": heading}, {"text": ""}]
    repeat = 40 if config.startswith("wikitext-103") else 10
    for i in range(repeat):
        for p in paragraphs:
            rows.append({"text": p.replace(" . ", f" ( {i} ) . ")})
            rows.append({"text": ""})
    return rows


def load_dataset(path, name=None, split=None, **kwargs):
    calls = os.environ.get("CCL_DOUBLE_HF_CALLS")
    if calls:
        with open(calls, "a", encoding="utf-8") as f:
            f.write(f"load_dataset {path} {name} split={split}\n")
    if os.environ.get("CCL_DOUBLE_HF_OFFLINE") == "1":
        raise ConnectionError(f"Couldn't reach '{path}' on the Hub (LocalEntryNotFoundError)")
    if path not in ("Salesforce/wikitext", "wikitext"):
        raise DatasetNotFoundError(f"Dataset '{path}' doesn't exist on the Hub or cannot be accessed.")
    if name not in CONFIGS:
        raise ValueError(f"BuilderConfig '{name}' not found. Available: {CONFIGS}")
    if split is None:
        return {"train": _rows(name)}
    if split != "train" and split not in ("validation", "test"):
        raise ValueError(f'Unknown split "{split}". Should be one of [\'test\', \'train\', \'validation\'].')
    return _rows(name)
