#!/usr/bin/env bash
# Makes a test CA and, for each NAME, a certificate and key signed by it:
#   deploy/tls/make-certs.sh DIR NAME...
# writes DIR/ca.pem (and DIR/ca-key.pem, to sign more later), DIR/NAME.pem and
# DIR/NAME-key.pem. Each certificate is good for client and server use (a
# ferry node is both) and names NAME, localhost and 127.0.0.1 as its subject
# alternative names; set FERRY_CERT_SANS="DNS:a,IP:10.0.0.1" to add more.
# An existing CA in DIR is reused, so a NAME can be added to a running cluster.
# For tests and trials: a production cluster takes its certificates from its
# own CA.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 DIR NAME..." >&2
  exit 2
fi
dir=$1
shift
command -v openssl >/dev/null || { echo "make-certs: openssl is not installed" >&2; exit 1; }
mkdir -p "$dir"
umask 077
days=${FERRY_CERT_DAYS:-825}
if [ ! -s "$dir/ca.pem" ] || [ ! -s "$dir/ca-key.pem" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days "$days" \
    -subj "/CN=ferry test CA" -keyout "$dir/ca-key.pem" -out "$dir/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  echo "make-certs: CA $dir/ca.pem"
fi
for name in "$@"; do
  case "$name" in
    */* | "" ) echo "make-certs: bad name '$name'" >&2; exit 2 ;;
  esac
  sans="DNS:$name,DNS:localhost,IP:127.0.0.1"
  [ -n "${FERRY_CERT_SANS:-}" ] && sans="$sans,$FERRY_CERT_SANS"
  ext=$(mktemp)
  trap 'rm -f "$ext" "$dir/$name.csr"' EXIT
  printf '%s\n' "basicConstraints=CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=$sans" >"$ext"
  openssl req -newkey rsa:2048 -nodes -sha256 -subj "/CN=$name" \
    -keyout "$dir/$name-key.pem" -out "$dir/$name.csr" 2>/dev/null
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca-key.pem" \
    -CAcreateserial -days "$days" -sha256 -extfile "$ext" -out "$dir/$name.pem" 2>/dev/null
  rm -f "$ext" "$dir/$name.csr"
  trap - EXIT
  openssl verify -CAfile "$dir/ca.pem" "$dir/$name.pem" >/dev/null
  echo "make-certs: $dir/$name.pem, $dir/$name-key.pem"
done
