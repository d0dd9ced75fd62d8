"""The runtime's outbound HTTP (CONTRACT.md §9's fenced client, §8's policy client) and its log
lines, §11's retry line among them. Loopback only: no proxy, no redirects (§2-5)."""

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

HTTP_TIMEOUT_S = 10.0  # a provider answer later than this is an UNKNOWN outcome
EXIT_FENCED = 3

INCARNATION = None  # set by serve(): the fencing token every request carries (§9)


def log(message):
    # stdout carries the ready line; everything else goes to stderr, which the harness keeps
    # and shows in failure reports.
    print(f"[killpoint_shell {os.getpid()}] {message}", file=sys.stderr, flush=True)


def log_retry(retry, operation_id, attempt, reason, destination=None):
    """§11's retry line, labelled by the caller that knows which kind of request it repeats:
    `"execution"` for a new provider attempt, `"delivery"` for a resend to one consumer."""
    if retry not in ("execution", "delivery") or (destination is None) != (retry == "execution"):
        raise ValueError(f"expected an execution retry without a destination or a delivery retry "
                         f"with one, found {retry!r} with destination {destination!r}")
    line = {"log": "retry", "retry": retry, "operation_id": operation_id}
    if destination is not None:
        line["destination"] = destination
    line.update(attempt=int(attempt), reason=reason)
    print(json.dumps(line, separators=(",", ":")), file=sys.stderr, flush=True)


def fenced(why):
    """A newer incarnation owns the data dir (§9): not another request, not another commit. The
    open transaction, if any, dies uncommitted with the process."""
    log(f"fenced: {why}; exiting")
    os._exit(EXIT_FENCED)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a redirect could lead off loopback: it is a plain answer


# No ProxyHandler settings: urllib would otherwise honour http_proxy from the environment and
# send the traffic to another address, which the contract forbids.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)


def http(method, url, body=None, key=None):
    """Returns (status, parsed JSON body, or the text when it is not JSON). Raises when no complete
    answer was read (refused, dropped, timed out, truncated). Exits at a `409 fenced`."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if key is not None:
        request.add_header("Idempotency-Key", key)
    request.add_header("Killpoint-Incarnation", str(INCARNATION))
    try:
        with _OPENER.open(request, timeout=HTTP_TIMEOUT_S) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:  # a complete non-2xx answer
        status, raw = error.code, error.read()
    try:
        answer = json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")
    if status == 409 and isinstance(answer, dict) and answer.get("error") == "fenced":
        fenced(f"{url} answered 409 fenced")
    return status, answer


def check_policy(policy_url, op, **subject):
    """True if allowed, the reason if refused, None if the service could not be asked (then
    nothing may go ahead, §8). `subject` is `tool=` or `destination=`."""
    body = {"tenant": op["tenant"], "actor": op["actor"], "operation_id": op["id"], **subject}
    try:
        status, answer = http("POST", f"{policy_url}/check", body)
    except Exception as error:
        log(f"policy unreachable for {op['id']}: {error!r}")
        return None
    if status != 200 or not isinstance(answer, dict) or not isinstance(answer.get("allowed"), bool):
        log(f"policy answered {status} {answer!r} for {op['id']}")
        return None
    return True if answer["allowed"] else str(answer.get("reason") or "refused")


def quote(segment):
    return urllib.parse.quote(segment, safe="")


def valid_effect(body):
    """A provider's success (or a lookup's find) as the contract shapes it."""
    return isinstance(body, dict) and isinstance(body.get("provider_ref"), str) and "result" in body
