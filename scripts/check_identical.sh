#!/bin/bash
# Byte identity of every solver's output between two builds (issue 17: a refactor changes no byte).
# Usage: scripts/check_identical.sh OLD_BIN NEW_BIN [OUTDIR]   (the bin folders of two venvs)
# Data: data/ of this clone and $BSVM_DATA (dna, satimage). Every run uses -n 1.
# Models (each solver, variants, formats), predictions, -v accuracy lines, -b 1 models, --stream.
set -u
if [ $# -lt 2 ] || [ -z "${BSVM_DATA:-}" ]; then
  echo "usage: BSVM_DATA=folder $0 OLD_BIN NEW_BIN [OUTDIR]" >&2; exit 2
fi
OLD=$(cd "$1" && pwd); NEW=$(cd "$2" && pwd); D=$(cd "$BSVM_DATA" && pwd); H=$(cd "$(dirname "$0")/.." && pwd)/data
out=${3:-$(mktemp -d)}; mkdir -p "$out"; out=$(cd "$out" && pwd); n=0; same=0
# Run from the output folder: a build wrapped as `python -c ...` (e.g. a worktree on PYTHONPATH)
# puts the working directory first on sys.path, so run from a clone it would import that clone.
cd "$out"
check() { name=$1; shift
  $OLD/bsvm-train -q -n 1 "$@" $out/$name.old >/dev/null 2>&1 || echo "old failed: $name"
  $NEW/bsvm-train -q -n 1 "$@" $out/$name.new >/dev/null 2>&1 || echo "new failed: $name"
  n=$((n+1)); if cmp -s $out/$name.old $out/$name.new; then same=$((same+1)); r=identical; else r=DIFFER; fi
  printf '%-26s %s (%s bytes)\n' "$name" "$r" "$(stat -c %s $out/$name.new 2>/dev/null)"; }
pred() { name=$1; model=$2; test=$3
  $OLD/bsvm-predict -q $test $out/$model.old $out/$name.old >/dev/null 2>&1 || echo "old predict failed: $name"
  $NEW/bsvm-predict -q $test $out/$model.new $out/$name.new >/dev/null 2>&1 || echo "new predict failed: $name"
  n=$((n+1)); if cmp -s $out/$name.old $out/$name.new; then same=$((same+1)); r=identical; else r=DIFFER; fi
  printf '%-26s %s\n' "$name" "$r"; }
cv() { name=$1; shift
  $OLD/bsvm-train -q -n 1 "$@" > $out/$name.old 2>&1; $NEW/bsvm-train -q -n 1 "$@" > $out/$name.new 2>&1
  n=$((n+1)); if cmp -s $out/$name.old $out/$name.new; then same=$((same+1)); r=identical; else r=DIFFER; fi
  printf '%-26s %s (%s)\n' "$name" "$r" "$(head -c 60 $out/$name.new)"; }
check bsgd-a9a -c 32 -g 0.0078125 $H/a9a.xz
check bsca-a9a -s bsca -c 32 -g 0.0078125 $H/a9a.xz
check bsgd-dna -c 8 -g 0.03125 $D/dna.scale.xz
check bsca-dna -s bsca -c 8 -g 0.03125 $D/dna.scale.xz
check bsgd-a9a-none --polish none -c 32 -g 0.0078125 $H/a9a.xz
check bsca-a9a-none -s bsca --polish none -c 32 -g 0.0078125 $H/a9a.xz
check bsgd-gss --merge-search gss --budget 100 -c 8 -g 0.03125 $D/dna.scale.xz
check bsgd-lookuph --merge-search lookup-h --budget 100 -c 8 -g 0.03125 $D/dna.scale.xz
check bsgd-heart-proj --maintenance projection --budget 50 $H/heart_scale.xz
check bsgd-heart-rem --maintenance removal --budget 50 $H/heart_scale.xz
check bsgd-norma --variant norma --polish none --budget 50 $H/heart_scale.xz
check bsgd-mp --variant mp --polish none --budget 50 $H/heart_scale.xz
check bsgd-heart-b1 -b 1 --budget 50 $H/heart_scale.xz
check bsgd-poly -t 1 -d 2 --maintenance removal --budget 50 $H/heart_scale.xz
check bsgd-stream --stream --budget 100 -c 32 -g 0.0078125 $H/a9a.xz
check dcd-a9a -s dcd -c 1 $H/a9a.xz
check dcd-l2 -s dcd --loss l2 -c 1 $H/a9a.xz
check dcd-dna-B -s dcd -c 1 -B 1 $D/dna.scale.xz
check dcd-b1 -s dcd -b 1 -c 1 $H/a9a.xz
check dcd-w -s dcd -c 1 -w1 2 $H/a9a.xz
check acf-a9a -s acf -c 1 $H/a9a.xz
check acf-dna -s acf -c 1 $D/dna.scale.xz
check acf-noshrink -s acf --acf-shrink none -c 1 $D/dna.scale.xz
check ww-dna -s ww -c 1 $D/dna.scale.xz
check ww-satimage-it -s ww --ww-subsolver iterative -c 1 $D/satimage.scale.xz
check ww-noshrink -s ww --ww-shrink none -c 1 $D/satimage.scale.xz
check dcd-libl -s dcd -c 1 --format liblinear $H/a9a.xz
check bsgd-libsvm --format libsvm -c 32 -g 0.0078125 $H/a9a.xz
pred pred-bsgd-a9a bsgd-a9a $H/a9a.t.xz
pred pred-bsca-dna bsca-dna $D/dna.scale.t.xz
pred pred-dcd-a9a dcd-a9a $H/a9a.t.xz
pred pred-ww-dna ww-dna $D/dna.scale.t.xz
cv cv-bsgd -v 3 --budget 50 $H/heart_scale.xz
cv cv-dcd -s dcd -v 5 $H/a9a.xz
echo "$same of $n identical"
[ "$same" = "$n" ]
