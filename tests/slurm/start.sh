#!/usr/bin/env bash
# A one-node SLURM cluster on this machine for tests/slurm/: installs Debian's slurm-wlm and munge
# when missing, then starts munged, slurmctld and slurmd as root with everything they write
# (configuration, key, sockets, spool, logs, pid files) under one state directory, and waits for
# the node to be idle. tests/slurm/stop.sh stops exactly these daemons and removes it all.
#
# The one thing outside the state directory is /etc/slurm/slurm.conf, a link to its slurm.conf:
# SLURM_CONF would not do, as snakemake-executor-plugin-slurm-jobstep drops every SLURM_*
# variable but the job's ids before its srun, which then finds no configuration (the plugin's
# issue #164), so jobs see the cluster only through the default path, as on a real cluster.
#
# Needs root (the daemons run as root, and apt-get installs the packages): CI and the test
# machines are root. STATE defaults to /tmp/hybrid-ir-slurm (HYBRID_IR_SLURM_STATE).
set -euo pipefail

STATE="${HYBRID_IR_SLURM_STATE:-/tmp/hybrid-ir-slurm}"
DEADLINE_S="${HYBRID_IR_SLURM_DEADLINE_S:-60}"

if [[ "$(id -u)" != 0 ]]; then
    echo "tests/slurm/start.sh: must run as root (it installs packages and starts daemons)" >&2
    exit 1
fi
if [[ -e "$STATE" ]]; then
    echo "tests/slurm/start.sh: $STATE exists: a cluster may be running; run tests/slurm/stop.sh" >&2
    exit 1
fi
if [[ -e /etc/slurm/slurm.conf || -L /etc/slurm/slurm.conf ]]; then
    echo "tests/slurm/start.sh: /etc/slurm/slurm.conf exists: this machine has a SLURM" \
        "configuration of its own, which this script will not replace" >&2
    exit 1
fi

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    # A fresh machine's package lists may be missing or stale: update once, then retry.
    apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null; }
fi

# From here on a failure stops whatever this script started (stop.sh goes by the pid files).
trap 'status=$?; if ((status != 0)); then tail -n 20 "$STATE"/*.log >&2; "$(dirname "$0")/stop.sh"; fi' EXIT

mkdir -p "$STATE"/{key,munge,ctld,spool}
chmod 700 "$STATE/key"
chmod 755 "$STATE" "$STATE/munge"  # munged wants its socket's directory reachable by all
# A fresh random key for this cluster only: munged refuses keys others can read.
dd if=/dev/urandom of="$STATE/key/munge.key" bs=1024 count=1 status=none
chmod 400 "$STATE/key/munge.key"
SOCKET="$STATE/munge/munge.socket"
# --force: munged refuses to run as root without it.
munged --force --key-file="$STATE/key/munge.key" --socket="$SOCKET" \
    --pid-file="$STATE/munged.pid" --log-file="$STATE/munged.log" \
    --seed-file="$STATE/key/munged.seed"

HOST="$(hostname -s)"
CPUS="$(nproc)"
# The node offers all its memory but 1 GiB (for the daemons and the submitting snakemake).
MEMORY_MB="$(awk '/^MemTotal:/ {print int($2 / 1024) - 1024}' /proc/meminfo)"

cat >"$STATE/slurm.conf" <<EOF
# Written by tests/slurm/start.sh: one node, no accounting database, no cgroups.
ClusterName=hybridir
# Addresses given, so that nothing depends on the host name resolving.
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCKET
SlurmctldPort=${HYBRID_IR_SLURMCTLD_PORT:-6817}
SlurmdPort=${HYBRID_IR_SLURMD_PORT:-6818}
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
# Containers often lack a writable cgroup hierarchy: track job processes through /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
# snakemake-executor-plugin-slurm polls squeue (no sacct without slurmdbd): a finished job must
# stay visible for longer than its status interval, and the plugin itself switches to sacct when
# MinJobAge is below three initial status intervals (3 x 40 s by default).
MinJobAge=300
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEMORY_MB State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
mkdir -p /etc/slurm
ln -s "$STATE/slurm.conf" /etc/slurm/slurm.conf

slurmctld
slurmd

end=$((SECONDS + DEADLINE_S))
until [[ "$(sinfo --noheader --nodes="$HOST" --format=%t 2>/dev/null)" == idle ]]; do
    if ((SECONDS >= end)); then
        echo "tests/slurm/start.sh: node $HOST not idle after ${DEADLINE_S}s:" >&2
        sinfo --long --Node >&2 || true
        exit 1
    fi
    sleep 1
done
echo "SLURM cluster up: /etc/slurm/slurm.conf -> $STATE/slurm.conf, node $HOST ($CPUS CPUs, $MEMORY_MB MB)"
