#!/usr/bin/env bash
# Keeps both cores busy the way other work on a shared CI machine does, for measuring a
# run beside it (docs/measurements.md, "CI beside a load"): two `evaluate --synthetic
# small` in a loop each, and a loop of `docker build --no-cache` of an image whose build
# step computes for about a minute, on the same engine the container tests use. Every
# 30 s it appends the load average to $LOAD_LOG. It stops by itself after $LOAD_MAX_S
# seconds (default 3 h), or when killed (`kill -- -PGID`: it runs its loops in its group).
#
#   tests/bench/load_generator.sh &        # from the repository root, after make install
set -u
cd "$(dirname "$0")/../.."
MAX_S="${LOAD_MAX_S:-10800}"
LOG="${LOAD_LOG:-/tmp/apmbench-load.log}"
WORK="$(mktemp -d /tmp/apmbench-load.XXXXXX)"
END=$(( $(date +%s) + MAX_S ))
PY=.venv/bin/python

evaluate_loop() {
    local n=0
    while [ "$(date +%s)" -lt "$END" ]; do
        n=$((n + 1))
        "$PY" -m apmbench.harness.cli evaluate --synthetic small --seed "$1" \
            --system text-log --out "$WORK/eval-$1-$n" >"$WORK/eval-$1.log" 2>&1
        rm -rf "$WORK/eval-$1-$n"
    done
}

build_loop() {
    mkdir -p "$WORK/image"
    cat >"$WORK/image/Dockerfile" <<'EOF'
FROM apmbench/base:latest
RUN python3 -c "import hashlib; h=b'x'; [h := hashlib.sha256(h).digest() for _ in range(30_000_000)]"
EOF
    while [ "$(date +%s)" -lt "$END" ]; do
        docker build --no-cache -q -t apmbench-load:latest "$WORK/image" >>"$WORK/build.log" 2>&1 \
            || sleep 10
    done
    docker image rm -f apmbench-load:latest >/dev/null 2>&1
}

sample_loop() {
    while [ "$(date +%s)" -lt "$END" ]; do
        echo "$(date -u +%H:%M:%S) $(cut -d' ' -f1-3 /proc/loadavg)" >>"$LOG"
        sleep 30
    done
}

trap 'kill 0' TERM INT
evaluate_loop 1 &
evaluate_loop 2 &
build_loop &
sample_loop &
wait
rm -rf "$WORK"
