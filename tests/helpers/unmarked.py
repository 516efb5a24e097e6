"""text-log served without a loaded point: it drops the variable that asks for one before
the SDK reads it, as a server in another language that never marks the point would. Under
`--start snapshot` it gets a full start, in gVisor, every time."""

from __future__ import annotations

import os

from apmbench.adapters.sdk.loaded_point import LOADED_POINT_ENV
from apmbench.adapters.systems.text_log import TextLog

os.environ.pop(LOADED_POINT_ENV, None)


class Unmarked(TextLog):
    name = "unmarked"
