#!/usr/bin/env bash
# Build a local stand-in for docker.io/library/python:3.11-slim, for `make docker-check` on
# machines that cannot pull from a container registry. Not used by the image users build.
#
# Debian bookworm (the same release python:3.11-slim is built on) with its python3 (3.11),
# made to look like the official image where the Dockerfile can tell: /usr/local is a venv,
# so `python` and `pip` are on PATH in /usr/local/bin and `pip install` puts console
# scripts in /usr/local/bin, as in the official image.
#
#   docker/build-base-image.sh [--force]      (needs root, debootstrap and podman)
set -euo pipefail

TAG=${BASE_IMAGE_TAG:-docker.io/library/python:3.11-slim}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [[ "${1:-}" != "--force" ]] && podman image exists "$TAG"; then
    echo "base image $TAG already present"
    exit 0
fi

root=$(mktemp -d /var/tmp/minikafka-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
started=$(date +%s)
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$root" "$MIRROR" >"$root.debootstrap.log" 2>&1 || {
    tail -30 "$root.debootstrap.log" >&2
    exit 1
}
rm -f "$root.debootstrap.log"
chroot "$root" python3 -m venv /usr/local
chroot "$root" /usr/local/bin/python --version
chroot "$root" /usr/local/bin/pip --version
# Keep the stand-in close to -slim: no apt lists, docs or caches.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* \
    "$root"/usr/share/man/* "$root"/usr/share/locale/*
tar -C "$root" -c . | podman import \
    --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' \
    - "$TAG" >/dev/null
echo "built stand-in $TAG in $(($(date +%s) - started)) s"
