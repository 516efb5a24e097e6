"""A judge that runs a local transformers model with its chat template (offline use).

torch and transformers come from the optional `models` extra and are imported
only here, only when this judge is chosen. Decoding is greedy, the
temperature-0 equivalent, so the same prompt gives the same reply on the same
weights. Nothing is fetched from a hub: the directory must hold the weights,
the tokenizer and a chat template.
"""

from __future__ import annotations

import threading

from apmbench.adapters.vlm.checkpoint import model_fingerprint
from apmbench.harness.errors import ConfigError
from apmbench.harness.json_types import JsonObject
from apmbench.harness.scoring.judge.backend import Messages
from apmbench.harness.scoring.judge.config import JudgeConfig


class TransformersJudge:
    # One generate() at a time: a model instance is not safe to share across threads.
    max_concurrency = 1

    @classmethod
    def check_config(cls, config: JudgeConfig) -> None:
        if config.path is None or not config.path.is_dir():
            raise ConfigError(f"--judge transformers:PATH: {config.path} is not a model directory")

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
        self.tokenizer: transformers.PreTrainedTokenizerBase
        self.model: transformers.PreTrainedModel
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
        self.cache_identity: JsonObject = {
            "kind": "transformers",
            "fingerprint": model_fingerprint(path),
            "decoding": "greedy",
            "max_new_tokens": self.max_new_tokens,
        }
        self.identity: JsonObject = {
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
