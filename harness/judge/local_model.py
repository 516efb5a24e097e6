"""A judge that runs a local transformers model with its chat template (offline use).

torch and transformers come from the optional `models` extra and are imported
only here, only when this judge is chosen. Decoding is greedy, the
temperature-0 equivalent, so the same prompt gives the same reply on the same
weights. Nothing is fetched from a hub: the directory must hold the weights,
the tokenizer and a chat template.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

from apmbench.harness.errors import ConfigError
from apmbench.harness.judge.backend import Messages
from apmbench.harness.judge.config import JudgeConfig

_FULL_HASH_LIMIT = 16 << 20


def model_fingerprint(root: Path) -> str:
    """Content hash of a model directory: small files fully, weights by size and first/last MiB.

    Keys the reply cache, so a changed checkpoint under the same path never
    reuses replies of the old one; hashing whole multi-GB weights would take
    longer than judging.
    """
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".") or "/." in rel:
            continue
        size = path.stat().st_size
        digest.update(f"{rel}\0{size}\0".encode())
        with path.open("rb") as f:
            if size <= _FULL_HASH_LIMIT:
                digest.update(f.read())
            else:
                digest.update(f.read(1 << 20))
                f.seek(size - (1 << 20))
                digest.update(f.read(1 << 20))
    return digest.hexdigest()


class TransformersJudge:
    # One generate() at a time: a model instance is not safe to share across threads.
    max_concurrency = 1

    def __init__(self, config: JudgeConfig) -> None:
        assert config.path is not None
        try:
            import torch
            import transformers
        except ImportError as e:
            raise ConfigError(
                "--judge transformers needs torch and transformers: pip install -e '.[models]'"
            ) from e
        self._torch = torch
        path = config.path.resolve()
        self.tokenizer: Any
        self.model: Any
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(
                str(path), local_files_only=True
            )
            self.model = transformers.AutoModelForCausalLM.from_pretrained(
                str(path), local_files_only=True, dtype="auto"
            )
        except (OSError, ValueError) as e:
            raise ConfigError(f"--judge transformers:{path}: cannot load the model: {e}") from e
        if not getattr(self.tokenizer, "chat_template", None):
            raise ConfigError(
                f"--judge transformers:{path}: the tokenizer has no chat template "
                "(save one with the tokenizer, as chat_template.jinja or in tokenizer_config.json)"
            )
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model.to(self.device)
        self.model.eval()
        self.max_new_tokens = config.max_tokens
        self.cache_identity: dict[str, Any] = {
            "kind": "transformers",
            "fingerprint": model_fingerprint(path),
            "decoding": "greedy",
            "max_new_tokens": self.max_new_tokens,
        }
        self.identity: dict[str, Any] = {
            **self.cache_identity,
            "path": str(path),
            "model_type": str(getattr(self.model.config, "model_type", "")),
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "device": self.device,
        }
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, messages: Messages) -> str:
        with self._lock, self._torch.inference_mode():
            self.calls += 1
            encoded = self.tokenizer.apply_chat_template(
                [dict(m) for m in messages],
                add_generation_prompt=True,
                return_tensors="pt",
                return_dict=True,
            ).to(self.device)
            prompt_len = int(encoded["input_ids"].shape[1])
            pad = self.tokenizer.pad_token_id
            if pad is None:
                pad = self.tokenizer.eos_token_id
            output = self.model.generate(
                **encoded,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=pad,
            )
            text: str = self.tokenizer.decode(output[0, prompt_len:], skip_special_tokens=True)
            return text

    def close(self) -> None:
        pass
