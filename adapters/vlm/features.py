"""Embeddings from the transformers Qwen-VL backend, for memories that index what they keep.

A frame's embedding is the mean of the vision encoder's output tokens for it
(after the merger, so in the language model's input space); a text's is the
mean of its input token embeddings. Both live in one space, which is what lets
a question be compared with frames without a separate retrieval model.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch

from apmbench.adapters.sdk import Frame
from apmbench.adapters.vlm.qwen import QwenVL
from apmbench.adapters.vlm.video import frame_pixel_bound, prepare_clip

Vector = npt.NDArray[np.float32]


class Embedder:
    def __init__(self, qwen: QwenVL) -> None:
        self.qwen = qwen
        self.model = qwen.model

    def frame(self, frame: Frame) -> Vector:
        """The pooled visual embedding of one frame (repeated to fill a temporal patch)."""
        q = self.qwen
        bound = frame_pixel_bound(
            [1], q.geometry, q.settings.max_pixels, q.settings.max_video_tokens
        )
        clip = prepare_clip([frame.rgb()], [0.0], q.geometry, bound)
        pixels = torch.from_numpy(clip.patches).to(q.dtype).to(q.device)
        grid = torch.tensor([clip.grid_thw], device=q.device)
        with torch.inference_mode():
            out = self.model.model.get_video_features(pixels, grid, return_dict=True)
        pooled = out.pooler_output
        tokens = torch.cat(list(pooled), dim=0) if isinstance(pooled, list | tuple) else pooled
        return unit(tokens.float().mean(dim=0).cpu().numpy())

    def text(self, text: str) -> Vector:
        """The mean input embedding of `text`'s tokens."""
        ids = self.qwen.tokenizer(text or " ", add_special_tokens=False, return_tensors="pt")[
            "input_ids"
        ]
        with torch.inference_mode():
            embedded = self.model.get_input_embeddings()(ids.to(self.qwen.device))
        return unit(embedded[0].float().mean(dim=0).cpu().numpy())


def unit(vector: npt.ArrayLike) -> Vector:
    """`vector` scaled to length 1 (a zero vector stays zero), as float32."""
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / np.float32(norm) if norm > 0 else v
