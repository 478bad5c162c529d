"""OTLP for spans built by ``otel.py``: the OTLP/JSON file (``--otel-json``) and one export to a backend
with the official exporters (``--otlp-endpoint``), every failure one message. Span building is
``otel.py``; this module only encodes and sends."""

from __future__ import annotations

import base64
import importlib
import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from portagent.contracts.errors import ProviderError, UsageError
from portagent.tracing.otel import missing_extra


def _encoder() -> Any:
    try:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    except ImportError as e:
        raise missing_extra("opentelemetry-exporter-otlp-proto-http", "otel") from e
    return encode_spans


def otlp_json(spans: Sequence[Any]) -> dict[str, Any]:
    """OTLP/JSON of SDK spans: the official protobuf encoding in the OTLP/JSON mapping (hex ids, int enums)."""
    json_format: Any = importlib.import_module("google.protobuf.json_format")  # untyped library
    data: dict[str, Any] = json_format.MessageToDict(_encoder()(spans), use_integers_for_enums=True)

    def hexify(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str):
                    node[k] = base64.b64decode(v).hex()
                else:
                    hexify(v)
        elif isinstance(node, list):
            for x in node:
                hexify(x)

    hexify(data)
    return data


def write_otlp_json(spans: Sequence[Any], path: str | Path) -> None:
    """Write OTLP/JSON to ``path`` whole or not at all (a temporary file moved into place)."""
    from portagent.core.files import write_text_atomic

    write_text_atomic(Path(path), json.dumps(otlp_json(spans), ensure_ascii=False, indent=2) + "\n")


def traces_url(endpoint: str, protocol: str = "http/protobuf") -> str:
    """The URL the exporter posts to: ``/v1/traces`` appended to an OTLP/HTTP base URL when missing."""
    from urllib.parse import urlsplit

    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(f"--otlp-endpoint {endpoint!r}: expected an http:// or https:// URL")
    if protocol == "grpc":
        return endpoint
    from urllib.parse import urlunsplit

    # the path gets /v1/traces, not the end of the URL: a query (``?tenant=acme``) stays a query
    path = parts.path.rstrip("/")
    path = path if path.endswith("/v1/traces") else path + "/v1/traces"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))


@contextmanager
def _quiet(logger_names: Sequence[str]) -> Iterator[list[str]]:
    """Collect the exporter's log lines instead of printing them (the CLI prints one message of its own)."""
    lines: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = _Collect(logging.WARNING)
    saved = []
    for name in logger_names:
        lg = logging.getLogger(name)
        saved.append((lg, lg.propagate, list(lg.handlers)))
        lg.handlers = [handler]
        lg.propagate = False
    try:
        yield lines
    finally:
        for lg, propagate, handlers in saved:
            lg.handlers = handlers
            lg.propagate = propagate


def send_otlp(
    spans: Sequence[Any],
    endpoint: str,
    *,
    protocol: str = "http/protobuf",
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
) -> None:
    """Send the spans once with the official OTLP exporter; any failure is one ProviderError (exit 3)."""
    url = traces_url(endpoint, protocol)
    if protocol == "grpc":
        try:  # optional (portagent[otel-grpc]); untyped here since it may be absent
            grpc_mod: Any = importlib.import_module("opentelemetry.exporter.otlp.proto.grpc.trace_exporter")
        except ImportError as e:
            raise missing_extra(
                "opentelemetry-exporter-otlp-proto-grpc", "otel-grpc", "--otlp-protocol grpc"
            ) from e
        exporter: Any = grpc_mod.OTLPSpanExporter(
            endpoint=url, headers=tuple((headers or {}).items()) or None, timeout=timeout
        )
        seen: dict[str, Any] = {}
        loggers = ["opentelemetry.exporter.otlp.proto.grpc.exporter"]
    else:
        import requests
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        seen = {}

        class _Session(requests.Session):
            """Keeps the last response or error, to say exactly what the endpoint answered."""

            def post(self, *args: Any, **kwargs: Any) -> requests.Response:
                try:
                    resp = super().post(*args, **kwargs)
                except requests.RequestException as e:
                    seen["error"] = e
                    raise
                seen["response"] = resp
                return resp

        exporter = OTLPSpanExporter(
            endpoint=url, headers=headers or None, timeout=timeout, session=_Session()
        )
        loggers = ["opentelemetry.exporter.otlp.proto.http.trace_exporter"]
    from opentelemetry.sdk.trace.export import SpanExportResult

    with _quiet(loggers) as logged:
        try:
            result = exporter.export(list(spans))
        except Exception as e:  # the exporters catch their own errors; anything else is still one message
            result, seen["error"] = SpanExportResult.FAILURE, e
        finally:
            exporter.shutdown()
    if result == SpanExportResult.SUCCESS:
        return
    resp = seen.get("response")
    if resp is not None and not resp.ok:
        body = (resp.text or "").strip().replace("\n", " ")[:200]
        hint = ""
        if resp.status_code in (401, 403):
            hint = " (does the backend need a key? pass it with --otlp-header NAME=VALUE)"
        elif resp.status_code == 415:
            hint = " (the endpoint does not take OTLP protobuf over HTTP; is it the OTLP/HTTP traces URL?)"
        elif resp.status_code == 404:
            hint = " (is this the OTLP/HTTP traces endpoint, usually …:4318/v1/traces?)"
        detail = (
            f"HTTP {resp.status_code} {resp.reason or ''}".rstrip() + (f": {body}" if body else "") + hint
        )
        raise ProviderError(
            _masked(f"cannot export to OTLP endpoint {url}: {detail}", headers), status=resp.status_code
        )
    err = seen.get("error")
    if err is not None:
        reason = _short_error(err)
    else:
        reason = logged[-1] if logged else "the exporter reported a failure"
    raise ProviderError(_masked(f"cannot export to OTLP endpoint {url}: {reason}", headers))


def _masked(message: str, headers: dict[str, str] | None) -> str:
    """The failure message with the credentials it may carry masked: the endpoint's userinfo or key in
    its query, and the ``--otlp-header`` values (a backend may echo the key it refused in its answer)."""
    from portagent.core.secrets import mask_text

    values = [part for v in (headers or {}).values() for part in (v, v.split()[-1] if v.split() else v)]
    return mask_text(message, extra=[v for v in values if len(v) >= 8])


def _short_error(err: BaseException) -> str:
    text = str(err)
    for marker in ("Connection refused", "Name or service not known", "timed out", "Max retries exceeded"):
        if marker in text:
            return "connection refused" if marker == "Connection refused" else marker.lower()
    return f"{type(err).__name__}: {text[:200]}"
