#!/usr/bin/env python3
"""Kueue's webhook configurations for a Kueue running outside the cluster.

Reads config/components/webhook of Kueue's module (manifests.yaml and the
inline patches of its kustomization.yaml), and prints, one JSON document a
line, each Mutating/ValidatingWebhookConfiguration as Kueue's default
kustomization names it ("kueue-" prefix), with every clientConfig.service
replaced by url https://HOST:PORT<path> and the CA bundle, since the API
server reaches a webhook outside the cluster only by URL. up.sh applies
them (KUEUE=true).

    kueue-webhooks.py MODULE_DIR HOST:PORT CA_FILE
"""
import base64
import json
import sys

import yaml


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: kueue-webhooks.py MODULE_DIR HOST:PORT CA_FILE")
    mod, hostport, ca_file = sys.argv[1:]
    wdir = mod + "/config/components/webhook"
    with open(ca_file, "rb") as f:
        ca = base64.b64encode(f.read()).decode()
    with open(wdir + "/manifests.yaml") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    with open(wdir + "/kustomization.yaml") as f:
        kust = yaml.safe_load(f)
    by_key = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    # Strategic-merge patches of webhooks by name: only the fields they set.
    for p in kust.get("patches", []):
        if "patch" not in p:
            sys.exit("kueue-webhooks.py: a patch by path is not handled: %r" % p)
        patch = yaml.safe_load(p["patch"])
        target = by_key.get((patch["kind"], patch["metadata"]["name"]))
        if target is None:
            sys.exit("kueue-webhooks.py: patch for unknown %s/%s"
                     % (patch["kind"], patch["metadata"]["name"]))
        hooks = {w["name"]: w for w in target["webhooks"]}
        for w in patch.get("webhooks", []):
            if w["name"] not in hooks:
                sys.exit("kueue-webhooks.py: patch for unknown webhook " + w["name"])
            hooks[w["name"]].update({k: v for k, v in w.items() if k != "name"})
    for d in docs:
        if d["kind"] not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            continue
        d["metadata"]["name"] = "kueue-" + d["metadata"]["name"]
        for w in d["webhooks"]:
            svc = w["clientConfig"].get("service")
            if svc is None:
                sys.exit("kueue-webhooks.py: webhook %s has no service" % w["name"])
            w["clientConfig"] = {
                "url": "https://%s%s" % (hostport, svc.get("path", "/")),
                "caBundle": ca,
            }
        print(json.dumps(d, separators=(",", ":")))


if __name__ == "__main__":
    main()
