#!/usr/bin/env bash
# Writes what the upstream AppWrapper controller's webhooks need to be
# served out of cluster on 127.0.0.1 (the way kueue-webhooks.py wires
# Kueue's): a CA and a serving certificate, as the Secret upstream's
# certificate rotator (open-policy-agent/cert-controller) keeps them, and
# upstream's two webhook configurations, pointing at a URL on 127.0.0.1.
#
# The rotator keeps a Secret whose CA is valid for the CA name and whose
# serving certificate is valid for <webhookServiceName>.<namespace>.svc;
# it then writes the certificate into its certificateDir (where the webhook
# server reads it) and injects the CA into the two configurations. Its own
# certificates name that DNS name only, which the API server cannot reach
# from here; the one made here names it (so the rotator keeps it) and
# 127.0.0.1 (so the API server accepts it at the URL).
#
#   upstream-webhooks.sh OUT_DIR NAMESPACE MODULE_DIR [PORT]
#     OUT_DIR/secret.yaml    Secret appwrapper-webhook-server-cert in NAMESPACE
#     OUT_DIR/webhooks.yaml  upstream's Mutating/ValidatingWebhookConfiguration
#                            (config/webhook/manifests.yaml of MODULE_DIR, with
#                            the default kustomization's names) at
#                            https://127.0.0.1:PORT (default 9443, upstream's
#                            fixed webhook port), caBundle = the CA
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: upstream-webhooks.sh OUT_DIR NAMESPACE MODULE_DIR [PORT]" >&2; exit 64; }
out=$1 ns=$2 mod=$3 port=${4:-9443}
mkdir -p "$out"
cd "$out"
# upstream's defaults (pkg/config NewCertManagementConfig)
ca_name=appwrapper-ca
svc=appwrapper-webhook-service
secret=appwrapper-webhook-server-cert
# the rotator parses the CA key as PKCS#1 only
openssl genrsa -traditional -out ca.key 2048 2>/dev/null
openssl req -x509 -new -key ca.key -days 3650 -subj "/O=appwrapper/CN=$ca_name" \
  -addext "subjectAltName=DNS:$ca_name" -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign" -out ca.crt
openssl genrsa -traditional -out tls.key 2048 2>/dev/null
openssl req -new -key tls.key -subj "/CN=$svc.$ns.svc" -out tls.csr
printf 'subjectAltName=DNS:%s.%s.svc,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n' \
  "$svc" "$ns" >tls.ext
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
  -extfile tls.ext -out tls.crt 2>/dev/null
b64() { base64 -w0 <"$1"; }
cat >secret.yaml <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: $secret
  namespace: $ns
data:
  ca.crt: $(b64 ca.crt)
  ca.key: $(b64 ca.key)
  tls.crt: $(b64 tls.crt)
  tls.key: $(b64 tls.key)
YAML
python3 - "$mod/config/webhook/manifests.yaml" "$port" "$(b64 ca.crt)" >webhooks.yaml <<'PY'
import sys
# the manifests' two documents, rewritten line by line: the default
# kustomization names them appwrapper-<name>; a URL replaces the Service
src, port, ca = sys.argv[1], sys.argv[2], sys.argv[3]
out, skip, path, prev = [], 0, None, ""
for line in open(src):
    s = line.rstrip("\n")
    if prev == "metadata:" and s.startswith("  name: "):
        s = "  name: appwrapper-" + s[len("  name: "):]
    prev = s
    if s.strip() == "service:":
        skip = 1
        continue
    if skip:
        st = s.strip()
        if st.startswith("path: "):
            path = st[len("path: "):]
        if st.startswith(("name:", "namespace:", "path:", "port:")) and s.startswith("      "):
            if path:
                out.append("    url: https://127.0.0.1:%s%s" % (port, path))
                out.append("    caBundle: " + ca)
                path, skip = None, 0
            continue
        skip = 0
    out.append(s)
print("\n".join(out))
PY
grep -q 'url: https://127.0.0.1' webhooks.yaml || { echo "upstream-webhooks.sh: no webhook rewritten" >&2; exit 1; }
