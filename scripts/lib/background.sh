# Shared by the install scripts: run the script itself in the background and wait for it.
# Source it, then call
#   background_start PREFIX WHAT COMMAND...   runs COMMAND detached (no caller stream held: a CI log ends when
#                                             its caller ends); PREFIX.log gets its output, PREFIX.pid its pid,
#                                             PREFIX.status its exit status when it ends; returns at once.
#   background_wait PREFIX WHAT POLL_SECONDS  waits for that run and exits with its status; on failure prints the
#                                             log's last 20 lines; exit 4 with one ERROR: line when none was
#                                             started, exit 1 when it stopped without writing a status.
# WHAT names the run in messages ("the background build of .venv-vllm").

background_start() {
  local prefix="$1" what="$2"
  shift 2
  rm -f "$prefix.status"
  ( "$@" > "$prefix.log" 2>&1; echo $? > "$prefix.status" ) < /dev/null > /dev/null 2>&1 &
  echo $! > "$prefix.pid"
  echo "$what started (pid $!, log $prefix.log; --wait waits for it)"
}

background_wait() {
  local prefix="$1" what="$2" poll="${3:-2}" status
  [ -f "$prefix.pid" ] || { echo "ERROR: $what was never started (run the script with --start first)" >&2; exit 4; }
  while [ ! -f "$prefix.status" ]; do
    if ! kill -0 "$(cat "$prefix.pid")" 2>/dev/null && [ ! -f "$prefix.status" ]; then
      echo "ERROR: $what stopped without an exit status (log $prefix.log)" >&2
      exit 1
    fi
    sleep "$poll"
  done
  status="$(cat "$prefix.status")"
  if [ "$status" != 0 ]; then
    echo "$what failed (exit $status); the end of $prefix.log:" >&2
    tail -n 20 "$prefix.log" >&2
  else
    tail -n 1 "$prefix.log"
  fi
  exit "$status"
}
