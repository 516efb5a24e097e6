"""The VLM systems load torch and transformers only when a local model is actually opened."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import os, sys
import apmbench.adapters.vlm.settings, apmbench.adapters.vlm.prompt, apmbench.adapters.vlm.video
import apmbench.adapters.vlm.checkpoint, apmbench.adapters.vlm.backend, apmbench.adapters.vlm.openai_api
import apmbench.adapters.vlm.loader
import apmbench.adapters.systems.vlm_simplestream, apmbench.adapters.systems.vlm_video_memory
import apmbench.adapters.systems.vlm_text_memory
from apmbench.adapters.systems import load_system
from apmbench.adapters.vlm.settings import VlmConfigError
os.environ["APMBENCH_VLM_MODEL"] = "/nonexistent/model"
try:
    load_system("vlm-video-memory")
except VlmConfigError as e:
    print("refused:", e, file=sys.stderr)
heavy = sorted(m for m in ("torch", "transformers") if m in sys.modules)
print(",".join(heavy))
"""


def test_vlm_modules_and_a_refused_model_directory_do_not_import_torch() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    assert "APMBENCH_VLM_MODEL=/nonexistent/model: no such directory" in out.stderr
