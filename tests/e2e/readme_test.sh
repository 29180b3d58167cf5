#!/usr/bin/env bash
# README's first trial, run as a newcomer would copy it: the commands of the fenced block that begins with
# `$ export API_KEY`, taken from README.md itself (so the test follows the text), with the relay on PATH;
# what they print is checked against the output the block shows (its `executed` and `frame` lines exactly,
# every other label present). The docker case runs the same command in a fresh BusyBox container.
#   readme_test.sh RELAY README CASE      CASE: first-trial | first-trial-docker
# Exit 0 passed, 1 failed (saying what), 77 skipped (saying why). MAKA_EVAL_TEST_HELPER: the helper that goes
# into the container (default: the relay's own).
set -uo pipefail
relay=${1:?usage: readme_test.sh RELAY README CASE}
readme=${2:?usage: readme_test.sh RELAY README CASE}
case_name=${3:?usage: readme_test.sh RELAY README CASE}
source "$(cd "$(dirname "$0")" && pwd)/case_lib.sh"

# The block: its commands (a `$ ` line and the lines it continues with a trailing backslash) into
# $work/commands, the output it shows into $work/expected.
awk -v commands="$work/commands" -v expected="$work/expected" '
  /^```/ { if (inside && found) exit; inside = !inside; next }
  inside && /^\$ export API_KEY/ { found = 1 }
  !inside || !found { next }
  continuing || /^\$ / { sub(/^\$ /, ""); print > commands; continuing = /\\$/; next }
  { print > expected }' "$readme"
[ -s "$work/commands" ] || fail "README.md has no fenced block beginning with \`\$ export API_KEY\`"
grep -q '^executed' "$work/expected" || fail "README.md's first trial shows no output"
# `export API_KEY=…`: the reader puts a key of their own where the ellipsis is.
sed -i 's/^export API_KEY=…$/export API_KEY=readme-canary-key-0123456789/' "$work/commands"

case "$case_name" in
first-trial) ;;
first-trial-docker)
  fresh_container maka-readme
  where="--env docker:$container ${helper_args[*]}"
  sed -i "s|maka-eval-relay run |maka-eval-relay run $where |" "$work/commands"
  ;;
*) fail "unknown case $case_name" ;;
esac

# The relay as an install puts it: on PATH, with nothing else set.
mkdir "$work/bin" && ln -s "$(readlink -f "$relay")" "$work/bin/maka-eval-relay"
(cd "$work" && env -u MAKA_EVAL_HELPER PATH="$work/bin:$PATH" bash -e "$work/commands") >"$work/out" 2>"$work/err" ||
  fail "README's first trial exited $?: $(cat "$work/out" "$work/err")"
for label in executed frame; do
  want=$(grep "^$label " "$work/expected")
  got=$(grep "^$label " "$work/out")
  [ "$got" = "$want" ] || fail "README shows '$want', the trial printed '$got' (all: $(cat "$work/out"))"
done
while read -r label _; do
  grep -q "^$label " "$work/out" || fail "README shows a '$label' line, the trial printed none: $(cat "$work/out")"
done <"$work/expected"
! grep -rq readme-canary-key "$work/out" || fail "the credential's value is on screen: $(cat "$work/out")"
echo "passed: README's first trial ($case_name)"
