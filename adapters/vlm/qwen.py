"""The transformers backend for Qwen2.5-VL and Qwen3-VL, from a local directory.

Imported only by `loader.open_backend`, and the only module that imports torch and
transformers. Loading: tokenizer and model with `local_files_only` (nothing
is fetched at run time), bfloat16 on a GPU and float32 on the CPU unless
APMBENCH_VLM_DTYPE says otherwise. Input: the checkpoint's chat template with
one video placeholder per clip, expanded as the Qwen processors expand it;
the patches come from `video.py`. Output: `generate` in a worker thread,
greedy by default, its tokens streamed as soon as each decodes to text; a
closed stream (a cancelled query) stops generation at the next token.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import torch
import transformers

from apmbench.adapters.sdk.errors import ResourceExhausted
from apmbench.adapters.vlm.backend import IncrementalText, VideoLanguageModel
from apmbench.adapters.vlm.checkpoint import Checkpoint, model_fingerprint
from apmbench.adapters.vlm.prompt import Prompt, Text
from apmbench.adapters.vlm.settings import PREFIX, VlmConfigError, VlmSettings
from apmbench.adapters.vlm.video import PreparedClip, frame_pixel_bound, prepare_clip

VIDEO, START, END = "<|video_pad|>", "<|vision_start|>", "<|vision_end|>"
TEXT_TYPE, VIDEO_TYPE = 0, 2  # mm_token_type_ids: text 0, image 1, video 2


def log(message: str) -> None:
    """One line on stderr; the harness keeps it in RUN/logs/system.log."""
    print(f"vlm: {message}", file=sys.stderr, flush=True)


# transformers is typed as Any here (pyproject: the models extra is optional).
class _Stop(transformers.StoppingCriteria):  # type: ignore[misc]
    """Ends generation once the consumer has gone (a cancelled or capped answer)."""

    def __init__(self, event: threading.Event) -> None:
        self.event = event
        self.fired = False  # logged, so a test can assert on the event rather than a count

    def __call__(
        self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: object
    ) -> torch.Tensor:
        self.fired = self.fired or self.event.is_set()
        return torch.full((input_ids.shape[0],), self.fired, dtype=torch.bool)


class _Pieces:
    """`generate`'s streamer: new tokens in, text pieces out through a queue."""

    def __init__(self, text: IncrementalText) -> None:
        self.text = text
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.prompt_seen = False
        self.tokens = 0
        self.error: BaseException | None = None
        self._ended = False

    def put(self, value: torch.Tensor) -> None:
        if not self.prompt_seen:  # the first call carries the prompt
            self.prompt_seen = True
            return
        for token in value.reshape(-1).tolist():
            self.tokens += 1
            if piece := self.text.push(int(token)):
                self.queue.put(piece)

    def end(self) -> None:
        if self._ended:
            return
        self._ended = True
        if tail := self.text.flush():
            self.queue.put(tail)
        self.queue.put(None)

    def __iter__(self) -> Iterator[str]:
        while (piece := self.queue.get()) is not None:
            yield piece


class QwenVL(VideoLanguageModel):
    def __init__(self, checkpoint: Checkpoint, settings: VlmSettings) -> None:
        started = time.monotonic()
        self.checkpoint = checkpoint
        self.settings = settings
        self.family = checkpoint.family
        self.geometry = checkpoint.geometry
        model_class = getattr(transformers, self.family.model_class, None)
        if model_class is None:
            raise VlmConfigError(
                f"transformers {transformers.__version__} has no {self.family.model_class} "
                f"({self.family.model_type}): install transformers>={self.family.since}"
            )
        self.device = _device(settings.device)
        self.dtype = _dtype(settings.dtype, self.device)
        path = str(checkpoint.path)
        # A progress bar per start would fill the system log with carriage returns.
        transformers.utils.logging.disable_progress_bar()
        placement = {"device_map": {"": self.device}} if self.device.startswith("cuda") else {}
        try:
            self.tokenizer: transformers.PreTrainedTokenizerBase = (
                transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
            )
            self.model: transformers.PreTrainedModel = model_class.from_pretrained(
                path, local_files_only=True, dtype=self.dtype, **placement
            )
        except (OSError, ValueError) as e:
            raise VlmConfigError(f"{PREFIX}MODEL={path}: cannot load the model: {e}") from e
        self.model.to(self.device)
        self.model.eval()
        self.template = _chat_template(self.tokenizer, checkpoint.path)
        self._check_tokens()
        self._check_geometry()
        pad = self.tokenizer.pad_token_id
        self.pad_token_id = self.tokenizer.eos_token_id if pad is None else pad
        self.fingerprint = model_fingerprint(checkpoint.path)
        load_s = time.monotonic() - started
        log(
            f"loaded {self.family.model_type} from {path} on {self.device} ({self.dtype}) "
            f"in {load_s:.1f} s{_gpu_memory(self.device)}"
        )

    def identity(self) -> Mapping[str, str]:
        return {
            "vlm.backend_kind": "transformers",
            "vlm.model_type": self.family.model_type,
            "vlm.model_class": self.family.model_class,
            "vlm.model_fingerprint": self.fingerprint,
            "vlm.device": self.device,
            "vlm.dtype": str(self.dtype).removeprefix("torch."),
            "vlm.decoding": "greedy" if self.settings.temperature == 0 else "sampling",
            "vlm.transformers": transformers.__version__,
            "vlm.torch": torch.__version__,
        }

    # -- input -----------------------------------------------------------------

    def _check_tokens(self) -> None:
        config = self.model.config
        for token, key in ((VIDEO, "video_token_id"), (START, "vision_start_token_id")):
            token_id = self.tokenizer.convert_tokens_to_ids(token)
            if token_id != getattr(config, key, None):
                raise VlmConfigError(
                    f"{PREFIX}MODEL={self.checkpoint.path}: the tokenizer's {token} is id "
                    f"{token_id} but config.json's {key} is {getattr(config, key, None)}; the "
                    "tokenizer and the weights come from different checkpoints"
                )
        self.video_token_id = int(config.video_token_id)

    def _check_geometry(self) -> None:
        vision = self.model.config.vision_config
        loaded = (vision.patch_size, vision.temporal_patch_size, vision.spatial_merge_size)
        g = self.geometry
        if loaded != (g.patch_size, g.temporal_patch_size, g.merge_size):
            raise VlmConfigError(
                f"{PREFIX}MODEL={self.checkpoint.path}: the loaded vision config has patch, "
                f"temporal patch and merge sizes {loaded}, config.json says "
                f"{(g.patch_size, g.temporal_patch_size, g.merge_size)}"
            )

    def _prepare(self, prompt: Prompt) -> list[PreparedClip]:
        clips = prompt.clips()
        bound = frame_pixel_bound(
            [len(c.frames) for c in clips],
            self.geometry,
            self.settings.max_pixels,
            self.settings.max_video_tokens,
        )
        return [
            prepare_clip([f.rgb() for f in c.frames], c.seconds(), self.geometry, bound)
            for c in clips
        ]

    def render(self, prompt: Prompt, prepared: list[PreparedClip]) -> str:
        """The chat template's text with each clip's placeholder expanded to its tokens."""
        content: list[dict[str, str]] = []
        parts = prompt.parts
        for i, part in enumerate(parts):
            if not isinstance(part, Text):
                content.append({"type": "video"})
                continue
            # The template joins parts as they are: a line break around each video.
            before = "\n" if i > 0 and not isinstance(parts[i - 1], Text) else ""
            after = "\n" if i + 1 < len(parts) else ""
            content.append({"type": "text", "text": before + part.text + after})
        messages = [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": content},
        ]
        text: str = self.tokenizer.apply_chat_template(
            messages, chat_template=self.template, tokenize=False, add_generation_prompt=True
        )
        placeholder = START + VIDEO + END
        pieces = text.split(placeholder)
        if len(pieces) - 1 != len(prepared):
            raise VlmConfigError(
                f"{PREFIX}MODEL={self.checkpoint.path}: the chat template rendered "
                f"{len(pieces) - 1} video placeholders ({placeholder}) for {len(prepared)} clips; "
                "it is not a Qwen-VL template with video support"
            )
        out = [pieces[0]]
        merge = self.geometry.merge_size
        for clip, rest in zip(prepared, pieces[1:], strict=True):
            if self.family.timestamps:
                # Qwen3-VL: every temporal patch is its own span, after its time in text.
                per = START + VIDEO * clip.tokens_per_group(merge) + END
                out.extend(f"<{t:.1f} seconds>{per}" for t in clip.group_seconds)
            else:
                out.append(START + VIDEO * clip.tokens(merge) + END)
            out.append(rest)
        return "".join(out)

    def encode(self, prompt: Prompt) -> dict[str, torch.Tensor]:
        """The model's inputs for `prompt`, on the model's device."""
        prepared = self._prepare(prompt)
        text = self.render(prompt, prepared)
        ids = self.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        kinds = torch.where(ids == self.video_token_id, VIDEO_TYPE, TEXT_TYPE).to(torch.int32)
        inputs: dict[str, torch.Tensor] = {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "mm_token_type_ids": kinds,
        }
        if prepared:
            patches = np.concatenate([c.patches for c in prepared])
            inputs["pixel_values_videos"] = torch.from_numpy(patches).to(self.dtype)
            inputs["video_grid_thw"] = torch.tensor([c.grid_thw for c in prepared])
            if self.family.seconds_per_grid:
                inputs["second_per_grid_ts"] = torch.tensor([c.seconds_per_group for c in prepared])
        return {k: v.to(self.device) for k, v in inputs.items()}

    # -- output ----------------------------------------------------------------

    def stream(self, prompt: Prompt, max_new_tokens: int) -> Iterator[str]:
        started = time.monotonic()
        if self.device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats(self.device)
        inputs = self.encode(prompt)
        prompt_tokens = int(inputs["input_ids"].shape[1])
        video_tokens = int((inputs["mm_token_type_ids"] == VIDEO_TYPE).sum())
        pieces = _Pieces(IncrementalText(self._decode))
        stop = _Stop(threading.Event())
        worker = threading.Thread(
            target=self._generate,
            args=(inputs, max_new_tokens, pieces, stop),
            name="vlm-generate",
            daemon=True,
        )
        worker.start()
        first_s: float | None = None
        try:
            for piece in pieces:
                if first_s is None:
                    first_s = time.monotonic() - started
                yield piece
        finally:
            stop.event.set()
            worker.join()
            first = "none" if first_s is None else f"{first_s:.3f}"
            log(
                f"generated frames={prompt.frame_count()} video_tokens={video_tokens} "
                f"prompt_tokens={prompt_tokens} new_tokens={pieces.tokens} "
                f"stopped_by_consumer={'yes' if stop.fired else 'no'} first_text_s={first} "
                f"total_s={time.monotonic() - started:.3f}{_gpu_memory(self.device)}"
            )
        if pieces.error is not None:
            self._raise(pieces.error, prompt_tokens)

    def _generate(
        self, inputs: dict[str, torch.Tensor], max_new_tokens: int, pieces: _Pieces, stop: _Stop
    ) -> None:
        options: dict[str, object] = {
            "max_new_tokens": max_new_tokens,
            "streamer": pieces,
            "stopping_criteria": transformers.StoppingCriteriaList([stop]),
            "pad_token_id": self.pad_token_id,
        }
        if self.settings.temperature > 0:
            torch.manual_seed(self.settings.seed)
            options.update(do_sample=True, temperature=self.settings.temperature)
        else:
            # Greedy, whatever sampling defaults the checkpoint's generation_config carries.
            options.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        try:
            with torch.inference_mode():
                self.model.generate(**inputs, **options)
        except BaseException as e:  # reported by the consumer thread
            pieces.error = e
        finally:
            pieces.end()

    def _decode(self, ids: list[int]) -> str:
        text: str = self.tokenizer.decode(ids, skip_special_tokens=True)
        return text

    def _raise(self, error: BaseException, prompt_tokens: int) -> None:
        if isinstance(error, torch.OutOfMemoryError):
            raise ResourceExhausted(
                f"out of memory on {self.device} for a prompt of {prompt_tokens} tokens: lower "
                f"{PREFIX}MAX_FRAMES, {PREFIX}MAX_VIDEO_TOKENS or {PREFIX}MAX_PIXELS"
            ) from error
        raise error


def _device(wanted: str) -> str:
    if wanted == "auto":
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if wanted.startswith("cuda"):
        if not torch.cuda.is_available():
            raise VlmConfigError(
                f"{PREFIX}DEVICE={wanted}: torch {torch.__version__} sees no GPU (a CPU build, "
                "no driver, or a container started without --gpus)"
            )
        return wanted if ":" in wanted else "cuda:0"
    return "cpu"


def _dtype(wanted: str, device: str) -> torch.dtype:
    if wanted == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return getattr(torch, wanted)


def _chat_template(tokenizer: transformers.PreTrainedTokenizerBase, path: Path) -> str:
    """The tokenizer's chat template, else the processor's (chat_template.json / .jinja)."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, str) and template:
        return template
    import json

    for name in ("chat_template.jinja", "chat_template.json"):
        file = path / name
        if file.is_file():
            text = file.read_text()
            return str(json.loads(text)["chat_template"]) if name.endswith(".json") else text
    raise VlmConfigError(
        f"{PREFIX}MODEL={path}: no chat template (in tokenizer_config.json, chat_template.jinja "
        "or chat_template.json); copy the one the model was released with"
    )


def _gpu_memory(device: str) -> str:
    if not device.startswith("cuda"):
        return ""
    peak = torch.cuda.max_memory_allocated(device)
    return f" peak_gpu_bytes={peak} peak_gpu_mib={peak / 2**20:.0f}"
