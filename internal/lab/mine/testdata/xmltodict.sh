#!/bin/sh
# Builds xmltodict.bundle: the history of xmltodict, a real third-party
# Python library (https://github.com/martinblech/xmltodict, MIT licence,
# its LICENSE in every tree), up to release 1.0.4 — upstream's commits as
# published, hashes unchanged. TestMineXmltodict mines it. Run from this
# folder: sh xmltodict.sh [SOURCE] (default: the GitHub repository).
set -eu
src=${1:-https://github.com/martinblech/xmltodict}
want=8d7f1fdb2251b5dc3b98df447850cb8229defc32 # chore(master): release 1.0.4
out=$(pwd)/xmltodict.bundle
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
git clone -q --bare --single-branch --branch master "$src" "$dir/repo.git"
# upstream may have moved on: the bundle ends at the pinned release
git -C "$dir/repo.git" update-ref refs/heads/master "$want"
git -C "$dir/repo.git" bundle create -q "$out" master
