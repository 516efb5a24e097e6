"""The VLM systems' settings, read from `APMBENCH_VLM_*` environment variables.

A system is started by name (`python -m apmbench.adapters vlm-video-memory`,
or an image's entry point), so its settings come from the environment it is
started in: the harness's process runtime passes its own environment on, and
a container gets them from the image or `--env`. They are read when the
system is built, never at import time, and an unusable value stops the server
before it reports SERVING, with the variable to fix named.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from apmbench.adapters.sdk.errors import ApmbenchError

PREFIX = "APMBENCH_VLM_"
BACKENDS = ("transformers", "openai")
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "bfloat16", "float16", "float32")


class VlmConfigError(ApmbenchError):
    """A setting, model directory or endpoint cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class VlmSettings:
    """Every knob of the VLM backends. Field `x` is read from `APMBENCH_VLM_X`."""

    backend: str = "transformers"
    """`transformers` (a local model directory) or `openai` (an OpenAI-compatible endpoint)."""
    model: str = ""
    """transformers: the local Hugging Face directory of a Qwen-VL checkpoint (nothing is
    downloaded). openai: unused (see `api_model`)."""
    device: str = "auto"
    """auto (the first GPU if torch sees one, else the CPU), cpu, cuda or cuda:N."""
    dtype: str = "auto"
    """auto is bfloat16 on a GPU and float32 on the CPU."""
    max_frames: int = 1024
    """Frame budget of one prompt over all its clips; the paper uses up to 1,024 for Qwen."""
    max_side: int = 448
    """Longest frame side the system asks the harness for (Describe's preferred_max_side)."""
    max_pixels: int = 448 * 448
    """Upper bound on one frame's pixels after resizing for the vision encoder."""
    max_video_tokens: int = 100_000
    """Visual tokens of one prompt over all its clips; frames shrink to fit (Qwen2.5-VL has a
    128K context). Below a floor of 4 tokens a frame this may be exceeded."""
    max_new_tokens: int = 512
    """Longest answer, in tokens."""
    summary_max_new_tokens: int = 1024
    """Longest session summary of `vlm-text-memory`, in tokens."""
    temperature: float = 0.0
    """0 decodes greedily (deterministic, the default); above 0 samples with `seed`."""
    seed: int = 0
    """Sampling seed, set before every generation so sampled runs repeat too."""
    api_base: str = ""
    """openai: the endpoint's base URL, e.g. http://127.0.0.1:8000/v1 for `vllm serve`."""
    api_model: str = ""
    """openai: the model name the endpoint serves."""
    api_key_env: str = "APMBENCH_VLM_API_KEY"
    """openai: the environment variable that holds the API key (never recorded)."""
    api_timeout_s: float = 600.0
    """openai: seconds to wait for the endpoint before a call fails."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> VlmSettings:
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for f in fields(cls):
            name = PREFIX + f.name.upper()
            text = env.get(name)
            if text is None or text == "":
                continue
            values[f.name] = _parse(name, text, type(getattr(cls(), f.name)))
        settings = cls(**values)  # type: ignore[arg-type]
        settings.check()
        return settings

    def check(self) -> None:
        """Raise VlmConfigError naming the variable of the first unusable value."""
        if self.backend not in BACKENDS:
            _bad("BACKEND", self.backend, "one of " + ", ".join(BACKENDS))
        if self.device.split(":", 1)[0] not in DEVICES:
            _bad("DEVICE", self.device, "auto, cpu, cuda or cuda:N")
        if self.dtype not in DTYPES:
            _bad("DTYPE", self.dtype, "one of " + ", ".join(DTYPES))
        for name in ("max_frames", "max_side", "max_pixels", "max_video_tokens"):
            if getattr(self, name) < 1:
                _bad(name.upper(), getattr(self, name), "a positive number")
        for name in ("max_new_tokens", "summary_max_new_tokens"):
            if getattr(self, name) < 1:
                _bad(name.upper(), getattr(self, name), "a positive number of tokens")
        if self.temperature < 0:
            _bad("TEMPERATURE", self.temperature, "0 (greedy) or a positive temperature")
        if self.backend == "transformers" and not self.model:
            raise VlmConfigError(
                f"{PREFIX}MODEL is not set: point it at a local Qwen-VL model directory in "
                "Hugging Face format (config.json, *.safetensors, tokenizer files), e.g. "
                f"{PREFIX}MODEL=/models/Qwen2.5-VL-7B-Instruct; in a container, mount it with "
                "--mount HOST_DIR:/models/vlm"
            )
        if self.backend == "openai" and not (self.api_base and self.api_model):
            raise VlmConfigError(
                f"{PREFIX}BACKEND=openai needs {PREFIX}API_BASE (e.g. http://127.0.0.1:8000/v1) "
                f"and {PREFIX}API_MODEL (the served model's name)"
            )

    @property
    def model_path(self) -> Path:
        return Path(self.model)

    def api_key(self, environ: Mapping[str, str] | None = None) -> str:
        env = os.environ if environ is None else environ
        return env.get(self.api_key_env, "")

    def record(self) -> dict[str, str]:
        """The settings as Describe details (strings); the API key is never among them."""
        return {f"vlm.{f.name}": str(getattr(self, f.name)) for f in fields(self)}


def _bad(name: str, value: object, wanted: str) -> None:
    raise VlmConfigError(f"{PREFIX}{name}={value!r}: give {wanted}")


def _parse(name: str, text: str, kind: type) -> object:
    try:
        if kind is int:
            return int(text.replace("_", ""))
        if kind is float:
            return float(text)
    except ValueError as e:
        what = "a whole number" if kind is int else "a number"
        raise VlmConfigError(f"{name}={text!r}: give {what}") from e
    return text
