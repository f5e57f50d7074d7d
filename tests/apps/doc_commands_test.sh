#!/usr/bin/env bash
# The commands the docs show, run: a command in README.md, docs/*.md or an
# example's header that fails, or an output the docs state that the command
# does not print, fails this test.
#
#  1. Every `murmur sim|train|topology|plot` line in a ``` block of README.md
#     and docs/*.md (a trailing `# comment` cut, `\` continuations joined),
#     and every "Run:" / "in the simulator:" command line in the headers of
#     examples/*.textproto and examples/jobs/*.job (shell loops and `&&`
#     included), runs in a scratch directory with `examples` linked in.
#     `mpirun -np R murmur sim` lines run too where the build has MPI (fourth
#     argument ON), through the same wrapper, as root where the test is root.
#     `murmur sim` and `murmur train` are shortened by flags appended last
#     (which win over the line's own): --rounds 2 --eval-every 2 --quiet, and
#     --epochs 1. Lines with shell variables or placeholders (FILE, OLD.job,
#     KIND, N ...) are templates, not commands, and are skipped, as are the
#     operator, daemon and benchmark commands (they need a fleet, or they
#     time the machine: tests/apps/daemon_*_test.sh and `murmur bench` run
#     those). `python3 examples/...` lines run too (they write the files the
#     next lines use). A `torchscript:NAME.pt` model that no earlier line
#     wrote is the example CNN (examples/torchscript/make_cnn.py) written
#     under that name; in a build without LibTorch (third argument OFF) the
#     lines naming a TorchScript model are counted and listed, not run.
#  2. A ``` block right after `<!-- output of: COMMAND -->` is a stated
#     output: COMMAND runs in full and each line of the block must appear in
#     its output verbatim.
# usage: doc_commands_test.sh MURMUR SOURCE_DIR [HAVE_TORCH [HAVE_MPI]]
set -uo pipefail
MURMUR=$(realpath "$1") SRC=$(realpath "$2") HAVE_TORCH=${3:-ON} HAVE_MPI=${4:-OFF}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# More ranks than cores: a rank waiting in a collective yields its core instead of spinning.
export OMPI_MCA_mpi_yield_when_idle=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
ln -s "$SRC/examples" "$WORK/examples"
failures=0 ran=0 skipped=0
declare -A seen  # a command shown in several places runs once

# The shortening wrapper that the extracted command lines call.
cat >"$WORK/murmur" <<EOF
#!/usr/bin/env bash
case "\$1" in
  sim) exec "$MURMUR" "\$@" --rounds 2 --eval-every 2 --quiet ;;
  train) exec "$MURMUR" "\$@" --epochs 1 ;;
  *) exec "$MURMUR" "\$@" ;;
esac
EOF
chmod +x "$WORK/murmur"
# `python3` in the docs is Debian's, which has PyTorch (./dev test installs python3-torch).
printf '#!/bin/sh\nexec /usr/bin/python3 "$@"\n' >"$WORK/python3"
chmod +x "$WORK/python3"

# run WHERE LINE: runs one command line with the wrapper first on PATH.
run() {
  local where=$1 line=$2 out begin=$SECONDS
  [ -n "${seen[$line]:-}" ] && return 0
  seen[$line]=1
  if [[ $line == mpirun* && $HAVE_MPI != ON ]]; then
    echo "not run (built without MPI): $line"
    skipped=$((skipped + 1))
    return 0
  fi
  if [[ $line == *torchscript:* || $line == *examples/torchscript/* ]]; then
    if [ "$HAVE_TORCH" != ON ]; then
      echo "not run (built without LibTorch): $line"
      skipped=$((skipped + 1))
      return 0
    fi
    local model
    for model in $(grep -oE 'torchscript:[^ ]+[.]pt' <<<"$line" | cut -d: -f2-); do
      [ -e "$WORK/$model" ] || /usr/bin/python3 "$SRC/examples/torchscript/make_cnn.py" "$WORK/$model" >/dev/null
    done
  fi
  ran=$((ran + 1))
  if ! out=$(cd "$WORK" && PATH="$WORK:$PATH" timeout 300 bash -c "$line" 2>&1); then
    echo "FAIL ($where): $line"
    echo "$out" | tail -n 5 | sed 's/^/    /'
    failures=$((failures + 1))
  fi
  [ $((SECONDS - begin)) -ge 5 ] && echo "($where took $((SECONDS - begin)) s: $line)"
  return 0
}

# Command lines of the fenced blocks of a markdown file, one per line, as "LINENO<TAB>COMMAND".
doc_lines() {
  awk '
    /^[[:space:]]*```/ { fence = !fence; joined = ""; next }
    !fence { next }
    {
      line = $0
      if (joined != "") { line = joined " " line; joined = "" }
      sub(/^[[:space:]]+/, "", line)
      if (line ~ /\\$/) { sub(/\\$/, "", line); joined = line; start = start ? start : NR; next }
      if (line ~ /^murmur (sim|train|topology|plot)( |$)/ || line ~ /^python3 examples\// ||
          line ~ /^mpirun( -[a-z-]+( [0-9]+)?)* murmur sim( |$)/) {
        sub(/[[:space:]]+#.*$/, "", line)
        print (start ? start : NR) "\t" line
      }
      start = 0
    }' "$1"
}

template() {  # a line with shell variables or placeholders is a template
  [[ $1 == *'$'* || $1 == *'...'* ]] && return 0
  grep -qE '(^| |=)([A-Z][A-Z0-9_]*[A-Z0-9](\.[a-z]+)?)( |$|,)' <<<"$1"
}

for doc in "$SRC/README.md" "$SRC"/docs/*.md; do
  while IFS=$'\t' read -r lineno line; do
    if template "$line"; then skipped=$((skipped + 1)); continue; fi
    run "${doc#"$SRC"/}:$lineno" "$line"
  done < <(doc_lines "$doc")
done

for example in "$SRC"/examples/*.textproto "$SRC"/examples/jobs/*.job; do
  while IFS= read -r line; do
    cmd=$(sed -E 's/^# (Run|The same spec in the simulator): //' <<<"$line")
    run "${example#"$SRC"/}" "$cmd"
  done < <(grep -E '^# (Run|The same spec in the simulator): murmur ' "$example")
done

# 2. Stated outputs.
for doc in "$SRC/README.md" "$SRC"/docs/*.md; do
  while IFS=$'\t' read -r lineno cmd; do
    ran=$((ran + 1))
    expected=$(awk -v from="$lineno" 'NR > from && /^```/ { if (inside) exit; inside = 1; next } inside' "$doc")
    actual=$(cd "$WORK" && timeout 600 bash -c "${cmd/#murmur/$MURMUR} --quiet" 2>&1)
    while IFS= read -r want; do
      [ -z "$want" ] && continue
      if ! grep -qxF -- "$want" <<<"$actual"; then
        echo "FAIL (${doc#"$SRC"/}:$lineno): \`$cmd\` does not print: $want"
        failures=$((failures + 1))
      fi
    done <<<"$expected"
  done < <(grep -n '^<!-- output of: ' "$doc" | sed -E 's/^([0-9]+):<!-- output of: (.*) -->$/\1\t\2/')
done

echo "$ran documented commands run, $skipped templates skipped, $failures failures"
[ "$failures" -eq 0 ] && echo "doc commands test passed"
