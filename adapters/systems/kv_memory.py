"""`kv-memory`: the model's own KV cache as memory, retrieved per query (ReKV-style).

Ingest: every `APMBENCH_VLM_FRAMES_PER_BLOCK` frames (and what is left at a
session's end) form a block; the vision encoder and the language model run
over the block's tokens right away, with the previous block's KV as context,
and the block's keys and values of every layer are kept on the CPU. Nothing
else is kept: no frames, no text.

Query: the question's representation (the mean value vector of its tokens,
per layer) is compared by cosine similarity with each block's (the mean of its
kept values); the `APMBENCH_VLM_TOP_K` most similar blocks and the most
recent block are loaded as the cache, in time order, and the answer is decoded
greedily after them from the system prompt, the user's turns of this session
and the task. Frames of a block not yet complete when the query comes (fewer
than a block) are not seen.

ExportState is a safetensors file of the kept tensors, two per block
(`block.NNNNN.keys`, `block.NNNNN.values`, each layers x kv_heads x tokens x
head_dim in the model's dtype), with the model's identity, the dtype and the
block index in the safetensors metadata. Its size is therefore the KV
footprint plus the safetensors header: 8 bytes of length and a JSON header
(tensor offsets and the metadata), a few hundred bytes per block. An import
by a server with another model is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from apmbench.adapters.sdk import (
    ExportedState,
    Frame,
    InvalidArgument,
    Query,
    SessionEnd,
    SessionStart,
)
from apmbench.adapters.systems.vlm_common import VlmSystem
from apmbench.adapters.vlm.backend import VideoLanguageModel
from apmbench.adapters.vlm.memory_settings import MemorySettings
from apmbench.adapters.vlm.prompt import Part, Text
from apmbench.adapters.vlm.settings import PREFIX, VlmConfigError, VlmSettings

if TYPE_CHECKING:
    import torch

    from apmbench.adapters.vlm.kv_cache import KvBlock, KvCacheModel

CONTENT_TYPE = "application/x-apmbench-kv-memory+safetensors"
FORMAT = "apmbench-kv-memory"


@dataclass(frozen=True)
class BlockInfo:
    """Where a block came from; its tensors are in the matching `KvBlock`."""

    session: int
    start_ms: int
    end_ms: int
    frames: int


class KvMemory(VlmSystem):
    name = "kv-memory"
    memory = (
        "the language model's KV cache of every frame block (all layers, CPU); top-k blocks by "
        "value similarity with the question are loaded per query"
    )

    def __init__(
        self,
        settings: VlmSettings | None = None,
        model: VideoLanguageModel | None = None,
        memory_settings: MemorySettings | None = None,
    ) -> None:
        self.blocks: list[tuple[BlockInfo, KvBlock]] = []
        self.representations: list[torch.Tensor] = []
        self.pending: list[Frame] = []
        self.chosen: list[int] = []
        self.options = memory_settings or MemorySettings.from_env()
        super().__init__(settings, model)
        self.kv = _kv_model(self.model)
        shape = self.kv.shape
        self._info = replace(
            self._info,
            details={
                **self._info.details,
                **self.options.record(("frames_per_block", "top_k")),
                "kv.layers": str(shape.layers),
                "kv.kv_heads": str(shape.kv_heads),
                "kv.head_dim": str(shape.head_dim),
                "kv.bytes_per_token": str(shape.bytes_per_token),
            },
        )

    # -- memory ------------------------------------------------------------------

    def forget(self) -> None:
        self.blocks = []
        self.representations = []
        self.pending = []

    def start_session(self, start: SessionStart) -> None:
        super().start_session(start)
        self.pending = []

    def ingest_frame(self, frame: Frame) -> None:
        self.pending.append(frame)
        if len(self.pending) >= self.options.frames_per_block:
            self._flush()

    def end_session(self, end: SessionEnd) -> None:
        self._flush()
        super().end_session(end)

    def _flush(self) -> None:
        if not self.pending:
            return
        frames, self.pending = self.pending, []
        origin = self.session.time_ms if self.session is not None else frames[0].time_ms
        context = self.blocks[-1][1] if self.blocks else None
        block = self.kv.encode_block(frames, origin, context, self.next_position())
        info = BlockInfo(self.session_index, frames[0].time_ms, frames[-1].time_ms, len(frames))
        self.blocks.append((info, block))
        self.representations.append(block.representation())

    def next_position(self) -> int:
        return self.blocks[-1][1].end_position if self.blocks else 0

    def kept_tokens(self) -> int:
        return sum(b.tokens for _, b in self.blocks)

    # -- query -------------------------------------------------------------------

    def retrieve(self, question: str) -> list[int]:
        """Indices of the blocks to load, in time order: the top-k most similar to the
        question, and always the most recent block."""
        if not self.blocks:
            return []
        import torch

        wanted = self.kv.text_representation(question)
        reps = torch.stack(self.representations)
        scores = torch.nn.functional.cosine_similarity(reps, wanted[None], dim=1)
        last = len(self.blocks) - 1
        scores[last] = float("inf")
        k = min(self.options.top_k + 1, len(self.blocks))
        # Ties break towards the earlier block, so the choice is the same on every run.
        order = sorted(range(len(self.blocks)), key=lambda i: (-float(scores[i]), i))
        return sorted(order[:k])

    def context(self, query: Query) -> list[Part]:
        if not self.chosen:
            return [Text("No video is in memory yet.")]
        spans = "; ".join(
            f"session {self.blocks[i][0].session + 1}, {self.blocks[i][0].start_ms / 1000:.0f}"
            f"-{self.blocks[i][0].end_ms / 1000:.0f} s"
            for i in self.chosen
        )
        return [
            Text(
                f"The video before this conversation is {len(self.chosen)} of the "
                f"{len(self.blocks)} blocks in memory, in time order (stream time: {spans})."
            )
        ]

    def query(self, query: Query) -> Iterator[str]:
        from apmbench.adapters.vlm.prompt import cap_text

        self.chosen = self.retrieve(query.prompt)
        prompt = self.prompt(query)
        user = "\n".join(p.text for p in prompt.parts if isinstance(p, Text))
        ids = self.kv.text_ids(prompt.system, user)
        pieces = self.kv.generate(
            [self.blocks[i][1] for i in self.chosen],
            ids,
            self.next_position(),
            self.settings.max_new_tokens,
        )
        yield from cap_text(pieces, query.max_output_chars)

    # -- state -------------------------------------------------------------------

    def export_state(self) -> ExportedState:
        tensors: dict[str, torch.Tensor] = {}
        index = []
        for i, (info, block) in enumerate(self.blocks):
            tensors[f"block.{i:05d}.keys"] = block.keys
            tensors[f"block.{i:05d}.values"] = block.values
            index.append(
                {**asdict(info), "start_position": block.start_position,
                 "end_position": block.end_position}
            )  # fmt: skip
        identity = self.model.identity()
        metadata = {
            "format": FORMAT,
            "version": "1",
            "model_type": identity.get("vlm.model_type", ""),
            "model_fingerprint": identity.get("vlm.model_fingerprint", ""),
            "dtype": identity.get("vlm.dtype", ""),
            "sessions": str(self.session_index + 1),
            "frames_per_block": str(self.options.frames_per_block),
            "blocks": json.dumps(index, separators=(",", ":"), sort_keys=True),
        }
        return ExportedState(save_safetensors(tensors, metadata), CONTENT_TYPE, 1)

    def import_state(self, state: ExportedState) -> None:
        from safetensors import SafetensorError
        from safetensors.torch import load

        if state.content_type != CONTENT_TYPE:
            raise InvalidArgument(f"{self.name} imports {CONTENT_TYPE}, got {state.content_type}")
        try:
            metadata = read_metadata(state.data)
            tensors = load(state.data)
        except (SafetensorError, ValueError) as e:
            raise InvalidArgument(f"{self.name} state is not a safetensors file: {e}") from e
        if metadata.get("format") != FORMAT:
            raise InvalidArgument(f"{self.name} state is not a {FORMAT} file")
        identity = self.model.identity()
        for key in ("model_fingerprint", "dtype"):
            if metadata.get(key) != identity.get(f"vlm.{key}"):
                raise InvalidArgument(
                    f"{self.name} state was written with {key} {metadata.get(key)!r}, this "
                    f"server runs {identity.get(f'vlm.{key}')!r}: a KV cache only means something "
                    f"to the model (and dtype) that computed it; set {PREFIX}MODEL and "
                    f"{PREFIX}DTYPE as in the exporting run"
                )
        from apmbench.adapters.vlm.kv_cache import KvBlock

        blocks: list[tuple[BlockInfo, KvBlock]] = []
        try:
            for i, entry in enumerate(json.loads(metadata["blocks"])):
                info = BlockInfo(
                    int(entry["session"]), int(entry["start_ms"]), int(entry["end_ms"]),
                    int(entry["frames"]),
                )  # fmt: skip
                block = KvBlock(
                    tensors[f"block.{i:05d}.keys"],
                    tensors[f"block.{i:05d}.values"],
                    int(entry["start_position"]),
                    int(entry["end_position"]),
                )
                blocks.append((info, block))
            sessions = int(metadata["sessions"])
        except (KeyError, ValueError, TypeError) as e:
            raise InvalidArgument(f"{self.name} state's block index is incomplete: {e}") from e
        self.blocks = blocks
        self.representations = [b.representation() for _, b in blocks]
        self.pending = []
        self.session_index = sessions - 1
        self.turns = []


# safetensors' names of torch dtypes, for the header.
DTYPES = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}


def save_safetensors(tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> bytes:
    """A safetensors file with its header's keys sorted and tensors in name order.

    `safetensors.torch.save` writes the metadata in hash-map order, which changes
    from one process to the next; the same memory must export the same bytes.
    The layout is the format's own (8-byte little-endian header length, the JSON
    header padded with spaces to a multiple of 8, then the tensors' bytes), so
    `safetensors.torch.load` reads it.
    """
    header: dict[str, object] = {"__metadata__": dict(sorted(metadata.items()))}
    payload: list[bytes] = []
    offset = 0
    for name in sorted(tensors):
        tensor = tensors[name].contiguous()
        raw = tensor.view(-1).view(torch_uint8()).numpy().tobytes()
        dtype = str(tensor.dtype).removeprefix("torch.")
        header[name] = {
            "dtype": DTYPES[dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        payload.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + b"".join(payload)


def torch_uint8() -> torch.dtype:
    import torch

    return torch.uint8


def read_metadata(data: bytes) -> dict[str, str]:
    """The `__metadata__` of a safetensors file's header."""
    header = read_header(data)
    metadata = header.get("__metadata__", {})
    return {str(k): str(v) for k, v in metadata.items()}


def read_header(data: bytes) -> dict[str, Any]:
    """A safetensors file's JSON header (8 bytes of little-endian length, then the JSON)."""
    if len(data) < 8:
        raise ValueError("shorter than a safetensors header")
    length = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + length])
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    return header


def _kv_model(model: VideoLanguageModel) -> KvCacheModel:
    from apmbench.adapters.vlm.qwen import QwenVL

    if not isinstance(model, QwenVL):
        raise VlmConfigError(
            f"kv-memory keeps the model's own KV cache, so it needs the local transformers "
            f"backend: set {PREFIX}BACKEND=transformers and {PREFIX}MODEL to a Qwen-VL directory"
        )
    from apmbench.adapters.vlm.kv_cache import KvCacheModel

    return KvCacheModel(model)
