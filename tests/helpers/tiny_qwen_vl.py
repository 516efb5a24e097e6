"""Tiny randomly initialised Qwen-VL models built offline, saved like real checkpoints.

`build_tiny_qwen_vl(path, family)` writes a Hugging Face directory with the
files a real Qwen2.5-VL or Qwen3-VL checkpoint has: `config.json` and
safetensors weights (`save_pretrained`), a byte-level BPE tokenizer trained
with `tokenizers` on a few sentences (so any text round-trips, as with the
real one) carrying the Qwen special tokens and a Qwen-style chat template,
and `preprocessor_config.json` / `video_preprocessor_config.json` with the
fields the real ones have. The VLM backend then loads it through exactly the
code that loads real weights. The model is a few hundred KB of noise: its
answers mean nothing, its shapes and code paths are the real ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Qwen's own special tokens, first in the vocabulary so their ids are known.
SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
ID = {token: i for i, token in enumerate(SPECIALS)}

# The Qwen2.5-VL / Qwen3-VL chat template reduced to what the systems send:
# string or list content, text and video parts, a generation prompt.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

SENTENCES = [
    "You are a first-person streaming video assistant.",
    'Return exactly one valid JSON object: {"answer":"A"} or {"decision":"SILENT","reason":"..."}',
    '{"decision":"INTERVENE","proactive_response":"Turn off the lamp.","reason":"It is on."}',
    '{"memory":"On DAY1 I put the MUG down at the DESK and opened the DRAWER."}',
    "Session S001 on DAY1 from 08:00:00 to 08:01:00. <0.5 seconds> <1.5 seconds>",
    "Where is the MUG now? Which of these did I do first? What does the screen say?",
]

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def _tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=420,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(SENTENCES, trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIALS[1:],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _qwen2_5_config(vocab: int) -> Any:
    from transformers import Qwen2_5_VLConfig

    return Qwen2_5_VLConfig(
        text_config={
            "vocab_size": vocab,
            "hidden_size": 64,
            "intermediate_size": 96,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 32768,
            # mrope sections (t, h, w) add up to head_dim / 2 = 8, as 16+24+24 = 128/2 in 7B.
            "rope_parameters": {"rope_type": "default", "mrope_section": [2, 3, 3]},
            "bos_token_id": ID["<|endoftext|>"],
            "eos_token_id": ID["<|im_end|>"],
            "pad_token_id": ID["<|endoftext|>"],
        },
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "out_hidden_size": 64,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "tokens_per_second": 2,
            "window_size": 112,
            "fullatt_block_indexes": [1],
        },
        image_token_id=ID["<|image_pad|>"],
        video_token_id=ID["<|video_pad|>"],
        vision_start_token_id=ID["<|vision_start|>"],
        vision_end_token_id=ID["<|vision_end|>"],
    )


def _qwen3_config(vocab: int) -> Any:
    from transformers import Qwen3VLConfig

    return Qwen3VLConfig(
        text_config={
            "vocab_size": vocab,
            "hidden_size": 64,
            "intermediate_size": 96,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "max_position_embeddings": 32768,
            "rope_parameters": {
                "rope_type": "default",
                "mrope_section": [2, 3, 3],
                "mrope_interleaved": True,
            },
            "bos_token_id": ID["<|endoftext|>"],
            "eos_token_id": ID["<|im_end|>"],
            "pad_token_id": ID["<|endoftext|>"],
        },
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "out_hidden_size": 64,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "num_position_embeddings": 256,
            "deepstack_visual_indexes": [0],
        },
        image_token_id=ID["<|image_pad|>"],
        video_token_id=ID["<|video_pad|>"],
        vision_start_token_id=ID["<|vision_start|>"],
        vision_end_token_id=ID["<|vision_end|>"],
    )


def _preprocessor_files(family: str) -> dict[str, dict[str, Any]]:
    """What the real checkpoints ship (Qwen2.5-VL-7B-Instruct, Qwen3-VL-8B-Instruct), same fields."""
    if family == "qwen2_5_vl":
        return {
            "preprocessor_config.json": {
                "min_pixels": 3136,
                "max_pixels": 12845056,
                "patch_size": 14,
                "temporal_patch_size": 2,
                "merge_size": 2,
                "image_mean": CLIP_MEAN,
                "image_std": CLIP_STD,
                "image_processor_type": "Qwen2VLImageProcessor",
                "processor_class": "Qwen2_5_VLProcessor",
            }
        }
    common = {
        "patch_size": 16,
        "temporal_patch_size": 2,
        "merge_size": 2,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "processor_class": "Qwen3VLProcessor",
    }
    return {
        "preprocessor_config.json": {
            **common,
            "size": {"longest_edge": 16777216, "shortest_edge": 65536},
            "image_processor_type": "Qwen2VLImageProcessorFast",
        },
        "video_preprocessor_config.json": {
            **common,
            "size": {"longest_edge": 25165824, "shortest_edge": 4096},
            "video_processor_type": "Qwen3VLVideoProcessor",
        },
    }


def build_tiny_qwen_vl(path: Path, family: str = "qwen2_5_vl", seed: int = 0) -> Path:
    """Write a tiny random `family` ("qwen2_5_vl" or "qwen3_vl") checkpoint to `path`."""
    import torch
    import transformers

    tokenizer = _tokenizer()
    builders = {"qwen2_5_vl": _qwen2_5_config, "qwen3_vl": _qwen3_config}
    classes = {
        "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
        "qwen3_vl": "Qwen3VLForConditionalGeneration",
    }
    config = builders[family](len(tokenizer))
    torch.manual_seed(seed)
    model = getattr(transformers, classes[family])(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    for name, content in _preprocessor_files(family).items():
        (path / name).write_text(json.dumps(content, indent=2) + "\n")
    return path


def make_readable(path: Path) -> None:
    """Let any uid read the checkpoint (a container runs as a uid of its own)."""
    path.chmod(0o755)
    for child in path.rglob("*"):
        child.chmod(0o755 if child.is_dir() else 0o644)
