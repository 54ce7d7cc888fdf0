"""Test double of Megatron-LM core_v0.15.3's tools/preprocess_data.py, run from the checkout's root.

Its parser is the real one's (tools/preprocess_data.py:198-245): argparse.ArgumentParser() with
its default allow_abbrev, the tokenizer group of megatron/training/arguments.py:2758-2805
(_add_tokenizer_args; --tokenizer-type's choices at :2773) and the tool's own options, of which
--input, --output-prefix and --workers are required (:202, :216, :219). It reads --input as JSONL,
each line a JSON object whose --json-keys (default ["text"], :204) it tokenizes, a missing key
failing as the real encode's data[key] does (:96-98), and writes, per key, the indexed dataset
"{output_prefix}_{key}_{level}.bin/.idx" with level "document" (:377-393; "sentence" only with
--split-sentences, which needs nltk: :268-274). The .idx starts as MMapIndexedDataset's does
(megatron/core/datasets/indexed_dataset.py:46, 146-150, 193-197: header, version 1, dtype code,
sequence and document counts), so the pretrain_gpt double can check what it opens.

Tokenization is the double's own: whitespace words hashed into a 32,000-id vocabulary. The real
HuggingFaceTokenizer needs --tokenizer-model (megatron/training/tokenizer/tokenizer.py:49-52
hands it to transformers.AutoTokenizer.from_pretrained), and so does this one.
"""
import argparse
import json
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
for lib in (os.path.join(HERE, "..", "tests", "doubles", "lib"), os.path.join(HERE, "..", "..", "lib")):
    if os.path.isfile(os.path.join(lib, "double_common.py")):
        sys.path.insert(0, lib)
        break
import double_common as dc  # noqa: E402

INDEX_HEADER = b"MMIDIDX\x00\x00"  # indexed_dataset.py:46
INT32_CODE = 4  # DType.int32 (indexed_dataset.py:49-57)


def parser():
    contract = dc.load_contract("megatron-lm", "core_v0.15.3")
    tokenizer_types = next(o["choices"] for o in contract["options"] if o["name"] == "--tokenizer-type")
    p = argparse.ArgumentParser(prog="preprocess_data.py")
    group = p.add_argument_group(title="tokenizer")  # arguments.py:2758-2805
    group.add_argument("--vocab-size", type=int, default=None)
    group.add_argument("--padded-vocab-size", type=int, default=None)
    group.add_argument("--vocab-file", type=str, default=None)
    group.add_argument("--merge-file", type=str, default=None)
    group.add_argument("--vocab-extra-ids", type=int, default=0)
    group.add_argument("--tokenizer-type", type=str, default=None, choices=tokenizer_types)
    group.add_argument("--tokenizer-model", type=str, default=None)
    group.add_argument("--tokenizer-metadata", type=str, default=None)
    group.add_argument("--tiktoken-pattern", type=str, default=None)
    group.add_argument("--tiktoken-num-special-tokens", type=int, default=1000)
    group.add_argument("--tiktoken-special-tokens", type=str, nargs="+", default=None)
    group.add_argument("--legacy-tokenizer", action="store_true", default=False)
    group.add_argument("--trust-remote-code", action="store_true", default=False)
    group = p.add_argument_group(title="input data")  # preprocess_data.py:201-209
    group.add_argument("--input", type=str, required=True)
    group.add_argument("--json-keys", nargs="+", default=["text"])
    group.add_argument("--split-sentences", action="store_true")
    group.add_argument("--keep-newlines", action="store_true")
    group = p.add_argument_group(title="tokenization process")  # :210-214
    group.add_argument("--append-eod", action="store_true")
    group.add_argument("--lang", type=str, default="english")
    group = p.add_argument_group(title="output data")  # :215-217
    group.add_argument("--output-prefix", type=str, required=True)
    group = p.add_argument_group(title="runtime")  # :218-229
    group.add_argument("--workers", type=int, required=True)
    group.add_argument("--partitions", type=int, default=1)
    group.add_argument("--log-interval", type=int, default=1000)
    group.add_argument("--keep-sequential-samples", action="store_true")
    return p


def fail(message):
    sys.stderr.write(f"Traceback (most recent call last):\n  File \"tools/preprocess_data.py\"\n{message}\n")
    sys.exit(1)


def main():
    args = parser().parse_args()
    if args.split_sentences:
        fail("Exception: nltk library required for sentence splitting is not available.")  # :268-274, the double has none
    if args.partitions != 1:
        fail("double: --partitions above 1 is not modelled")
    if args.tokenizer_type is None:
        fail("double: no --tokenizer-type (build_tokenizer has no tokenizer to build)")
    if args.tokenizer_type == "HuggingFaceTokenizer" and not args.tokenizer_model:
        fail("OSError: None is not a local folder and is not a valid model identifier")
    if args.tokenizer_type != "HuggingFaceTokenizer":
        fail(f"double: only HuggingFaceTokenizer is modelled, not {args.tokenizer_type}")
    if args.workers < 1:
        fail("ValueError: Number of processes must be at least 1")  # multiprocessing.Pool(args.workers)
    print("Opening", args.input, flush=True)  # :154
    with open(args.input, encoding="utf-8") as f:  # a missing file: FileNotFoundError, exit 1
        lines = f.readlines()
    eod = 0
    for key in args.json_keys:
        tokens, lengths = [], []
        for line in lines:
            data = json.loads(line)
            if key not in data:
                fail(f"KeyError: '{key}'")
            ids = [zlib.crc32(word.encode()) % 32000 + 1 for word in data[key].split()]
            if args.append_eod and ids:
                ids.append(eod)  # :108-110
            if ids:  # an empty document adds nothing (:104-107)
                tokens.extend(ids)
                lengths.append(len(ids))
        base = f"{args.output_prefix}_{key}_document"
        with open(base + ".bin", "wb") as f:
            f.write(struct.pack(f"<{len(tokens)}i", *tokens))
        with open(base + ".idx", "wb") as f:
            f.write(INDEX_HEADER + struct.pack("<Q", 1) + struct.pack("<B", INT32_CODE))
            f.write(struct.pack("<Q", len(lengths)) + struct.pack("<Q", len(lengths) + 1))
            f.write(struct.pack(f"<{len(lengths)}i", *lengths))
        print(f"Processed {len(lengths)} documents ({len(tokens)} tokens) into {base}.bin/.idx", flush=True)


if __name__ == "__main__":
    main()
