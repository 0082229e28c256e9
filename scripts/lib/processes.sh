# Shell helpers for the builds .ci/run and scripts/test run in the background (sourced by both).

# A process and everything under it, parents first.
tree() {
  local child
  echo "$1"
  for child in $(pgrep -P "$1" 2>/dev/null || true); do tree "$child"; done
}

# Stops a background job: the subshell (which would start its next command) with cargo and its
# rustc.
kill_tree() {
  # shellcheck disable=SC2046 # one pid a word
  kill $(tree "$1") 2>/dev/null || true
}

# Back to the foreground's priority, once the foreground waits for it (a niced build waited for
# would share the CPU with the other niced one). Raising a priority needs root: else it stays.
unnice_tree() {
  # shellcheck disable=SC2046 # one pid a word
  renice -n 0 -p $(tree "$1") >/dev/null 2>&1 || true
}
