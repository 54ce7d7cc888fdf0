"""Test double of huggingface_hub (the NGC PyTorch image ships it): snapshot_download only.

Like the real one it validates the repo id first (huggingface_hub.utils.validate_repo_id:
"namespace/name", letters, digits, '-', '_', '.'; no '--' or '..', at most 96 characters) and
raises HFValidationError for anything else, such as a model family name or a path. Instead of
downloading, it writes the small files TorchTitan reads from model.hf_assets_path
(config.json, tokenizer.json, tokenizer_config.json) into local_dir, filtered by allow_patterns.
"""
import fnmatch
import json
import os
import re

__version__ = "0.35.3"

_REPO_ID = re.compile(r"^(\b[\w\-.]+\b/)?\b[\w\-.]{1,96}\b$")


class HFValidationError(ValueError):
    """Raised for a repo id the Hub cannot name (huggingface_hub.errors.HFValidationError)."""


def _validate_repo_id(repo_id):
    if not isinstance(repo_id, str):
        raise HFValidationError(f"Repo id must be a string, not {type(repo_id)}: '{repo_id}'.")
    if repo_id.count("/") > 1 or not _REPO_ID.match(repo_id) or "--" in repo_id or ".." in repo_id \
            or repo_id.endswith(".git"):
        raise HFValidationError(
            "Repo id must be in the form 'repo_name' or 'namespace/repo_name': "
            f"'{repo_id}'. Use `repo_type` argument if needed.")


def snapshot_download(repo_id, *, local_dir=None, allow_patterns=None, revision=None, token=None, **_):
    """Validates `repo_id`, then writes stand-ins for the files a training run reads."""
    _validate_repo_id(repo_id)
    if "/" not in repo_id:
        # The real Hub answers 401/404 for a name without a namespace that is no model.
        raise HFValidationError(f"Repository Not Found for url: https://huggingface.co/api/models/{repo_id}")
    target = local_dir or os.path.join(os.environ.get("HF_HOME", os.path.expanduser("~/.cache/huggingface")),
                                       "hub", "models--" + repo_id.replace("/", "--"))
    os.makedirs(target, exist_ok=True)
    files = {
        "config.json": {"_name_or_path": repo_id, "model_type": "stand-in"},
        "tokenizer.json": {"version": "1.0", "model": {"type": "BPE"}},
        "tokenizer_config.json": {"tokenizer_class": "PreTrainedTokenizerFast"},
    }
    for name, content in files.items():
        if allow_patterns and not any(fnmatch.fnmatch(name, p) for p in allow_patterns):
            continue
        with open(os.path.join(target, name), "w", encoding="utf-8") as f:
            json.dump(content, f)
    return target
