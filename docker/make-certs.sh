#!/bin/sh
# Development certificates for the compose file's SASL_SSL listener (the `certs` service runs
# this into the minikafka-certs volume; nothing here is ever committed):
#   ca.pem      a throwaway CA: the clients' truststore (ssl.ca.location / ssl_cafile)
#   broker.pem  the broker's key and certificate chain: ssl.keystore.type=PEM
# for the names localhost, broker and 127.0.0.1. The CA key is deleted once it has signed.
# Usage: make-certs.sh DIR  (creates DIR if missing; does nothing if DIR/broker.pem exists;
# uses the openssl CLI).
# Your own certificates instead: mount a directory holding broker.pem (key + chain, PEM)
# and ca.pem at /etc/minikafka/certs, and drop the certs service.
set -eu
dir=${1:-/etc/minikafka/certs}
if [ -f "$dir/broker.pem" ]; then
    echo "certificates already in $dir"
    exit 0
fi
mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -days 825 -subj "/CN=minikafka development CA" \
    -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout "$work/broker.key" -out "$work/broker.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,DNS:broker,IP:127.0.0.1\n' >"$work/san.ext"
openssl x509 -req -in "$work/broker.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
    -CAcreateserial -days 825 -extfile "$work/san.ext" -out "$work/broker.crt" 2>/dev/null
cat "$work/broker.key" "$work/broker.crt" "$work/ca.pem" >"$dir/broker.pem"
cp "$work/ca.pem" "$dir/ca.pem"
chmod 600 "$dir/broker.pem"
chmod 644 "$dir/ca.pem"
# The broker runs as 1000:1000 in the image.
if [ "$(id -u)" = 0 ]; then
    chown 1000:1000 "$dir/broker.pem" "$dir/ca.pem"
fi
echo "wrote $dir/broker.pem and $dir/ca.pem"
