#!/usr/bin/env bash
# The Docker services the tests use: a private dockerd, a local registry on a free loopback port,
# and the offline base images (Debian bookworm + python3, then TensorFlow on top).
#
#   eval "$(bash scripts/docker_services.sh start)"   # prints `export DOCKER_HOST=...` lines
#   bash scripts/docker_services.sh stop              # kills dockerd and the registry by PID
#
# Everything lives under .cache/docker/ (or $TFC_DOCKER_CACHE), so a second `start` on the same
# machine reuses the engine, the registry and the cached images. `start` says whether it started
# the engine itself (TFC_DOCKER_OWNED=1): scripts/test.sh stops only what it started.
# Needs root on Debian (apt-get, dockerd). Without root it prints nothing to export and the
# Docker tests skip. Progress goes to stderr; only the export lines go to stdout.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${TFC_DOCKER_CACHE:-$root/.cache/docker}"
sock="$cache/docker.sock"
log() { echo "[docker-services] $*" >&2; }

ping_engine() {  # 0 when the engine answers on our socket
  [ -S "$sock" ] && curl -sf --max-time 3 --unix-socket "$sock" http://localhost/_ping >/dev/null 2>&1
}

alive() {  # alive PIDFILE: 0 when the pid in it runs
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds
  local deadline=$((SECONDS + $1)) what="$2"
  shift 2
  until "$@"; do
    if [ $SECONDS -ge $deadline ]; then
      log "$what did not come up in time"
      return 1
    fi
    sleep 0.5
  done
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

install_packages() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]} (apt-get)"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >&2
  fi
}

start_engine() {
  if ping_engine; then
    log "reusing the engine on $sock"
    owned=0
    return
  fi
  mkdir -p "$cache/data" "$cache/exec"
  rm -f "$sock"
  log "starting dockerd ($cache)"
  # setsid: the engine outlives this script; `stop` ends it by its pid.
  setsid dockerd --data-root "$cache/data" --exec-root "$cache/exec" \
    --pidfile "$cache/dockerd.pid" -H "unix://$sock" --storage-driver=overlay2 \
    --iptables=false --ip6tables=false --bridge=none \
    >>"$cache/dockerd.log" 2>&1 </dev/null &
  if ! wait_for 60 dockerd ping_engine; then
    tail -n 20 "$cache/dockerd.log" >&2
    exit 1
  fi
  owned=1
}

registry_up() {
  curl -sf --max-time 3 "http://127.0.0.1:$(cat "$cache/registry.port")/v2/" >/dev/null 2>&1
}

start_registry() {
  if alive "$cache/registry.pid" && [ -f "$cache/registry.port" ] && registry_up; then
    log "reusing the registry on 127.0.0.1:$(cat "$cache/registry.port")"
    return
  fi
  local port
  port="$(free_port)"
  mkdir -p "$cache/registry"
  cat >"$cache/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $cache/registry
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
EOF
  echo "$port" >"$cache/registry.port"
  log "starting the registry on 127.0.0.1:$port"
  setsid docker-registry serve "$cache/registry.yml" >>"$cache/registry.log" 2>&1 </dev/null &
  echo $! >"$cache/registry.pid"
  if ! wait_for 30 "the registry" registry_up; then
    tail -n 20 "$cache/registry.log" >&2
    exit 1
  fi
}

stop_pid() {  # stop_pid PIDFILE NAME: SIGTERM, then SIGKILL after 20 s
  local file="$1" name="$2" pid
  alive "$file" || { rm -f "$file"; return 0; }
  pid="$(cat "$file")"
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 20))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$file"
}

case "${1:-}" in
  start)
    if [ "$(id -u)" != 0 ]; then
      log "not root: no private Docker engine (the Docker tests will skip)"
      exit 0
    fi
    mkdir -p "$cache"
    chmod 700 "$cache"
    install_packages
    owned=0
    # A failed start stops the engine it started itself (never one it found running).
    trap 'rc=$?; if [ $rc != 0 ] && [ "$owned" = 1 ]; then
      log "start failed: stopping what it started"; bash "$0" stop; fi' EXIT
    start_engine
    start_registry
    export DOCKER_HOST="unix://$sock"
    # The offline base images, built once per engine (see tests/dockerinfra.py).
    python="${TFC_PYTHON:-$root/.venv/bin/python}"
    parent="$("$python" "$root/tests/dockerinfra.py" images --cache "$cache")"
    echo "export DOCKER_HOST=unix://$sock"
    echo "export TFC_TEST_REGISTRY=127.0.0.1:$(cat "$cache/registry.port")"
    echo "export TFC_TEST_PARENT_IMAGE=$parent"
    echo "export TFC_DOCKER_OWNED=$owned"
    ;;
  stop)
    stop_pid "$cache/registry.pid" "the registry"
    stop_pid "$cache/dockerd.pid" dockerd
    rm -f "$sock"
    # What a stopped dockerd can leave mounted (its default netns): unmount, deepest first.
    if [ -r /proc/mounts ]; then
      awk -v c="$cache/" 'index($2, c) == 1 {print $2}' /proc/mounts | sort -r |
        while read -r mnt; do umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true; done
    fi
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
