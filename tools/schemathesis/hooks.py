"""Refusals the api documents that no OpenAPI schema can express, for test/schemathesis.test.ts.

Each hook drops a "schema-valid request rejected" failure (ST202) only when every problem of the api's
422 is one of these, so any other refusal of the same request still fails the run:

- page_id: an opaque cursor. Only the next_page_id of a previous page is one; a string the api never
  issued is refused (the document's description says so). Cursors the api issues are accepted, which the
  stateful phase exercises.
- U+0000 in a string: the store cannot keep it (FerretDB on PostgreSQL: jsonb has no NUL), so a body or
  query holding it is refused whole, with type string_nul (docs/api.md, the document's description).
  Dropped only when the request really holds U+0000.
- sandbox_spec_id: which specs exist is this installation's (GET /api/v1/sandbox-specs/search lists
  them), not the document's; an unknown one is refused naming that route.
- a path parameter "None" in the stateful phase: schemathesis infers links, and fills a path from an answer's
  field that is null there (a start task's app_conversation_id before READY, as the document says) by
  writing Python's None; no client of the document would send that.
- an issue tracker B processor's base_api_url: which servers a processor may post to is this
  installation's (ISSUE_TRACKER_B_ORIGINS), not the document's; any other is refused saying so.
"""

import json

import schemathesis


def _holds_nul(value) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_holds_nul(v) for v in value)
    return False


def _stateful(case) -> bool:
    phase = getattr(getattr(case, "meta", None), "phase", None)
    return "stateful" in str(getattr(phase, "name", "")).lower()


def _documented(problem: dict, case) -> bool:
    loc = problem.get("loc") or []
    if loc == ["query", "page_id"] and str(problem.get("msg", "")).startswith("Invalid page_id"):
        return True
    if problem.get("type") == "string_nul":
        return any(_holds_nul(p) for p in (case.body, case.query, case.path_parameters))
    if len(loc) == 2 and loc[0] == "path" and problem.get("input") == "None" and _stateful(case):
        return True
    if loc[-1:] == ["base_api_url"] and "ISSUE_TRACKER_B_ORIGINS" in str(problem.get("msg", "")):
        return True
    ctx = problem.get("ctx") or {}
    return loc[-1:] == ["sandbox_spec_id"] and ctx.get("error") == "unknown sandbox spec"


@schemathesis.hook
def filter_failure(context, failure, case, response) -> bool:
    if getattr(failure, "code", None) != "ST202" or response.status_code != 422:
        return True
    try:
        detail = json.loads(response.content).get("detail")
    except (ValueError, AttributeError):
        return True
    if not isinstance(detail, list) or not detail:
        return True
    return not all(isinstance(p, dict) and _documented(p, case) for p in detail)
