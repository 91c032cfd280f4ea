package server

// The paths, responses and headers of the OpenAPI document (openapi.go).

import (
	"maps"
	"net/http"
	"strings"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
)

func stringsAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// codesOf lists, in errorCodes order, the gateway codes answered with HTTP
// status.
func codesOf(status int) string {
	var out []string
	for _, d := range errorCodes {
		if codes.Status(d.name) == status {
			out = append(out, d.name)
		}
	}
	return strings.Join(out, ", ")
}

// header names a response header component.
func header(name string) map[string]any {
	return map[string]any{"$ref": "#/components/headers/" + name}
}

// answerResponse is a 2xx response with an Answer.
func answerResponse(desc string, headers map[string]any) map[string]any {
	r := map[string]any{
		"description": desc,
		"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": refAnswer}}},
	}
	if len(headers) > 0 {
		r["headers"] = headers
	}
	return r
}

// problemResponse is an error response with a Problem.
func problemResponse(desc string, headers map[string]any) map[string]any {
	r := answerResponse(desc, headers)
	r["content"] = map[string]any{"application/problem+json": map[string]any{"schema": map[string]any{"$ref": refProblem}}}
	return r
}

// jsonResponse is a 2xx response with a schema of its own.
func jsonResponse(desc string, schema map[string]any) map[string]any {
	return map[string]any{
		"description": desc,
		"content":     map[string]any{"application/json": map[string]any{"schema": schema}},
	}
}

// openAPIPaths are the endpoints (docs/api.md, Endpoints), their examples in
// contour.
func openAPIPaths(contour, keyRules string) map[string]any {
	exampleKey := contour + ":invoice.create:order-48291:v1"
	r := sharedResponses()
	paths := map[string]any{
		"/v1/operations":       map[string]any{"post": openAPICreate(exampleKey, keyRules, r)},
		"/v1/operations/{key}": map[string]any{"get": openAPIGet(exampleKey, r)},
	}
	maps.Copy(paths, openAPIMeta(r))
	return paths
}

// openAPIResponses are the headers and responses several endpoints share.
type openAPIResponses struct {
	replayed, retry                        map[string]any // headers
	unauthenticated, rateLimited, internal map[string]any
}

// sharedResponses builds the shared headers and responses.
func sharedResponses() openAPIResponses {
	retry := map[string]any{"Retry-After": header("RetryAfter")}
	return openAPIResponses{
		replayed:        map[string]any{"Idempotent-Replayed": header("IdempotentReplayed")},
		retry:           retry,
		unauthenticated: problemResponse("No, unknown or revoked bearer token ("+codes.Unauthenticated+").", nil),
		rateLimited:     problemResponse("state rejected: too many requests for this token ("+codes.RateLimited+"); nothing bound. Send again after Retry-After.", retry),
		internal:        problemResponse("Internal error ("+codes.Internal+"); no internal detail is given. The same request may be sent again with the same key.", nil),
	}
}

// openAPICreate is POST /v1/operations.
func openAPICreate(exampleKey, keyRules string, r openAPIResponses) map[string]any {
	replayed, retry := r.replayed, r.retry
	return map[string]any{
		"operationId": "createOperation",
		"tags":        []any{"operations"},
		"summary":     "Submit an intent",
		"description": "Runs (mode execute, the default) or checks (mode validate) one intent of the whitelist. The request is checked against the contract — envelope, intent, scope, key, payload — before anything is journaled, so a refusal binds nothing.\n\nThe payload schemas describe the payload after the gateway's normalization: surrounding whitespace is trimmed, currency codes are upper-cased (rub is accepted as RUB), and optional members that are null or empty are dropped before validation. A request valid against these schemas is valid on the wire.",
		"parameters": []any{map[string]any{
			"name":        "Idempotency-Key",
			"in":          "header",
			"required":    false,
			"description": keyRules,
			"schema": map[string]any{
				"type":      "string",
				"maxLength": contract.MaxKeyLen + 2,
				"pattern":   headerKeyPattern(),
			},
			"example": exampleKey,
		}},
		"requestBody": map[string]any{
			"required": true,
			"content": map[string]any{"application/json": map[string]any{
				"schema": schemaRef("OperationRequest"),
				"examples": map[string]any{"invoice.create": map[string]any{
					"summary": "Create an invoice (docs/api.md, A request)",
					"value": map[string]any{
						"schema_version": "1.0", "intent": "invoice.create",
						"request_id": exampleKey, "actor_id": "user-42", "mode": "execute",
						"payload": map[string]any{
							"order_id": "order-48291", "organization_id": "org-main", "customer_id": "customer-1042", "currency": "RUB",
							"items": []any{map[string]any{"product_id": "product-778", "quantity": 2, "unit": "pcs", "price_minor": 62500}},
						},
					},
				}},
			}},
		},
		"responses": map[string]any{
			"200": answerResponse("state succeeded: executed and confirmed by the target, or (with Idempotent-Replayed: true) the stored answer of the same request; state valid in validate mode; the result of a read-only intent. A success whose target did not keep a value as sent carries "+codes.TargetChangedValue+" in warnings, naming the field.", replayed),
			"202": answerResponse("state awaiting_approval ("+codes.ApprovalRequired+": a money intent waits for a person; "+codes.DuplicateReviewRequired+": another key about the same business event, the intent's duplicate rule holds it for a person) or unknown ("+codes.OutcomeUnknown+": reconciliation pending); a process still running, undoing its steps (compensating), or waiting for a person to finish undoing one ("+codes.ProcessNeedsReview+", state needs_review). Send the same request again after Retry-After.", retry),
			"400": problemResponse("state rejected, nothing bound: "+codesOf(http.StatusBadRequest)+".", nil),
			"401": r.unauthenticated,
			"403": problemResponse("state rejected: the token lacks the intent's scope ("+codes.PermissionDenied+").", nil),
			"409": problemResponse("The key is used by another agent identity ("+codes.KeyForeign+", rejected); another attempt holds a live lease ("+codes.KeyInUse+", state started, with Retry-After); the plan changed since validate ("+codes.PlanChanged+", rejected, nothing ran); the intent's definition changed or is gone since the key was first accepted ("+codes.IntentChanged+", rejected, nothing ran); or another key about the same business event as a live operation under a duplicate rule that blocks ("+codes.DuplicateSuspected+", rejected, nothing journaled, the key stays free).", retry),
			"413": problemResponse("state rejected: the body is larger than 64 KiB ("+codes.PayloadTooLarge+").", nil),
			"415": problemResponse("state rejected: the body is not application/json ("+codes.UnsupportedMedia+").", nil),
			"422": problemResponse("The same key with a different request ("+codes.KeyMismatch+", rejected); a business limit of this gateway's configuration ("+codes.LimitExceeded+", "+codes.CurrencyNotAllowed+", "+codes.UnitNotAllowed+", rejected, field named, nothing journaled); the target refused on business grounds (failed_final, or rejected in validate mode, with the target's code, e.g. REFERENCE_NOT_FOUND or INSUFFICIENT_FUNDS); approval denied or expired ("+codes.ApprovalDenied+" / "+codes.ApprovalExpired+", failed_final); a suspected duplicate a person confirmed ("+codes.DuplicateConfirmed+", failed_final); a process whose step failed for good and whose completed steps were undone (the step's code, then "+codes.ProcessCompensated+", state compensated). A replayed failed_final carries Idempotent-Replayed: true.", replayed),
			"429": r.rateLimited,
			"500": r.internal,
			"503": problemResponse("state failed_retryable (or rejected in validate mode): the target is unavailable and retries are spent ("+codes.TargetUnavailable+"); or state rejected: the journal could not be read or written, this request sent nothing ("+codes.JournalUnavailable+"), or the gateway holds as many connections as it is configured to, the request was not read ("+codes.GatewayBusy+"). Send the same request again after Retry-After.", retry),
		},
	}
}

// openAPIGet is GET /v1/operations/{key}.
func openAPIGet(exampleKey string, r openAPIResponses) map[string]any {
	return map[string]any{
		"operationId": "getOperation",
		"tags":        []any{"operations"},
		"summary":     "Current state of an operation",
		"description": "The same Answer as POST's, with HTTP 200 whatever the operation's state; keys are per agent identity.",
		"parameters": []any{map[string]any{
			"name":        "key",
			"in":          "path",
			"required":    true,
			"description": "The operation key (percent-encoding allowed).",
			"schema":      map[string]any{"type": "string", "minLength": contract.MinKeyLen, "maxLength": contract.MaxKeyLen, "pattern": keyPattern("")},
			"example":     exampleKey,
		}, map[string]any{
			"name":        "wait",
			"in":          "query",
			"required":    false,
			"description": "Hold the answer until the operation's state changes to one other than started, or this long passes (a duration such as 30s, or whole seconds; at most 60s, longer is held 60s). A final operation is answered at once. Without it, the answer is at once.",
			"schema":      map[string]any{"type": "string", "pattern": `^([0-9]+|[0-9]+(\.[0-9]+)?(ms|s|m))$`},
			"example":     "30s",
		}},
		"responses": map[string]any{
			"200": answerResponse("The operation's current state (with wait: after it changed, or as it still is when the wait ran out). Retry-After is set while it is not settled (started, awaiting_approval, unknown, failed_retryable).", r.retry),
			"400": problemResponse("wait is no duration ("+codes.Validation+", field wait).", nil),
			"401": r.unauthenticated,
			"404": problemResponse("No operation with this key for this agent ("+codes.OperationNotFound+").", nil),
			"429": r.rateLimited,
			"500": r.internal,
		},
	}
}

// openAPIMeta are the endpoints besides the operations: the whitelist,
// this document, liveness and readiness.
func openAPIMeta(r openAPIResponses) map[string]any {
	public := []any{}
	return map[string]any{
		"/v1/events/{source}": map[string]any{"post": map[string]any{
			"operationId": "receiveNotice",
			"tags":        []any{"events"},
			"summary":     "A source's notice (YooKassa's notifications, Bitrix24's outbound events)",
			"description": "Not for agents: the URL a source's settings name (docs/events.md). The body is the source's own (JSON for YooKassa, form-encoded for Bitrix24, carrying the portal's application token). Answered 200 once the notice is in the journal; it is then read back from the source and, when the source holds it as the notice says, runs its rule's operation once however often it is delivered.",
			"security":    public,
			"parameters":  []any{map[string]any{"name": "source", "in": "path", "required": true, "schema": map[string]any{"type": "string"}, "description": "the source's target instance name"}},
			"requestBody": map[string]any{"required": true, "content": map[string]any{
				"application/json":                  map[string]any{"schema": map[string]any{"type": "object"}},
				"application/x-www-form-urlencoded": map[string]any{"schema": map[string]any{"type": "object"}},
			}},
			"responses": map[string]any{
				"200": jsonResponse("The notice is journaled, one row per rule it is for.", map[string]any{"type": "object", "required": []any{"received", "events"},
					"properties": map[string]any{
						"received": map[string]any{"type": "boolean", "const": true},
						"events": map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []any{"id", "run", "operation_key", "state"},
							"properties": map[string]any{
								"id": map[string]any{"type": "integer"}, "run": map[string]any{"type": "string"},
								"operation_key": map[string]any{"type": "string"},
								"state":         map[string]any{"type": "string", "enum": []any{"pending", "run", "dropped", "failed"}},
							}}},
					}}),
				"400": problemResponse("EVENT_MALFORMED: not a notice as this source sends it.", nil),
				"401": problemResponse("UNAUTHENTICATED: a Bitrix24 notice without the portal's application token.", nil),
				"403": problemResponse("EVENT_SENDER_REFUSED: from an address outside notices_from.", nil),
				"404": problemResponse("EVENT_SOURCE_UNKNOWN: no source of this gateway is named so.", nil),
				"413": problemResponse("PAYLOAD_TOO_LARGE: over 64 KiB.", nil),
				"422": problemResponse("EVENT_UNKNOWN: no rule runs on this event.", nil),
				"503": problemResponse("JOURNAL_UNAVAILABLE: the notice could not be journaled; the source sends it again.", nil),
			},
		}},
		"/v1/intents": map[string]any{"get": map[string]any{
			"operationId": "listIntents",
			"tags":        []any{"intents"},
			"summary":     "The whitelist of intents",
			"description": "Each intent's name, target, scope, money flag, whether it needs a key, and the JSON Schema of its payload.",
			"responses": map[string]any{
				"200": jsonResponse("The whitelist.", schemaRef("IntentList")),
				"401": r.unauthenticated,
				"429": r.rateLimited,
				"500": r.internal,
			},
		}},
		"/v1/openapi.json": map[string]any{"get": map[string]any{
			"operationId": "getOpenAPI",
			"tags":        []any{"meta"},
			"summary":     "This document",
			"security":    public,
			"responses": map[string]any{
				"200": jsonResponse("The OpenAPI 3.1 document of the agent API.", map[string]any{"type": "object"}),
			},
		}},
		"/healthz": map[string]any{"get": map[string]any{
			"operationId": "getHealth",
			"tags":        []any{"meta"},
			"summary":     "Liveness",
			"security":    public,
			"responses": map[string]any{
				"200": jsonResponse("The process is alive: {\"status\": \"ok\"}.", schemaRef("Health")),
			},
		}},
		"/readyz": map[string]any{"get": map[string]any{
			"operationId": "getReadiness",
			"tags":        []any{"meta"},
			"summary":     "Readiness",
			"security":    public,
			"responses": map[string]any{
				"200": jsonResponse("The journal is writable and migrated: {\"status\": \"ready\"}.", schemaRef("Health")),
				"503": jsonResponse("Not ready: {\"status\": \"not ready\", \"reason\": …}.", schemaRef("Health")),
			},
		}},
	}
}
