package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
)

// OpenAPI returns the OpenAPI 3.1 document of the agent API (docs/api.md) of a
// gateway serving catalog in contour, as served by GET /v1/openapi.json.
// It is generated from the loaded intents, their effective limits and the
// server's error codes, so the published contract cannot drift from what
// is enforced; its examples are keys of contour, so they can be sent as
// they are. The bytes are the same on every call.
func OpenAPI(catalog *intent.Catalog, contour string) ([]byte, error) {
	return buildOpenAPI(catalog, contour)
}

// openAPIDoc is the server's document, built once; the slice is shared.
func (s *Server) openAPIDoc() ([]byte, error) {
	s.openapi.once.Do(func() { s.openapi.doc, s.openapi.err = buildOpenAPI(s.catalog, s.cfg.Contour) })
	return s.openapi.doc, s.openapi.err
}

// openAPICache is the server's OpenAPI document, built at its first request.
type openAPICache struct {
	once sync.Once
	doc  []byte
	err  error
}

// handleOpenAPI serves GET /v1/openapi.json: the OpenAPI 3.1 document of
// the agent API. It needs no token.
func (s *Server) handleOpenAPI(c echo.Context) error {
	doc, err := s.openAPIDoc()
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, doc)
}

// openAPIDescription summarizes docs/api.md: the intents, the request, the
// key and the answer.
const openAPIDescription = `oncegate stands between AI agents and business systems (1C, the CRM, the payment provider). Agents send declarative **intents** from a closed, versioned whitelist — never method names, queries or scripts. Each intent's payload is described here by a JSON Schema (draft 2020-12, ` + "`additionalProperties: false`" + `) generated from the same registry the gateway validates with; ` + "`GET /v1/intents`" + ` serves the same schemas.

Every mutating intent carries an **operation key** (` + "`<contour>:<operation>:<intent-id>:v<digits>`" + `, e.g. ` + "`prod:invoice.create:order-48291:v1`" + `), made once by the orchestrator and re-sent unchanged on every retry, in the ` + "`Idempotency-Key`" + ` header or as ` + "`request_id`" + `. The key is bound forever to the **fingerprint** of the request's business meaning (SHA-256 of the RFC 8785 canonical payload plus the intent name; transport fields such as request_id, actor_id and mode are not part of it). The **journal** records every operation, so the same key with the same request never acts twice: a retry gets the stored answer with ` + "`Idempotent-Replayed: true`" + `, while the same key with a different request is refused. ` + "`mode: \"validate\"`" + ` runs every check, returns the normalized plan and its ` + "`plan_hash`" + `, and writes and journals nothing.

Unknown fields anywhere are refused with ` + "`UNKNOWN_FIELD`" + ` and the field path; so is a control character (NUL, a line break, an escape) inside any string, with ` + "`VALIDATION_ERROR`" + `; bodies are at most 64 KiB of ` + "`application/json`" + ` in UTF-8, sent with one ` + "`Content-Type`" + `. A request refused before execution (400, 401, 403, 413, 415, 429) binds nothing: its key stays free.

Every answer to POST and GET is one JSON object carrying the operation's ` + "`state`" + ` (valid, rejected, awaiting_approval, started, succeeded, failed_retryable, failed_final, unknown) and ` + "`errors`" + ` of ` + "`{code, field, message, retryable}`" + `. Answers 200 and 202 (` + "`Answer`" + `) carry the state again as ` + "`status`" + `. Error answers (4xx, 5xx) use ` + "`application/problem+json`" + ` (` + "`Problem`" + `) and add RFC 9457's type, title and detail, with ` + "`status`" + ` the HTTP status code as a number, as RFC 9457 requires: read the state from ` + "`state`" + `. Messages are safe for a model to read. Money intents wait for a person's approval (202 ` + "`APPROVAL_REQUIRED`" + `); an outcome that is not yet known is reconciled by key (202 ` + "`OUTCOME_UNKNOWN`" + `): in both cases send the same request again after ` + "`Retry-After`" + ` seconds.`

// keyRulesDescription is the key rules (docs/api.md, Operation keys).
const keyRulesDescription = `The operation key: made once per business intent by the orchestrator and re-sent unchanged on every retry. One header line, the key bare or as an RFC 8941 quoted string ("prod:…") without parameters; two lines, or two keys on one line, are refused. request_id in the body is an alternative carrier; when both are present they must be equal. A mutating intent in execute mode without a key is refused (400 IDEMPOTENCY_KEY_MISSING); read-only intents need none.

Rules (400 IDEMPOTENCY_KEY_INVALID otherwise): 8–255 characters of A-Z a-z 0-9 . _ : -; at least four ':'-separated non-empty segments; the first is the contour and must equal the gateway's configured contour (prod, test, …); the last is v<digits>; the segments between the contour and the last two, joined with '.', equal the intent name (prod:crm.callback:create:event-90173:v1 → crm.callback.create). A key holding a card number (13–19 digits passing the Luhn check, written as one run or in a card's usual groups such as 4111-1111-1111-1111; separate numbers such as o-1796370520-1000000 are not one) or anything shaped like a secret is refused: keys are stored and logged in clear and must never carry secrets.`

// Reusable references.
const (
	refAnswer  = "#/components/schemas/Answer"
	refProblem = "#/components/schemas/Problem"
)

// hex64 is the pattern of a SHA-256 as the gateway writes it.
const hex64 = "^[0-9a-f]{64}$"

// schemaRef refers to the component schema name.
func schemaRef(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// keyAlphabet is a key segment: the key alphabet without ':'.
const keyAlphabet = `[A-Za-z0-9._-]+`

// keyPattern is the structure of an operation key for intent ("" for any
// intent): contour, the intent's name with each '.' possibly a ':', an
// intent id, and the version. Length, contour and secrets are checked by
// the gateway only.
func keyPattern(intent string) string {
	op := keyAlphabet + `(:` + keyAlphabet + `)*`
	if intent != "" {
		op = strings.ReplaceAll(regexp.QuoteMeta(intent), `\.`, `[.:]`)
	}
	return `^` + keyAlphabet + `:` + op + `:` + keyAlphabet + `:v[0-9]+$`
}

// headerKeyPattern is keyPattern for any intent, bare or quoted.
func headerKeyPattern() string {
	bare := strings.TrimSuffix(strings.TrimPrefix(keyPattern(""), "^"), "$")
	return `^(` + bare + `|"` + bare + `")$`
}

// schemaName is the component name of an intent: "sales_order.create_draft"
// → "SalesOrderCreateDraft".
func schemaName(intent string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(intent, func(r rune) bool { return r == '.' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// buildOpenAPI generates the document.
func buildOpenAPI(catalog *intent.Catalog, contour string) ([]byte, error) {
	// Examples and prose name keys of this gateway's contour.
	inContour := func(text string) string { return strings.ReplaceAll(text, "prod:", contour+":") }
	intents := catalog.Offered()
	schemas := map[string]any{}
	var variants []any
	mapping := map[string]any{}
	var names, targets []string
	for _, def := range intents {
		payload, err := payloadSchema(def)
		if err != nil {
			return nil, err
		}
		effectiveLimits(payload, def.Limits)
		name := schemaName(def.Name)
		schemas[name+"Payload"] = payload
		schemas[name+"Request"] = envelopeSchema(def, name+"Payload", contour)
		variants = append(variants, schemaRef(name+"Request"))
		mapping[def.Name] = "#/components/schemas/" + name + "Request"
		names = append(names, def.Name)
		if !slices.Contains(targets, def.Target) && !def.IsProcess() {
			targets = append(targets, def.Target)
		}
	}
	schemas["OperationRequest"] = map[string]any{
		"description": "The body of POST /v1/operations: one envelope per intent, chosen by `intent`.",
		"oneOf":       variants,
		"discriminator": map[string]any{
			"propertyName": "intent",
			"mapping":      mapping,
		},
	}
	for k, v := range answerSchemas(names, targets) {
		schemas[k] = v
	}

	doc := map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"info": map[string]any{
			"title":       "oncegate agent API",
			"version":     "1.0",
			"description": inContour(openAPIDescription),
		},
		"servers":  []any{map[string]any{"url": "/"}},
		"security": []any{map[string]any{"bearer": []any{}}},
		"tags": []any{
			map[string]any{"name": "operations", "description": "Submit intents and read their state."},
			map[string]any{"name": "intents", "description": "The whitelist of intents."},
			map[string]any{"name": "meta", "description": "This document, liveness and readiness."},
		},
		"paths": openAPIPaths(contour, inContour(keyRulesDescription)),
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{
					"type":         "http",
					"scheme":       "bearer",
					"bearerFormat": "opaque agent token (og_…)",
					"description":  scopesDescription(intents),
				},
			},
			"headers": map[string]any{
				"IdempotentReplayed": map[string]any{
					"description": "Present, with the value true, when the answer is the stored answer of an earlier request with the same key and the same fingerprint; nothing was done again.",
					"schema":      map[string]any{"type": "string", "enum": []any{"true"}},
				},
				"RetryAfter": map[string]any{
					"description": "Seconds to wait before sending the same request again (same key, same body).",
					"schema":      map[string]any{"type": "integer", "minimum": 1},
				},
			},
		},
	}

	numberFormats(doc)

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return buf.Bytes(), nil
}

// payloadSchema is the registry's payload schema of in, without $schema and
// $id (the document's dialect is draft 2020-12, and an $id would move the
// base URI of everything inside). Numbers keep their literal form.
func payloadSchema(def *intent.Intent) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(def.Schema))
	dec.UseNumber()
	var s map[string]any
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("openapi: schema of %s: %w", def.Name, err)
	}
	delete(s, "$schema")
	delete(s, "$id")
	// A local reference or a nested resource would resolve against this
	// document instead of the intent's schema once embedded.
	if kw := nestedResource(s); kw != "" {
		return nil, fmt.Errorf("openapi: schema of %s uses %s, which cannot be embedded as is", def.Name, kw)
	}
	return s, nil
}

// nestedResource names the first $ref, $dynamicRef, $id or $anchor inside v,
// or "".
func nestedResource(v any) string {
	switch v := v.(type) {
	case map[string]any:
		for _, kw := range []string{"$ref", "$dynamicRef", "$id", "$anchor", "$dynamicAnchor"} {
			if _, ok := v[kw]; ok {
				return kw
			}
		}
		for _, child := range v {
			if kw := nestedResource(child); kw != "" {
				return kw
			}
		}
	case []any:
		for _, child := range v {
			if kw := nestedResource(child); kw != "" {
				return kw
			}
		}
	}
	return ""
}

// envelopeSchema is the POST /v1/operations body for one intent
// (docs/api.md, A request), with the intent's registry facts as extensions.
func envelopeSchema(def *intent.Intent, payload, contour string) map[string]any {
	desc := fmt.Sprintf("%s: %s. Needs scope %s.", def.Name, def.Description, strings.Join(def.Needs(), " and "))
	if def.IsProcess() {
		desc += fmt.Sprintf(" A process of %d steps (%s), each an operation of its own; the answer carries steps, and may wait for a person at a step (202) or end compensated (422 PROCESS_COMPENSATED).",
			len(def.Steps), strings.Join(def.StepIntents(), ", "))
	}
	if def.Journaled {
		desc += " Needs an operation key in execute mode (Idempotency-Key header or request_id); journaled, so a retry with the same key never acts twice."
	} else {
		desc += " Read only: no operation key needed, nothing is journaled."
	}
	if def.Money {
		desc += " Money: waits for a person's approval — the first answer is 202 awaiting_approval (APPROVAL_REQUIRED); send the same request again to learn the decision."
	}
	ext := map[string]any{"x-oncegate-scope": def.Scope, "x-oncegate-target": def.Target}
	if def.IsProcess() {
		ext = map[string]any{"x-oncegate-scopes": def.Needs(), "x-oncegate-steps": def.StepIntents()}
	}
	out := map[string]any{
		"title":       def.Name + " request",
		"description": desc,
		"type":        "object",
		"properties": map[string]any{
			"schema_version": map[string]any{
				"description": "Version of the envelope; 1.0 is the only one (anything else: 400 UNSUPPORTED_SCHEMA).",
				"type":        "string",
				"const":       contract.SchemaVersion,
			},
			"intent": map[string]any{
				"description": "The intent, from the whitelist (GET /v1/intents).",
				"type":        "string",
				"const":       def.Name,
			},
			"request_id": map[string]any{
				"description": "The operation key, as an alternative to the Idempotency-Key header; when both are sent they must be equal.",
				"type":        "string",
				"minLength":   contract.MinKeyLen,
				"maxLength":   contract.MaxKeyLen,
				"pattern":     keyPattern(def.Name),
				"examples":    []any{contour + ":" + def.Name + ":order-48291:v1"},
			},
			"actor_id": map[string]any{
				"description": "The person on whose behalf the agent acts; journaled, not part of the fingerprint.",
				"type":        "string",
				"maxLength":   contract.MaxIDLen,
			},
			// No default keyword: generators (openapi-typescript) make a
			// member with a default required in the types they emit.
			"mode": map[string]any{
				"description": "execute (the default when mode is absent) runs the intent; validate runs every check, returns the normalized plan and its plan_hash, and writes and journals nothing.",
				"type":        "string",
				"enum":        []any{contract.ModeExecute, contract.ModeValidate},
			},
			"plan_hash": map[string]any{
				"description": "On execute: the plan_hash a validate answer returned. If the plan no longer hashes the same, the answer is 409 PLAN_CHANGED and nothing runs.",
				"type":        "string",
				"pattern":     hex64,
			},
			"payload": schemaRef(payload),
		},
		"required":                []any{"schema_version", "intent", "payload"},
		"additionalProperties":    false,
		"x-oncegate-money":        def.Money,
		"x-oncegate-key-required": def.Journaled,
	}
	for k, v := range ext {
		out[k] = v
	}
	return out
}

// scopesDescription describes the bearer token and its scopes, with the
// intents each scope allows.
func scopesDescription(intents []*intent.Intent) string {
	var b strings.Builder
	b.WriteString("An agent token, sent as `Authorization: Bearer <token>`. Tokens are created by an admin (`oncegate token create …`), shown once, stored only as a hash and revocable. Each belongs to one agent identity and carries scopes; an intent needs its scope (403 PERMISSION_DENIED otherwise), GET /v1/operations/{key} and GET /v1/intents need any valid token.\n\nScopes:\n")
	for _, scope := range intent.Scopes() {
		var names []string
		for _, def := range intents {
			if def.Scope == scope {
				names = append(names, def.Name)
			}
		}
		fmt.Fprintf(&b, "- `%s`: %s\n", scope, strings.Join(names, ", "))
	}
	return b.String()
}

// namedDoc is one documented name: a code or a status.
type namedDoc struct {
	name, meaning string
}

// errorCodes are the gateway's own codes (docs/api.md, Error codes), in the
// order the OpenAPI document lists them.
var errorCodes = []namedDoc{
	{codes.KeyMismatch, "the key was first used with a different request; a changed request needs a new key"},
	{codes.KeyForeign, "the key was first used by another agent identity"},
	{codes.KeyInUse, "another attempt with this key holds a live lease; send the same request again shortly"},
	{codes.ApprovalRequired, "a money intent waits for a person's approval; send the same request again to learn the decision"},
	{codes.OutcomeUnknown, "the target got the request but its outcome is not known yet; it is reconciled by key, send the same request again"},
	{codes.TargetUnavailable, "transient target failure, retries spent; send the same request again later"},
	{codes.ApprovalDenied, "a person denied the money intent"},
	{codes.ApprovalExpired, "nobody approved the money intent in time"},
	{codes.DuplicateSuspected, "another key about the same business event as a live operation of the same intent (its duplicate rule): with rule block the request is refused, nothing is journaled and the key stays free; with rule warn it is a warning the answer carries in `warnings` and the operation goes on"},
	{codes.TargetChangedValue, "a warning, never a refusal: the target made the effect but did not keep a value as sent (1C cut a string to its attribute's length, ignored a property, stored nothing for a value); field names the payload field, the message what the target holds"},
	{codes.DuplicateReviewRequired, "another key about the same business event, rule hold: the operation waits for a person to decide whether it is a duplicate; send the same request again to learn the decision"},
	{codes.DuplicateConfirmed, "a person confirmed the held operation duplicates an earlier one; it is final"},
	{codes.ProcessCompensated, "a process's step failed for good (its code comes first) and the completed steps were undone as declared; final"},
	{codes.ProcessNeedsReview, "undoing a process's step needs a person (a manual compensation, or one the target refused); read the process again later"},
	{codes.KeyMissing, "a mutating intent in execute mode came without an operation key"},
	{codes.KeyInvalid, "malformed key, wrong contour, key/intent mismatch, secret in the key, or header and request_id differ"},
	{codes.IntentNotAllowed, "the intent is not in the whitelist"},
	{codes.UnknownField, "a field the contract does not define, in the envelope or the payload (field names it)"},
	{codes.Validation, "any other violation of the envelope or payload schema (field names it)"},
	{codes.UnsupportedSchema, "schema_version is not 1.0"},
	{codes.Unauthenticated, "no, unknown or revoked bearer token"},
	{codes.PermissionDenied, "the token lacks the intent's scope"},
	{codes.PayloadTooLarge, "the body is larger than 64 KiB"},
	{codes.UnsupportedMedia, "the body is not sent as application/json"},
	{codes.RateLimited, "too many requests; send the same request again after Retry-After"},
	{codes.PlanChanged, "the plan changed since validate; nothing ran, validate again"},
	{codes.IntentChanged, "the intent's definition changed or is gone since the key was first accepted; nothing ran (a final operation still replays): the operation needs a person, or a new key under the new definition"},
	{codes.OperationNotFound, "GET /v1/operations/{key}: no operation with this key for this agent"},
	{codes.NotFound, "no such endpoint"},
	{codes.MethodNotAllowed, "this method is not allowed on this endpoint"},
	{codes.Internal, "internal error; the request may be sent again with the same key"},
	{codes.JournalUnavailable, "the journal could not record the request durably (a disk error); nothing was sent; send the same request again after Retry-After"},
	{codes.GatewayBusy, "the gateway holds as many connections open as it is configured to (max_connections); nothing was read or done; send the same request again after Retry-After"},
	{codes.EventSourceUnknown, "POST /v1/events/{source}: no source of this gateway is named so; nothing was journaled"},
	{codes.EventUnknown, "POST /v1/events/{source}: no rule runs on this event of the source; nothing was journaled"},
	{codes.EventMalformed, "POST /v1/events/{source}: the body is not a notice as this source sends it; nothing was journaled"},
	{codes.EventSenderRefused, "POST /v1/events/{source}: the notice came from an address outside the source's notices_from; nothing was journaled"},
	{codes.LimitExceeded, "a business limit of the configuration (items, quantity, amount) is exceeded (field names it); nothing was journaled"},
	{codes.CurrencyNotAllowed, "the currency is not one the configuration allows for this intent (field names it)"},
	{codes.UnitNotAllowed, "the unit is not one the configuration allows for this intent (field names it)"},
}

// businessCodes are the targets' business refusals the adapters give.
var businessCodes = []string{
	codes.ReferenceNotFound, codes.ReferenceInactive, codes.ReferenceAmbiguous, codes.InsufficientFunds,
	codes.PaymentDeclined, codes.PaymentCanceled, codes.RefundCanceled,
	codes.InvalidState, codes.TargetPermissionDenied, codes.TargetRejected, codes.TargetNotPublished,
	codes.PostingRefused, codes.ChangeRefused, codes.TargetIgnoresKeys,
}

// errorCodeSchema documents every code: the gateway's own as an enum, the
// targets' business codes as an open-ended string.
func errorCodeSchema() map[string]any {
	var b strings.Builder
	b.WriteString("Stable machine code of an error. The gateway's own codes:\n\n| code | HTTP | retryable | meaning |\n| --- | --- | --- | --- |\n")
	var own, examples []any
	for _, d := range errorCodes {
		fmt.Fprintf(&b, "| `%s` | %d | %t | %s |\n", d.name, codes.Status(d.name), codes.Retryable(d.name), d.meaning)
		own = append(own, d.name)
		examples = append(examples, d.name)
	}
	b.WriteString("\nA target's refusal on business grounds carries the target's own code (HTTP 422, not retryable, `field` naming the payload field when there is one); the set is open-ended, e.g. ")
	for i, c := range businessCodes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "`%s`", c)
		examples = append(examples, c)
	}
	b.WriteString(". Treat an unknown code by its answer's HTTP status and `retryable`.")
	return map[string]any{
		"description": b.String(),
		"type":        "string",
		"anyOf": []any{
			map[string]any{"description": "A code of the gateway itself.", "enum": own},
			map[string]any{"description": "A target's business code.", "pattern": "^[A-Z][A-Z0-9_]*$"},
		},
		"examples": examples,
	}
}

// statusDocs are the states of answers (docs/api.md, States): the journal's,
// and valid and rejected, which are never journaled.
var statusDocs = []namedDoc{
	{"valid", "validate mode: every check passed; the answer has plan and plan_hash"},
	{"rejected", "refused before any effect; nothing new is bound to the key"},
	{string(store.StatusAwaitingApproval), "a money intent waits for a person"},
	{string(store.StatusStarted), "an attempt holds the lease; the outcome is not known yet"},
	{string(store.StatusSucceeded), "the target confirmed the effect; target_object_id names the object"},
	{string(store.StatusFailedRetryable), "transient target failure, retries spent; the same request may be sent again"},
	{string(store.StatusFailedFinal), "the target refused or approval was denied or expired; a changed request needs a new key"},
	{string(store.StatusUnknown), "the target got the request but its outcome is not known yet; reconciliation by key is pending"},
	{string(store.ProcessCompensating), "a process: a step failed for good and the completed steps are being undone"},
	{string(store.ProcessCompensated), "a process: a step failed for good and the completed steps were undone as declared; final"},
	{string(store.ProcessNeedsReview), "a process: undoing a step needs a person"},
}

// answerSchemas are the schemas of answers: Answer, Problem and their parts,
// the intent list, and health.
func answerSchemas(intents, targets []string) map[string]any {
	var statuses []any
	var sd strings.Builder
	sd.WriteString("State of an operation:\n")
	for _, d := range statusDocs {
		statuses = append(statuses, d.name)
		fmt.Fprintf(&sd, "- `%s`: %s\n", d.name, d.meaning)
	}
	// The members every answer carries; status differs between an Answer
	// (the state again) and a Problem (the HTTP status, RFC 9457).
	members := func(status map[string]any, extra map[string]any) map[string]any {
		m := map[string]any{
			"operation_key":       map[string]any{"description": "The operation key; empty when none was read (refused before it, or a read-only intent).", "type": "string"},
			"request_id":          map[string]any{"description": "The request_id of the request, or of the operation's first request.", "type": "string"},
			"operation":           map[string]any{"description": "The intent; empty when refused before it was read.", "type": "string", "examples": stringsAny(intents)},
			"state":               schemaRef("State"),
			"status":              status,
			"target_system":       map[string]any{"description": "The business system the intent acts in; null when refused before the intent was read.", "type": []any{"string", "null"}, "enum": append(stringsAny(targets), nil)},
			"target_object_id":    map[string]any{"description": "The target's id of the created or changed object; the same on every replay.", "type": []any{"string", "null"}},
			"result":              map[string]any{"description": "The small normalized result, e.g. {\"number\": \"000123\"}; never a full target response.", "type": []any{"object", "null"}},
			"errors":              map[string]any{"description": "Empty on success. Otherwise every problem found, the first being the answer's code and detail: a request refused for its fields lists each unknown member (UNKNOWN_FIELD), then each other schema violation (VALIDATION_ERROR), one per field, top-level fields first and then by path; a target's check lists each reference it could not resolve. At most " + fmt.Sprint(codes.MaxProblems) + ".", "type": "array", "items": schemaRef("ErrorItem"), "maxItems": codes.MaxProblems},
			"warnings":            map[string]any{"description": "What did not stop the operation, in the errors' shape: " + codes.DuplicateSuspected + " when another live operation of the intent is about the same business event (its duplicate rule warns, or held it for a person), with when it was made and, to the agent that made it, its key; in validate mode, what executing would meet; " + codes.TargetChangedValue + " for each value the target did not keep as sent (field names it). Absent when there is none.", "type": "array", "items": schemaRef("ErrorItem")},
			"fingerprint":         map[string]any{"description": "SHA-256 (lowercase hex) of the canonical request (docs/api.md, The fingerprint); null when refused before the payload was read.", "type": []any{"string", "null"}, "pattern": hex64},
			"attempt_count":       map[string]any{"description": "Attempts made at the target.", "type": "integer", "minimum": 0},
			"replayed":            map[string]any{"description": "The stored answer of an earlier request with the same key and fingerprint.", "type": "boolean"},
			"needs_review":        map[string]any{"description": "The outcome could not be established by key and a person has been asked to look at it.", "type": "boolean"},
			"approval_expires_at": map[string]any{"description": "awaiting_approval: when the person's decision is due (RFC 3339, UTC); an operation nobody decided by then ends failed_final " + codes.ApprovalExpired + ". Absent otherwise.", "type": "string", "format": "date-time"},
			"key_operation": map[string]any{"description": codes.KeyMismatch + " only: the operation the key does hold (its first request), so an agent does not conclude that nothing happened under the key.", "type": "object",
				"properties": map[string]any{
					"state":            schemaRef("State"),
					"target_object_id": map[string]any{"description": "The object that operation made, when it made one.", "type": "string"},
				}, "required": []any{"state"}},
			"steps": map[string]any{"description": "A process only: its steps in order, each an operation of its own (docs/processes.md).", "type": "array", "items": schemaRef("Step")},
			"event": map[string]any{"description": "An operation or process a source's notice ran (docs/events.md): the notice. Such an operation is the firm's, and every agent may read it. Absent otherwise.", "type": "object",
				"required": []any{"source", "event", "object_id", "id", "received_at", "deliveries"},
				"properties": map[string]any{
					"source":      map[string]any{"type": "string", "description": "the source, a target instance"},
					"event":       map[string]any{"type": "string", "description": "the source's event, e.g. payment.succeeded"},
					"object_id":   map[string]any{"type": "string", "description": "the source's id of the object, as read back"},
					"id":          map[string]any{"type": "integer", "description": "the notice's row in the journal"},
					"received_at": map[string]any{"type": "string", "format": "date-time"},
					"deliveries":  map[string]any{"type": "integer", "description": "how often the source sent it"},
				}},
			"plan":      map[string]any{"description": "Validate mode: the normalized plan (operation, payload, what the target resolved).", "type": "object"},
			"plan_hash": map[string]any{"description": "Validate mode: the plan's hash, to send with execute.", "type": "string", "pattern": hex64},
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	required := []any{"operation_key", "request_id", "operation", "state", "status", "target_system", "target_object_id", "result", "errors", "fingerprint", "attempt_count", "replayed"}
	return map[string]any{
		"State":     map[string]any{"description": sd.String(), "type": "string", "enum": statuses},
		"Step":      stepSchema(),
		"ErrorCode": errorCodeSchema(),
		"ErrorItem": map[string]any{
			"description": "One error. The message is safe for a model to read: no stack traces, SQL, hostnames or credentials.",
			"type":        "object",
			"properties": map[string]any{
				"code":      schemaRef("ErrorCode"),
				"field":     map[string]any{"description": "Path of the field at fault (payload fields relative to the payload, or Idempotency-Key), or empty.", "type": "string"},
				"message":   map[string]any{"description": "What went wrong and what to do, for a model to read.", "type": "string"},
				"retryable": map[string]any{"description": "Whether the same request, with the same key, may be sent again.", "type": "boolean"},
			},
			"required": []any{"code", "field", "message", "retryable"},
		},
		"Answer": map[string]any{
			"description": "The JSON object a 200 or 202 answer to a POST or GET of an operation carries (docs/api.md, Answers): the operation's state in `state`, and again in `status`.",
			"type":        "object",
			"properties": members(map[string]any{
				"description": "The operation's state again, as in `state` (v1 answers always carried it here); read `state`.",
				"$ref":        "#/components/schemas/State",
			}, nil),
			"required": required,
		},
		"Problem": map[string]any{
			"description": "An error answer (application/problem+json, RFC 9457): the members of an Answer, with RFC 9457's type, title and detail, and `status` the HTTP status code as a number. The operation's state is in `state`.",
			"type":        "object",
			"properties": members(map[string]any{
				"description": "The HTTP status code of the answer (RFC 9457 section 3.1.3).",
				"type":        "integer",
				"minimum":     400,
				"maximum":     599,
			}, map[string]any{
				"type":   map[string]any{"description": "urn:oncegate:error:<code in lower case with dashes>.", "type": "string", "format": "uri", "examples": []any{"urn:oncegate:error:idempotency-key-missing"}},
				"title":  map[string]any{"description": "Short summary of the HTTP status.", "type": "string"},
				"detail": map[string]any{"description": "The first error's message.", "type": "string"},
			}),
			"required": append(slices.Clone(required), "type", "title", "detail"),
		},
		"IntentList": map[string]any{
			"description": "The whitelist of intents.",
			"type":        "object",
			"properties": map[string]any{
				"schema_version": map[string]any{"type": "string", "const": contract.SchemaVersion},
				"intents":        map[string]any{"type": "array", "items": schemaRef("IntentInfo")},
			},
			"required": []any{"schema_version", "intents"},
		},
		"IntentInfo": map[string]any{
			"description": "One intent of the whitelist.",
			"type":        "object",
			"properties": map[string]any{
				"name":         map[string]any{"type": "string", "enum": stringsAny(intents)},
				"target":       map[string]any{"type": "string", "enum": stringsAny(targets)},
				"scope":        map[string]any{"type": "string", "enum": stringsAny(intent.Scopes())},
				"money":        map[string]any{"description": "Needs a person's approval.", "type": "boolean"},
				"key_required": map[string]any{"description": "Needs an operation key in execute mode; journaled.", "type": "boolean"},
				"description":  map[string]any{"type": "string"},
				"schema":       map[string]any{"description": "JSON Schema (draft 2020-12) of the payload; the same as components/schemas/<Intent>Payload here.", "type": "object"},
			},
			"required": []any{"name", "target", "scope", "money", "key_required", "description", "schema"},
		},
		"Health": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"status": map[string]any{"type": "string", "enum": []any{"ok", "ready", "not ready"}},
				"reason": map[string]any{"type": "string"},
			},
			"required": []any{"status"},
		},
	}
}

// stepSchema is one step of a process's answer.
func stepSchema() map[string]any {
	str := map[string]any{"type": "string"}
	strOrNull := map[string]any{"type": []any{"string", "null"}}
	return map[string]any{
		"description": "One step of a process: an operation of its own, under a key the gateway derives from the process key.",
		"type":        "object",
		"required":    []any{"name", "intent", "operation_key", "state", "target_system", "target_object_id", "result", "compensation"},
		"properties": map[string]any{
			"name":             str,
			"intent":           str,
			"operation_key":    str,
			"state":            map[string]any{"description": "The step's operation's state; pending before it was sent.", "type": "string"},
			"target_system":    strOrNull,
			"target_object_id": strOrNull,
			"result":           map[string]any{"type": []any{"object", "null"}},
			"errors":           map[string]any{"type": "array", "items": schemaRef("ErrorItem")},
			"compensation": map[string]any{
				"description": "The undoing of the step, once it started; null before.",
				"type":        []any{"object", "null"},
				"properties": map[string]any{
					"intent": str, "operation_key": str, "state": str, "target_object_id": strOrNull,
					"errors": map[string]any{"type": "array", "items": schemaRef("ErrorItem")},
				},
			},
		},
	}
}
