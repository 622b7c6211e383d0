"""The LeaderWorkerSet v1 CRD's openAPIV3Schema, the part these manifests use, for jsonschema.

Written from the published CRD (sigs.k8s.io/lws, config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml,
v0.9 line, where restartPolicy gained RecreateGroupAfterStart): field names, types, enums, minimums and
required fields of `spec` and `spec.leaderWorkerTemplate`.
It is a faithful subset, not the whole file (no registry or GitHub download is possible where the tests
run): the pod templates, which the real CRD expands in full, are checked as core PodTemplates by
kubernetes-validate instead, and unknown fields are refused (as `kubeconform -strict` does) so that a
misspelt field fails here rather than being pruned by the API server.
"""

from __future__ import annotations

_TEMPLATE = {
    "type": "object",
    "properties": {"metadata": {"type": "object"}, "spec": {"type": "object"}},
    "required": ["spec"],
    "additionalProperties": False,
}
_INT_OR_STRING = {"anyOf": [{"type": "integer"}, {"type": "string"}]}

LWS_V1_SCHEMA: dict = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "leaderworkerset.x-k8s.io/v1"},
        "kind": {"const": "LeaderWorkerSet"},
        "metadata": {"type": "object", "required": ["name"]},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["leaderWorkerTemplate"],
            "properties": {
                "replicas": {"type": "integer", "format": "int32", "minimum": 0},
                "startupPolicy": {"enum": ["LeaderCreated", "LeaderReady"]},
                "networkConfig": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"subdomainPolicy": {"enum": ["Shared", "UniquePerReplica"]}},
                },
                "rolloutStrategy": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "type": {"enum": ["RollingUpdate"]},
                        "rollingUpdateConfiguration": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "maxUnavailable": _INT_OR_STRING,
                                "maxSurge": _INT_OR_STRING,
                                "partition": {"type": "integer", "minimum": 0},
                            },
                        },
                    },
                },
                "leaderWorkerTemplate": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["workerTemplate"],
                    "properties": {
                        "size": {"type": "integer", "format": "int32", "minimum": 1},
                        "restartPolicy": {
                            "enum": ["RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "None", "Default"]
                        },
                        "leaderTemplate": _TEMPLATE,
                        "workerTemplate": _TEMPLATE,
                        "subGroupPolicy": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "subGroupSize": {"type": "integer", "minimum": 1},
                                "subGroupPolicyType": {"enum": ["LeaderWorker", "LeaderExcluded"]},
                            },
                        },
                    },
                },
            },
        },
    },
}
