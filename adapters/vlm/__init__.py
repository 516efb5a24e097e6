"""Video-language model backends for the reference systems (issue 7).

- `settings`: what a system reads from `APMBENCH_VLM_*` at construction.
- `prompt`: a backend-neutral prompt: system text, then text and video clips.
- `video`: Qwen-VL video patches prepared in numpy (no torchvision needed).
- `checkpoint`: checks a local model directory before torch is imported.
- `backend`: the `VideoLanguageModel` interface.
- `loader`: `open_backend`, which picks the backend the settings ask for and loads it.
- `qwen`: the transformers backend for Qwen2.5-VL and Qwen3-VL (torch).
- `openai_api`: an OpenAI-compatible chat endpoint (vLLM, hosted APIs).

Only `qwen` imports torch and transformers, and only `open_backend` imports
it, so the harness and the other systems never load them.
"""
