#!/usr/bin/env bash
# Regenerate the stored results folders of docs/results/ with the product's own commands.
#
# Each folder is the output of one `dpgossip` command on a shipped scenario (the table below, the same
# as docs/results/README.md). The command runs into a scratch folder; then the files the repository
# keeps (those already in docs/results/<folder>/) are copied over, so `git diff` shows what changed.
# Run from the repository's root, with the package installed:
#
#   bash docs/results/regenerate.sh                          # every folder (paper-fig2: hours of compute)
#   bash docs/results/regenerate.sh quickstart privacy-example   # only these folders
#
# Then run the tests (`python -m pytest -q -n 2`): a page that quotes a number that moved fails and
# names it. The tables of docs/numbers/ that scripts/ still writes are not covered here.
set -euo pipefail

declare -A COMMAND=(
  [quickstart]="run scenarios/quickstart.toml --no-plots"
  [consensus-sweep]="run scenarios/consensus-sweep.toml --no-plots"
  [topology-comparison]="run scenarios/topology-comparison.toml --no-plots"
  [dynamic-gossip-modes]="run scenarios/dynamic-gossip-modes.toml"
  [dynamic-gossip-churn]="run scenarios/dynamic-gossip-churn.toml"
  [dynamic-leakage-muffliato]="run scenarios/dynamic-leakage-muffliato.toml"
  [quickstart-audit]="audit scenarios/quickstart.toml --no-plots"
  [privacy-example]="audit scenarios/privacy-example.toml --no-plots"
  [privacy-example-paper]="audit scenarios/privacy-example.toml --view paper --no-plots"
  [floorfree-wine]="run scenarios/floorfree-wine.toml --no-plots"
  [floorfree-wine-audit]="audit scenarios/floorfree-wine.toml --no-plots"
  [cape-classical-calibration]="run scenarios/cape-classical-calibration.toml --no-plots"
  [cape-gossip-views]="run scenarios/cape-gossip-views.toml --no-plots"
  [ppm-accountants]="run scenarios/ppm-accountants.toml --no-plots"
  [ppm-gossip-masks]="run scenarios/ppm-gossip-masks.toml --no-plots"
  [protocol-frontier]="run scenarios/protocol-frontier.toml"
  [network-dp-gossip]="run scenarios/network-dp-gossip.toml"
  [network-dp-decor]="run scenarios/network-dp-decor.toml --no-plots"
  [network-dp-bounds]="run scenarios/network-dp-bounds.toml --no-plots"
  [paper-fig2-wine]="run scenarios/paper-fig2-wine.toml --workers 2"
  [pairwise-leakage]="run scenarios/pairwise-leakage.toml --no-plots --workers 2"
  [protocol-comparison]="run scenarios/protocol-comparison.toml --no-plots"
  [paper-fig2-diabetes]="run scenarios/paper-fig2-diabetes.toml --workers 2"
  [paper-fig2-breast_cancer]="run scenarios/paper-fig2-breast_cancer.toml --workers 2"
  [paper-fig3]="run scenarios/paper-fig3.toml --workers 2"
)

here="docs/results"
if [ ! -d "$here" ]; then
  echo "regenerate.sh: run it from the repository's root (no $here here)" >&2
  exit 2
fi
folders=("$@")
if [ ${#folders[@]} -eq 0 ]; then
  mapfile -t folders < <(printf '%s\n' "${!COMMAND[@]}" | sort)
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for folder in "${folders[@]}"; do
  if [ -z "${COMMAND[$folder]+set}" ]; then
    echo "regenerate.sh: no folder '$folder'; allowed: $(printf '%s ' "${!COMMAND[@]}" | tr ' ' '\n' | sort | tr '\n' ' ')" >&2
    exit 2
  fi
  echo "== $folder: dpgossip ${COMMAND[$folder]}" >&2
  # shellcheck disable=SC2086  # the command's words are split on purpose
  dpgossip ${COMMAND[$folder]} --out "$scratch/$folder"
  if [ -d "$here/$folder" ]; then
    (cd "$here/$folder" && find . -type f) | while read -r file; do
      cp "$scratch/$folder/$file" "$here/$folder/$file"
    done
  else
    cp -r "$scratch/$folder" "$here/$folder"
    echo "regenerate.sh: $here/$folder is new: keep only the files its page needs" >&2
  fi
done
