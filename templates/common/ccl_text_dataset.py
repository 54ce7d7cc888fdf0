"""Writes one split of a Hugging Face text dataset as JSONL, one {KEY: text} object per row.

The launch scripts run it, in the job's image, where a framework reads text only from a file:
Megatron-LM's tools/preprocess_data.py takes {"text": ...} lines (its --json-keys default), and
`vllm bench serve --dataset-name custom` takes {"prompt": ...} lines. Rows come from the
`datasets` library where the image has it, else from the split's parquet files through
huggingface_hub and pyarrow. Blank rows are left out; --strip and --min-chars follow a
contributor's own filter (group 9's run_script.py: text.strip(), longer than 20 characters), and
--limit keeps the first rows only. The file is written beside OUT and renamed onto it when
whole, so that a job never reads half of it.

Exit status: 0 written; 1 the dataset could not be read (the message says why); 2 bad usage.
"""
import argparse
import glob
import json
import os
import sys


def rows(repo, config, split):
    try:
        import datasets
    except ImportError:
        datasets = None
    if datasets is not None:
        for row in datasets.load_dataset(repo, config, split=split):
            yield row["text"]
        return
    try:
        import pyarrow.parquet as pq
        from huggingface_hub import snapshot_download
    except ImportError as e:
        sys.exit(f"the image has neither `datasets` nor huggingface_hub and pyarrow ({e}): it cannot fetch {repo} {config}")
    local = snapshot_download(repo_id=repo, repo_type="dataset", allow_patterns=[f"{config}/{split}-*.parquet"])
    files = sorted(glob.glob(os.path.join(local, config, f"{split}-*.parquet")))
    if not files:
        sys.exit(f"{repo} has no {config}/{split}-*.parquet")
    for name in files:
        for batch in pq.ParquetFile(name).iter_batches(columns=["text"]):
            yield from batch.column(0).to_pylist()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", required=True, help="the Hub dataset id, e.g. Salesforce/wikitext")
    p.add_argument("--config", required=True, help="its config, e.g. wikitext-103-raw-v1")
    p.add_argument("--split", default="train")
    p.add_argument("--key", default="text", help="the JSON key each line's text goes under")
    p.add_argument("--strip", action="store_true", help="strip each row's surrounding white space")
    p.add_argument("--min-chars", type=int, default=1, help="leave out rows shorter than this")
    p.add_argument("--limit", type=int, default=0, help="keep the first N rows only (0: all)")
    p.add_argument("--out", required=True)
    args = p.parse_args()

    partial = f"{args.out}.partial-{os.getpid()}"
    count = 0
    try:
        with open(partial, "w", encoding="utf-8") as f:
            for text in rows(args.repo, args.config, args.split):
                if not text or not text.strip():
                    continue
                if args.strip:
                    text = text.strip()
                if len(text) < args.min_chars:
                    continue
                f.write(json.dumps({args.key: text}) + "\n")
                count += 1
                if args.limit and count >= args.limit:
                    break
        if count == 0:
            sys.exit(f"{args.repo} {args.config} {args.split}: no rows to write")
        os.replace(partial, args.out)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    print(f"{args.repo} {args.config} {args.split}: {count} rows in {args.out}", flush=True)


if __name__ == "__main__":
    main()
