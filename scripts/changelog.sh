#!/usr/bin/env bash
# `make changelog`: release changelogs/fragments/*.yml as galaxy.yml's version into changelogs/changelog.yaml
# and CHANGELOG.md with antsibull-changelog (pinned in requirements-test.txt). It runs in a generated
# collection layout (scripts/build-collection.py --layout): through the checkout's symlink tree it would
# find none of the modules, filters and roles it lists as new. The results are copied back; the released
# fragments are removed, as antsibull-changelog does.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
layout="$work/ansible_collections/metnos/sandbox"
python "$here/scripts/build-collection.py" --layout "$layout" --output-path "$work/dist" >/dev/null
(cd "$layout" && ANSIBLE_COLLECTIONS_PATH="$work" antsibull-changelog release "$@")
cp "$layout/changelogs/changelog.yaml" "$layout/changelogs/.plugin-cache.yaml" "$here/changelogs/"
cp "$layout/CHANGELOG.md" "$here/CHANGELOG.md"
for fragment in "$here"/changelogs/fragments/*; do
  case "$(basename "$fragment")" in .keep) ;; *) [ -e "$layout/changelogs/fragments/$(basename "$fragment")" ] || rm -f "$fragment" ;; esac
done
