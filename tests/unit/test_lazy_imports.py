"""The harness runs without the optional model stack: torch and transformers load only on use."""

from __future__ import annotations

import subprocess
import sys


def test_cli_and_scoring_do_not_import_torch_transformers_or_matplotlib() -> None:
    code = (
        "import sys\n"
        "import apmbench.harness.cli, apmbench.harness.orchestrate.scoring, apmbench.harness.scoring.judge\n"
        "import apmbench.harness.scoring.judge.judging\n"
        "from apmbench.harness.scoring.judge import JudgeConfig, open_judge\n"
        "assert open_judge(JudgeConfig()) is None\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'matplotlib') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
