"""Generated protocol code for apmbench.v1 (see memory_system.proto).

Only the server SDK (apmbench.adapters.sdk) and the harness client
(apmbench.harness.protocol.client) import these modules.
"""

PROTOCOL_VERSION = "1.0"
