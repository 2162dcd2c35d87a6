#!/usr/bin/env bash
# Stops the daemons tests/slurm/start.sh started (by their pid files, nothing else) and removes
# its state directory. Safe to run when nothing, or only part of the cluster, is running.
set -uo pipefail

STATE="${HYBRID_IR_SLURM_STATE:-/tmp/hybrid-ir-slurm}"
[[ -d "$STATE" ]] || exit 0

if [[ "$(readlink /etc/slurm/slurm.conf)" == "$STATE/slurm.conf" ]] && command -v scancel >/dev/null; then
    # Jobs still queued or running (a failed test) die with their slurmstepd, not after it.
    timeout 10 scancel --full --user="$(id -un)" 2>/dev/null
fi

for daemon in slurmd slurmctld munged; do
    pidfile="$STATE/$daemon.pid"
    [[ -f "$pidfile" ]] || continue
    pid="$(cat "$pidfile")"
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "tests/slurm/stop.sh: $daemon ($pid) ignored SIGTERM for 10 s: killing it" >&2
        kill -KILL "$pid" 2>/dev/null
    fi
done
# Only the link start.sh made: a slurm.conf of the machine's own is left alone.
if [[ "$(readlink /etc/slurm/slurm.conf)" == "$STATE/slurm.conf" ]]; then
    rm /etc/slurm/slurm.conf
fi
rm -rf "$STATE"
