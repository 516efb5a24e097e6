"""KV-cache extraction and reuse for the transformers Qwen-VL backend (the `kv-memory` system).

A frame block is run through the vision encoder and the language model once,
as it arrives, after the previous block's KV as its local context, and the
block's own keys and values (every layer) are kept on the CPU. A query loads
some blocks back as the cache, concatenated in time order, and decodes
greedily after them. This is the scheme of ReKV ("Streaming Video
Question-Answering with In-context Video KV-Cache Retrieval", arXiv
2503.00540), reduced to what the Qwen-VL classes allow without patching them.

Positions: every block is encoded at the multimodal-RoPE positions it has in
one continuous stream (each block starts where the previous one ended, across
sessions too), so a key keeps the rotation it was computed with and the
question, placed after the last block, sees every block at its true distance.
transformers is told these positions explicitly; its own 3D position cache
(`rope_deltas`) is never used.

Retrieval representations come from the values, not the keys: values carry
no rotary embedding, so a block's mean value and a question's mean value
compare without regard to where in the stream each was computed, and they are
recomputed from the kept tensors after an import (nothing else is stored).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
import transformers

from apmbench.adapters.sdk import Frame
from apmbench.adapters.vlm.backend import IncrementalText
from apmbench.adapters.vlm.qwen import (
    END,
    START,
    TEXT_TYPE,
    VIDEO,
    VIDEO_TYPE,
    QwenVL,
    _gpu_memory,
    log,
)
from apmbench.adapters.vlm.video import frame_pixel_bound, prepare_clip


@dataclass(frozen=True)
class KvShape:
    """What one token costs in the cache, from the model's text config."""

    layers: int
    kv_heads: int
    head_dim: int
    bytes_per_element: int

    @property
    def bytes_per_token(self) -> int:
        # K and V, every layer and KV head.
        return 2 * self.layers * self.kv_heads * self.head_dim * self.bytes_per_element


@dataclass
class KvBlock:
    """One frame block's keys and values, (layers, kv_heads, tokens, head_dim) each, on the CPU."""

    keys: torch.Tensor
    values: torch.Tensor
    start_position: int
    """The first stream position of the block (its text/temporal RoPE index)."""
    end_position: int
    """One past the block's largest position: where the next block or the question starts."""

    @property
    def tokens(self) -> int:
        return int(self.keys.shape[2])

    def representation(self) -> torch.Tensor:
        return _mean_values(self.values)


def kv_shape(qwen: QwenVL) -> KvShape:
    text = qwen.model.config.get_text_config()
    heads = int(text.num_attention_heads)
    head_dim = getattr(text, "head_dim", None) or int(text.hidden_size) // heads
    kv_heads = int(getattr(text, "num_key_value_heads", None) or heads)
    element = torch.empty((), dtype=qwen.dtype).element_size()
    return KvShape(int(text.num_hidden_layers), kv_heads, int(head_dim), element)


class KvCacheModel:
    """The Qwen-VL backend, driven block by block with explicit positions and caches."""

    def __init__(self, qwen: QwenVL) -> None:
        self.qwen = qwen
        self.model = qwen.model
        self.shape = kv_shape(qwen)
        self.eos_ids = _eos_ids(qwen)
        # transformers 5 renamed `past_key_values` to `cache`; take what this version has.
        params = inspect.signature(self.model.forward).parameters
        self.cache_kwarg = "cache" if "cache" in params else "past_key_values"

    # -- ingest ----------------------------------------------------------------

    def block_inputs(self, frames: Sequence[Frame], origin_ms: int) -> dict[str, torch.Tensor]:
        """Token ids and video patches of one block: the clip as the chat template expands it."""
        q = self.qwen
        seconds = [(f.time_ms - origin_ms) / 1000 for f in frames]
        bound = frame_pixel_bound(
            [len(frames)], q.geometry, q.settings.max_pixels, q.settings.max_video_tokens
        )
        clip = prepare_clip([f.rgb() for f in frames], seconds, q.geometry, bound)
        merge = q.geometry.merge_size
        if q.family.timestamps:
            per = START + VIDEO * clip.tokens_per_group(merge) + END
            text = "".join(f"<{t:.1f} seconds>{per}" for t in clip.group_seconds)
        else:
            text = START + VIDEO * clip.tokens(merge) + END
        ids = q.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        inputs: dict[str, torch.Tensor] = {
            "input_ids": ids,
            "mm_token_type_ids": torch.where(ids == q.video_token_id, VIDEO_TYPE, TEXT_TYPE).to(
                torch.int32
            ),
            "pixel_values_videos": torch.from_numpy(clip.patches).to(q.dtype),
            "video_grid_thw": torch.tensor([clip.grid_thw]),
        }
        if q.family.seconds_per_grid:
            inputs["second_per_grid_ts"] = torch.tensor([clip.seconds_per_group])
        return inputs

    def encode_block(
        self, frames: Sequence[Frame], origin_ms: int, context: KvBlock | None, start: int
    ) -> KvBlock:
        """Run one block after `context` (the previous block, or none) at stream position
        `start`; keep only this block's keys and values."""
        inputs = self.block_inputs(frames, origin_ms)
        positions, _ = self.model.model.get_rope_index(
            inputs["input_ids"],
            mm_token_type_ids=inputs["mm_token_type_ids"],
            video_grid_thw=inputs["video_grid_thw"],
            second_per_grid_ts=inputs.get("second_per_grid_ts"),
        )
        positions = positions + start
        cache = self.cache([context] if context is not None else [])
        before = 0 if context is None else context.tokens
        device = self.qwen.device
        with torch.inference_mode():
            self.model(
                **{k: v.to(device) for k, v in inputs.items()},
                position_ids=positions.to(device),
                **{self.cache_kwarg: cache},
                use_cache=True,
                logits_to_keep=1,
            )
        keys = torch.stack([layer.keys[0, :, before:, :] for layer in cache.layers])
        values = torch.stack([layer.values[0, :, before:, :] for layer in cache.layers])
        return KvBlock(
            keys.to("cpu").contiguous(),
            values.to("cpu").contiguous(),
            start,
            int(positions.max()) + 1,
        )

    def cache(self, blocks: Sequence[KvBlock]) -> transformers.DynamicCache:
        """A DynamicCache holding `blocks` one after another, on the model's device."""
        if not blocks:
            return transformers.DynamicCache(config=self.model.config)
        device = self.qwen.device
        data = []
        for layer in range(self.shape.layers):
            k = torch.cat([b.keys[layer] for b in blocks], dim=1)[None].to(device)
            v = torch.cat([b.values[layer] for b in blocks], dim=1)[None].to(device)
            data.append((k, v))
        return transformers.DynamicCache(ddp_cache_data=data, config=self.model.config)

    # -- query -----------------------------------------------------------------

    def text_ids(self, system: str, user: str) -> torch.Tensor:
        """The chat template's ids of a text-only system and user turn, ready for the answer."""
        q = self.qwen
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        text: str = q.tokenizer.apply_chat_template(
            messages, chat_template=q.template, tokenize=False, add_generation_prompt=True
        )
        ids: torch.Tensor = q.tokenizer(text, add_special_tokens=False, return_tensors="pt")[
            "input_ids"
        ]
        return ids

    def text_representation(self, text: str) -> torch.Tensor:
        """The mean value vector of `text` run alone: comparable with `KvBlock.representation`."""
        ids = self.qwen.tokenizer(text or " ", add_special_tokens=False, return_tensors="pt")[
            "input_ids"
        ]
        cache = self.cache([])
        with torch.inference_mode():
            self.model(
                input_ids=ids.to(self.qwen.device),
                position_ids=_text_positions(0, ids.shape[1]).to(self.qwen.device),
                **{self.cache_kwarg: cache},
                use_cache=True,
                logits_to_keep=1,
            )
        values = torch.stack([layer.values[0] for layer in cache.layers]).to("cpu")
        return _mean_values(values)

    def generate(
        self, blocks: Sequence[KvBlock], ids: torch.Tensor, start: int, max_new_tokens: int
    ) -> Iterator[str]:
        """Greedy decoding of `ids` (placed at stream position `start`) after `blocks`' cache;
        text pieces as each token decodes. Closing the iterator stops it at the next token."""
        device = self.qwen.device
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats(device)
        cache = self.cache(blocks)
        text = IncrementalText(self.qwen._decode)
        step = ids.to(device)
        position = start
        new_tokens = 0
        try:
            for _ in range(max_new_tokens):
                length = int(step.shape[1])
                with torch.inference_mode():
                    out = self.model(
                        input_ids=step,
                        position_ids=_text_positions(position, length).to(device),
                        **{self.cache_kwarg: cache},
                        use_cache=True,
                        logits_to_keep=1,
                    )
                position += length
                token = int(out.logits[0, -1].argmax())
                new_tokens += 1
                if token in self.eos_ids:
                    break
                if piece := text.push(token):
                    yield piece
                step = torch.tensor([[token]], device=device)
            if tail := text.flush():
                yield tail
        finally:
            log(
                f"generated blocks={len(blocks)} cached_tokens={sum(b.tokens for b in blocks)} "
                f"prompt_tokens={int(ids.shape[1])} new_tokens={new_tokens}"
                f"{_gpu_memory(self.qwen.device)}"
            )


def _text_positions(start: int, length: int) -> torch.Tensor:
    return torch.arange(start, start + length).view(1, 1, -1).expand(3, 1, -1)


def _mean_values(values: torch.Tensor) -> torch.Tensor:
    """(layers, heads, tokens, dim) -> one float32 vector: each layer's mean over tokens."""
    return values.float().mean(dim=2).reshape(-1)


def _eos_ids(qwen: QwenVL) -> set[int]:
    ids = {int(qwen.tokenizer.eos_token_id)}
    configured = getattr(qwen.model.generation_config, "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif isinstance(configured, list):
        ids.update(int(i) for i in configured)
    return ids
