# Sourced by the main and test commands: `stage NAME command...` runs a step and records
# its wall time; `print_stages` prints the table at the end (also on failure).
declare -a AMBER_STAGE_NAMES=() AMBER_STAGE_SECS=()
stage() {
  local name=$1
  shift
  echo "==> $name"
  local t0 t1
  t0=$(date +%s.%N)
  local rc=0
  "$@" || rc=$?
  t1=$(date +%s.%N)
  AMBER_STAGE_NAMES+=("$name")
  AMBER_STAGE_SECS+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')")
  ((rc == 0)) || echo "==> $name failed (exit $rc)"
  return $rc
}
print_stages() {
  echo
  echo "stage times:"
  local i
  for i in "${!AMBER_STAGE_NAMES[@]}"; do
    printf "  %-30s %8ss\n" "${AMBER_STAGE_NAMES[$i]}" "${AMBER_STAGE_SECS[$i]}"
  done
}
