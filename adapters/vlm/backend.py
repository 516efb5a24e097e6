"""The interface the VLM systems talk to (the factory that picks a backend is loader.py).

A backend turns a `Prompt` into streamed text. It is built once per server
process (loading a model is the slow part of a start) and used by one call at
a time (the SDK serialises calls).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping

from apmbench.adapters.vlm.prompt import Prompt


class VideoLanguageModel(ABC):
    @abstractmethod
    def identity(self) -> Mapping[str, str]:
        """What runs (backend, model, its fingerprint, device, dtype) for Describe's details."""

    @abstractmethod
    def stream(self, prompt: Prompt, max_new_tokens: int) -> Iterator[str]:
        """Yield the answer's text as it is generated; the first piece as soon as it exists.

        Closing the iterator early stops the generation.
        """


class IncrementalText:
    """Turns token ids, one at a time, into text pieces as soon as they are complete.

    A piece is emitted once the decoded text no longer ends in a partial
    character (byte-level tokens can split a UTF-8 sequence); unlike
    transformers' TextStreamer it does not wait for a space, so a JSON answer
    with none still streams token by token.
    """

    def __init__(self, decode: Callable[[list[int]], str]) -> None:
        self._decode = decode
        self._ids: list[int] = []
        self._sent = ""

    def push(self, token_id: int) -> str:
        self._ids.append(token_id)
        text = self._decode(self._ids)
        if text.endswith("\ufffd") or not text.startswith(self._sent):
            return ""  # incomplete character, or a merge that rewrote earlier text: wait
        piece = text[len(self._sent) :]
        self._sent = text
        return piece

    def flush(self) -> str:
        text = self._decode(self._ids)
        piece = text[len(self._sent) :] if text.startswith(self._sent) else ""
        self._sent = text
        return piece
