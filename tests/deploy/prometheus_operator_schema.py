"""The Prometheus Operator's PodMonitor and PrometheusRule (monitoring.coreos.com/v1) openAPIV3Schemas, the part
these manifests use, for jsonschema.

Written from the published CRDs (prometheus-operator/prometheus-operator, example/prometheus-operator-crd/
monitoring.coreos.com_podmonitors.yaml and monitoring.coreos.com_prometheusrules.yaml, v0.7x line): field names,
types, enums, the Duration pattern and required fields. A faithful subset, as tests/deploy/lws_schema.py is for
the LeaderWorkerSet (kubernetes-validate ships no schema for custom resources and warns only): unknown fields are
refused, so that a misspelt field fails here rather than being pruned by the API server.
"""

from __future__ import annotations

# monitoring.coreos.com/v1 Duration, the CRDs' own pattern:
DURATION = {
    "type": "string",
    "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
}
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_METADATA = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "minLength": 1}}}
_LABEL_SELECTOR = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "matchLabels": _STRING_MAP,
        "matchExpressions": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["key", "operator"],
                "properties": {
                    "key": {"type": "string"},
                    "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}

POD_MONITOR_V1: dict = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "PodMonitor"},
        "metadata": _METADATA,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["selector"],
            "properties": {
                "selector": _LABEL_SELECTOR,
                "namespaceSelector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "any": {"type": "boolean"},
                        "matchNames": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "jobLabel": {"type": "string"},
                "podTargetLabels": {"type": "array", "items": {"type": "string"}},
                "podMetricsEndpoints": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "scheme": {"enum": ["http", "https", "HTTP", "HTTPS"]},
                            "interval": DURATION,
                            "scrapeTimeout": DURATION,
                            "honorLabels": {"type": "boolean"},
                        },
                    },
                },
            },
        },
    },
}

_RULE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["expr"],
    "properties": {
        "record": {"type": "string"},
        "alert": {"type": "string"},
        "expr": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "for": DURATION,
        "keep_firing_for": DURATION,
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
    },
    "oneOf": [{"required": ["record"]}, {"required": ["alert"]}],
}

PROMETHEUS_RULE_V1: dict = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "PrometheusRule"},
        "metadata": _METADATA,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "groups": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "interval": DURATION,
                            "limit": {"type": "integer"},
                            "partial_response_strategy": {"type": "string"},
                            "rules": {"type": "array", "items": _RULE},
                        },
                    },
                }
            },
        },
    },
}

SCHEMAS = {"PodMonitor": POD_MONITOR_V1, "PrometheusRule": PROMETHEUS_RULE_V1}
