"""HTTP errors in each vendor's real error shape (so each official client raises its own class).

- OpenAI ("Error codes" guide): ``{"error": {"message", "type", "param", "code"}}``; 429 is
  ``type: requests`` / ``code: rate_limit_exceeded``; 5xx are ``type: server_error``.
- Anthropic ("Errors"): ``{"type": "error", "error": {"type", "message"}, "request_id"}`` with
  ``invalid_request_error`` 400, ``not_found_error`` 404, ``rate_limit_error`` 429, ``api_error``
  500, ``overloaded_error`` 529.
- Gemini ("Troubleshooting → error codes", google.rpc.Status): ``{"error": {"code", "message",
  "status"}}`` with ``INVALID_ARGUMENT``, ``NOT_FOUND``, ``RESOURCE_EXHAUSTED`` (+ a ``RetryInfo``
  detail), ``INTERNAL``, ``UNAVAILABLE``. On the JSON-array stream endpoint the error body is itself
  wrapped in a one-element array.

``retry-after`` is sent (OpenAI, Anthropic) in seconds; a fractional value such as ``0.05`` is not
RFC 9110 but both official SDKs parse it, which keeps retry tests fast.
"""

from __future__ import annotations

from typing import Any

from portagent.emulator.plan import ErrorReply

_STATUS = {
    "bad_request": 400,
    "not_found": 404,
    "rate_limit": 429,
    "server_error": 500,
    "unavailable": 503,
    "overloaded": 503,
}

_OPENAI = {
    "bad_request": ("invalid_request_error", None, "Invalid request."),
    "not_found": ("invalid_request_error", None, "Invalid URL."),
    "rate_limit": (
        "requests",
        "rate_limit_exceeded",
        "Rate limit reached for requests (portagent emulator). Please try again later.",
    ),
    "server_error": (
        "server_error",
        None,
        "The server had an error while processing your request. Sorry about that!",
    ),
    "unavailable": ("server_error", None, "The server is overloaded or not ready yet."),
    "overloaded": ("server_error", None, "The engine is currently overloaded, please try again later."),
}

_ANTHROPIC = {
    "bad_request": ("invalid_request_error", "Invalid request."),
    "not_found": ("not_found_error", "Not found."),
    "rate_limit": (
        "rate_limit_error",
        "Number of requests has exceeded your rate limit (portagent emulator).",
    ),
    "server_error": ("api_error", "Internal server error"),
    "unavailable": ("api_error", "Service unavailable"),
    "overloaded": ("overloaded_error", "Overloaded"),
}

_GEMINI = {
    "bad_request": ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    "not_found": ("NOT_FOUND", "Requested entity was not found."),
    "rate_limit": ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    "server_error": (
        "INTERNAL",
        "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting",
    ),
    "unavailable": ("UNAVAILABLE", "The service is currently unavailable."),
    "overloaded": ("UNAVAILABLE", "The model is overloaded. Please try again later."),
}


def vendor_of_path(path: str) -> str:
    """``openai`` | ``anthropic`` | ``gemini`` — which error shape a path gets."""
    if (
        path.startswith(("/v1beta/", "/v1alpha/"))
        or ":generateContent" in path
        or ":streamGenerateContent" in path
    ):
        return "gemini"
    if path.startswith("/v1/messages"):
        return "anthropic"
    return "openai"


def _retry_value(seconds: float) -> str:
    return str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"


def render_error(
    vendor: str, err: ErrorReply, *, request_id: str, json_array: bool = False
) -> tuple[int, dict[str, str], Any]:
    """Status, extra headers and body for an error in ``vendor``'s shape."""
    status = _STATUS[err.kind]
    headers: dict[str, str] = {}
    if vendor == "anthropic":
        if err.kind == "overloaded":
            status = 529
        kind, default = _ANTHROPIC[err.kind]
        body: Any = {
            "type": "error",
            "error": {"type": kind, "message": err.message or default},
            "request_id": request_id,
        }
        headers["request-id"] = request_id
    elif vendor == "gemini":
        code_name, default = _GEMINI[err.kind]
        error: dict[str, Any] = {"code": status, "message": err.message or default, "status": code_name}
        if err.retry_after_s is not None:
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": f"{_retry_value(err.retry_after_s)}s",
                }
            ]
        body = [{"error": error}] if json_array else {"error": error}
    else:
        kind, code, default = _OPENAI[err.kind]
        body = {"error": {"message": err.message or default, "type": kind, "param": None, "code": code}}
        headers["x-request-id"] = request_id
    if err.retry_after_s is not None and vendor != "gemini":
        headers["retry-after"] = _retry_value(err.retry_after_s)
    return status, headers, body
