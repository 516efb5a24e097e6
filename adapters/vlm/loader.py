"""The factory that picks and loads a VLM backend from the settings.

It imports every backend, and each backend implements the interface in backend.py, so
the factory lives apart from that interface: the backends import backend.py, and
backend.py imports no backend. `qwen` (torch, transformers) is imported only when a local
model is opened.
"""

from __future__ import annotations

from apmbench.adapters.vlm.backend import VideoLanguageModel
from apmbench.adapters.vlm.settings import VlmConfigError, VlmSettings


def open_backend(settings: VlmSettings) -> VideoLanguageModel:
    """The backend `settings` asks for, loaded and ready; VlmConfigError says what to fix."""
    if settings.backend == "openai":
        from apmbench.adapters.vlm.openai_api import OpenAIChatModel

        return OpenAIChatModel(settings)
    from apmbench.adapters.vlm.checkpoint import inspect_checkpoint

    checkpoint = inspect_checkpoint(settings.model_path)  # fast, before the heavy imports
    try:
        from apmbench.adapters.vlm.qwen import QwenVL
    except ImportError as e:
        raise VlmConfigError(
            f"the transformers backend needs torch and transformers ({e}): "
            "pip install -e '.[models]', or use an image built by `make images-gpu`"
        ) from e
    return QwenVL(checkpoint, settings)
