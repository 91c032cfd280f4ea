package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/intent"
)

// openAPIBase is where the test compiler keeps the document; nothing is fetched.
const openAPIBase = "https://oncegate.invalid/openapi.json"

// mustOpenAPI returns the document, decoded with exact numbers.
func mustOpenAPI(tb testing.TB) map[string]any {
	tb.Helper()
	raw, err := OpenAPI(intent.Builtin(), "prod")
	if err != nil {
		tb.Fatal(err)
	}
	return mustDecode(tb, raw)
}

func mustDecode(tb testing.TB, raw []byte) map[string]any {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		tb.Fatalf("decode: %v", err)
	}
	if dec.More() {
		tb.Fatal("data after the JSON object")
	}
	return v
}

// at walks doc along path, failing when a step is missing.
func at(tb testing.TB, doc any, path ...string) any {
	tb.Helper()
	v := doc
	for i, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			tb.Fatalf("%s is not an object", strings.Join(path[:i], "/"))
		}
		if v, ok = m[p]; !ok {
			tb.Fatalf("%s is missing", strings.Join(path[:i+1], "/"))
		}
	}
	return v
}

// mustCompiler holds the whole document as one resource, so every
// #/components/schemas/… pointer and $ref resolves.
func mustCompiler(tb testing.TB) *jsonschema.Compiler {
	tb.Helper()
	raw, err := OpenAPI(intent.Builtin(), "prod")
	if err != nil {
		tb.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		tb.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(openAPIBase, doc); err != nil {
		tb.Fatal(err)
	}
	return c
}

func TestOpenAPI_Document(t *testing.T) {
	t.Parallel()
	doc := mustOpenAPI(t)
	if got, want := doc["openapi"], "3.1.0"; got != want {
		t.Fatalf("openapi = %v, want %v", got, want)
	}
	if got, want := doc["jsonSchemaDialect"], "https://json-schema.org/draft/2020-12/schema"; got != want {
		t.Fatalf("jsonSchemaDialect = %v, want %v", got, want)
	}
	if got, want := at(t, doc, "info", "title"), "oncegate agent API"; got != want {
		t.Fatalf("title = %v, want %v", got, want)
	}
	if got, want := at(t, doc, "components", "securitySchemes", "bearer", "scheme"), "bearer"; got != want {
		t.Fatalf("bearer scheme = %v, want %v", got, want)
	}

	states := at(t, doc, "components", "schemas", "State", "enum")
	if want := []any{"valid", "rejected", "awaiting_approval", "started", "succeeded", "failed_retryable", "failed_final", "unknown",
		"compensating", "compensated", "needs_review"}; !reflect.DeepEqual(states, want) {
		t.Fatalf("State enum = %v, want %v", states, want)
	}
	// docs/api.md, Answers: every answer carries state; a 200/202 answer's
	// status is the state again, a problem's is the HTTP status (RFC 9457).
	for _, schema := range []string{"Answer", "Problem"} {
		if !slices.Contains(at(t, doc, "components", "schemas", schema, "required").([]any), any("state")) {
			t.Errorf("%s does not require state", schema)
		}
	}
	if got := at(t, doc, "components", "schemas", "Answer", "properties", "status", "$ref"); got != "#/components/schemas/State" {
		t.Errorf("Answer's status = %v, want the State", got)
	}
	if got := at(t, doc, "components", "schemas", "Problem", "properties", "status", "type"); got != "integer" {
		t.Errorf("Problem's status is of type %v, want integer (RFC 9457 section 3.1.3)", got)
	}

	ops := []struct {
		path, method, id string
		public           bool
	}{
		{"/v1/operations", "post", "createOperation", false},
		{"/v1/operations/{key}", "get", "getOperation", false},
		{"/v1/intents", "get", "listIntents", false},
		{"/v1/openapi.json", "get", "getOpenAPI", true},
		{"/healthz", "get", "getHealth", true},
		{"/readyz", "get", "getReadiness", true},
		{"/v1/events/{source}", "post", "receiveNotice", true},
	}
	paths := at(t, doc, "paths").(map[string]any)
	if got, want := len(paths), len(ops); got != want {
		t.Fatalf("%d paths, want %d", got, want)
	}
	for _, o := range ops {
		op := at(t, doc, "paths", o.path, o.method).(map[string]any)
		if got := op["operationId"]; got != o.id {
			t.Errorf("%s %s: operationId = %v, want %v", o.method, o.path, got, o.id)
		}
		sec, has := op["security"]
		if o.public && (!has || len(sec.([]any)) != 0) {
			t.Errorf("%s %s: security = %v, want []", o.method, o.path, sec)
		}
		if !o.public && has {
			t.Errorf("%s %s: security = %v, want the global bearer", o.method, o.path, sec)
		}
	}

	// POST answers every status of docs/api.md's Error codes, problems as problem+json.
	responses := at(t, doc, "paths", "/v1/operations", "post", "responses").(map[string]any)
	for _, code := range []string{"200", "202", "400", "401", "403", "409", "413", "415", "422", "429", "503"} {
		content := at(t, responses, code, "content").(map[string]any)
		ct, ref := "application/json", refAnswer
		if code >= "400" {
			ct, ref = "application/problem+json", refProblem
		}
		if got := at(t, content, ct, "schema", "$ref"); got != ref {
			t.Errorf("POST %s: %s schema = %v, want %s", code, ct, got, ref)
		}
	}
	for code, h := range map[string]string{"200": "Idempotent-Replayed", "202": "Retry-After", "409": "Retry-After", "429": "Retry-After", "503": "Retry-After"} {
		at(t, responses, code, "headers", h)
	}
	if got, want := at(t, doc, "paths", "/v1/operations/{key}", "get", "responses", "404", "content", "application/problem+json", "schema", "$ref"), refProblem; got != want {
		t.Errorf("GET operation 404 schema = %v, want %v", got, want)
	}
}

// TestOpenAPI_Intents is the drift test: the published payload schemas are
// the registry's, and every intent is one variant of the request.
func TestOpenAPI_Intents(t *testing.T) {
	t.Parallel()
	doc := mustOpenAPI(t)
	schemas := at(t, doc, "components", "schemas").(map[string]any)
	req := schemas["OperationRequest"].(map[string]any)
	oneOf := req["oneOf"].([]any)
	mapping := at(t, req, "discriminator", "mapping").(map[string]any)
	if got, want := at(t, req, "discriminator", "propertyName"), "intent"; got != want {
		t.Fatalf("discriminator on %v, want %v", got, want)
	}

	all := intent.Builtin().All()
	if got, want := len(all), 7; got != want {
		t.Fatalf("%d intents in the registry, want %d", got, want)
	}
	if got, want := len(oneOf), len(all); got != want {
		t.Fatalf("%d request variants, want %d", got, want)
	}
	if got, want := len(mapping), len(all); got != want {
		t.Fatalf("%d discriminator mappings, want %d", got, want)
	}
	for _, in := range all {
		t.Run(in.Name, func(t *testing.T) {
			name := schemaName(in.Name)
			ref := "#/components/schemas/" + name + "Request"
			if !slices.ContainsFunc(oneOf, func(v any) bool { return reflect.DeepEqual(v, map[string]any{"$ref": ref}) }) {
				t.Errorf("oneOf lacks %s", ref)
			}
			if got := mapping[in.Name]; got != ref {
				t.Errorf("mapping[%s] = %v, want %s", in.Name, got, ref)
			}

			env := at(t, schemas, name+"Request").(map[string]any)
			if got, want := at(t, env, "properties", "intent", "const"), in.Name; got != want {
				t.Errorf("intent const = %v, want %v", got, want)
			}
			if got, want := at(t, env, "properties", "payload", "$ref"), "#/components/schemas/"+name+"Payload"; got != want {
				t.Errorf("payload $ref = %v, want %v", got, want)
			}
			for ext, want := range map[string]any{
				"x-oncegate-scope": in.Scope, "x-oncegate-target": in.Target,
				"x-oncegate-money": in.Money, "x-oncegate-key-required": in.Journaled,
			} {
				if got := env[ext]; got != want {
					t.Errorf("%s = %v, want %v", ext, got, want)
				}
			}
			desc, _ := env["description"].(string)
			if !strings.Contains(desc, in.Description) || !strings.Contains(desc, "scope "+in.Scope) {
				t.Errorf("description %q lacks the effect or the scope", desc)
			}
			if in.Money != strings.Contains(desc, "approval") {
				t.Errorf("description %q: money is %t", desc, in.Money)
			}

			// The registry's schema, with the intent's effective limits and
			// an explicit format on every number.
			want := mustDecode(t, in.Schema)
			delete(want, "$schema")
			delete(want, "$id")
			effectiveLimits(want, in.Limits)
			numberFormats(want)
			if got := schemas[name+"Payload"]; !reflect.DeepEqual(got, any(want)) {
				t.Errorf("%sPayload differs from the registry's schema:\n got %v\nwant %v", name, got, want)
			}
		})
	}
}

func TestOpenAPI_SchemasCompile(t *testing.T) {
	t.Parallel()
	c := mustCompiler(t)
	schemas := at(t, mustOpenAPI(t), "components", "schemas").(map[string]any)
	for name := range schemas {
		if _, err := c.Compile(openAPIBase + "#/components/schemas/" + name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestOpenAPI_ParameterSchemas compiles every schema of the paths
// (parameters and responses) and checks the key patterns.
func TestOpenAPI_ParameterSchemas(t *testing.T) {
	t.Parallel()
	c := mustCompiler(t)
	var ptrs []string
	var walk func(v any, ptr string)
	walk = func(v any, ptr string) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				p := ptr + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
				if k == "schema" {
					ptrs = append(ptrs, p)
					continue
				}
				walk(child, p)
			}
		case []any:
			for i, child := range v {
				walk(child, ptr+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(at(t, mustOpenAPI(t), "paths"), "/paths")
	if len(ptrs) < 15 {
		t.Fatalf("found only %d schemas under paths", len(ptrs))
	}
	compiled := map[string]*jsonschema.Schema{}
	for _, p := range ptrs {
		sch, err := c.Compile(openAPIBase + "#" + url.PathEscape(p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		compiled[p] = sch
	}

	header := compiled["/paths/~1v1~1operations/post/parameters/0/schema"]
	path := compiled["/paths/~1v1~1operations~1{key}/get/parameters/0/schema"]
	if header == nil || path == nil {
		t.Fatal("the key parameters' schemas are missing")
	}
	for _, tt := range []struct {
		key          string
		header, path bool
	}{
		{"prod:invoice.create:order-48291:v1", true, true},
		{`"prod:invoice.create:order-48291:v1"`, true, false},
		{"prod:crm.callback:create:event-90173:v1", true, true},
		{`"prod:invoice.create:order-48291:v1`, false, false},
		{"prod:invoice.create:order-48291", false, false},
		{"prod:invoice.create:order 48291:v1", false, false},
		{"prod::order-48291:v1", false, false},
	} {
		if got := header.Validate(tt.key) == nil; got != tt.header {
			t.Errorf("Idempotency-Key %s: valid %t, want %t", tt.key, got, tt.header)
		}
		if got := path.Validate(tt.key) == nil; got != tt.path {
			t.Errorf("path key %s: valid %t, want %t", tt.key, got, tt.path)
		}
	}
}

func TestOpenAPI_RequestSchema(t *testing.T) {
	t.Parallel()
	sch, err := mustCompiler(t).Compile(openAPIBase + "#/components/schemas/OperationRequest")
	if err != nil {
		t.Fatal(err)
	}
	// The example of docs/api.md, A request. Its currency is "rub" there: the gateway
	// upper-cases currency before validating, and the published payload
	// schemas describe the payload after that normalization (^[A-Z]{3}$).
	example := func() map[string]any {
		return map[string]any{
			"schema_version": "1.0",
			"intent":         "invoice.create",
			"request_id":     "prod:invoice.create:order-48291:v1",
			"actor_id":       "user-42",
			"mode":           "execute",
			"payload": map[string]any{
				"order_id": "order-48291", "organization_id": "org-main",
				"customer_id": "customer-1042", "currency": "RUB",
				"items": []any{map[string]any{"product_id": "product-778", "quantity": json.Number("2"), "unit": "pcs", "price_minor": json.Number("62500")}},
			},
		}
	}
	tests := []struct {
		name   string
		change func(env map[string]any)
		ok     bool
	}{
		{"OK", func(map[string]any) {}, true},
		{"OKWithoutOptional", func(env map[string]any) {
			delete(env, "request_id")
			delete(env, "actor_id")
			delete(env, "mode")
		}, true},
		{"OKCRMKeyWithColons", func(env map[string]any) {
			env["intent"] = "crm.callback.create"
			env["request_id"] = "prod:crm.callback:create:event-90173:v1"
			env["payload"] = map[string]any{"customer_id": "customer-1042", "due_at": "2026-12-03T10:00:00+03:00"}
		}, true},
		{"ErrMethodField", func(env map[string]any) { env["method"] = "Documents.Invoice.Create" }, false},
		{"ErrUnknownPayloadField", func(env map[string]any) { env["payload"].(map[string]any)["posted"] = true }, false},
		{"ErrUnknownIntent", func(env map[string]any) { env["intent"] = "invoice.delete" }, false},
		{"ErrSchemaVersion", func(env map[string]any) { env["schema_version"] = "2.0" }, false},
		{"ErrMode", func(env map[string]any) { env["mode"] = "dry_run" }, false},
		{"ErrNoPayload", func(env map[string]any) { delete(env, "payload") }, false},
		{"ErrKeyOfOtherIntent", func(env map[string]any) { env["request_id"] = "prod:payment.charge:order-48291:v1" }, false},
		{"ErrKeyVersion", func(env map[string]any) { env["request_id"] = "prod:invoice.create:order-48291:1" }, false},
		{"ErrOtherIntentPayload", func(env map[string]any) { env["intent"] = "payment.charge" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := example()
			tt.change(env)
			err := sch.Validate(env)
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok && err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestOpenAPI_Deterministic(t *testing.T) {
	t.Parallel()
	a, err := OpenAPI(intent.Builtin(), "prod")
	if err != nil {
		t.Fatal(err)
	}
	b, err := buildOpenAPI(intent.Builtin(), "prod") // a fresh build, not the cached one
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two builds differ")
	}
	a[0] = 'x' // the caller's own copy
	c, _ := OpenAPI(intent.Builtin(), "prod")
	if !bytes.Equal(c, b) {
		t.Fatal("OpenAPI returned the shared document")
	}
}

// TestOpenAPI_ErrorCodes checks that every code of the catalogue is
// documented: the gateway's own in the enum and its table, the targets'
// business codes among the examples.
func TestOpenAPI_ErrorCodes(t *testing.T) {
	t.Parallel()
	ec := at(t, mustOpenAPI(t), "components", "schemas", "ErrorCode").(map[string]any)
	desc := ec["description"].(string)
	enum := at(t, ec, "anyOf").([]any)[0].(map[string]any)["enum"].([]any)
	for _, code := range codes.All() {
		own := slices.Contains(enum, any(code))
		if own == slices.Contains(businessCodes, code) || !strings.Contains(desc, "`"+code+"`") {
			t.Errorf("%s is not documented in ErrorCode (in the enum: %v)", code, own)
		}
	}
}

func TestOpenAPI_Handler(t *testing.T) {
	t.Parallel()
	e := echo.New()
	s := &Server{catalog: intent.Builtin(), cfg: config.Config{Contour: "prod"}}
	e.GET("/v1/openapi.json", s.handleOpenAPI)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
	if got, want := rec.Code, http.StatusOK; got != want {
		t.Fatalf("status = %d, want %d", got, want)
	}
	if got, want := rec.Header().Get(echo.HeaderContentType), "application/json"; got != want {
		t.Fatalf("Content-Type = %q, want %q", got, want)
	}
	want, _ := OpenAPI(intent.Builtin(), "prod")
	if !bytes.Equal(rec.Body.Bytes(), want) {
		t.Fatal("body is not the document")
	}
}

// The 422 answer names examples of the targets' business codes.
func TestOpenAPIBusinessCodeExamples(t *testing.T) {
	t.Parallel()
	raw, err := OpenAPI(intent.Builtin(), "prod")
	if err != nil {
		t.Fatal(err)
	}
	if e := "e.g. " + codes.ReferenceNotFound + " or " + codes.InsufficientFunds; !bytes.Contains(raw, []byte(e)) {
		t.Errorf("the 422 answer's description lacks %q", e)
	}
}

// Each response of POST /v1/operations names every gateway code answered
// with its HTTP status (a client reading the 422 learns LIMIT_EXCEEDED is
// one), and every route behind a token documents 401 and 429: the rate
// limit applies to each.
func TestOpenAPI_ResponsesNameTheirCodes(t *testing.T) {
	t.Parallel()
	doc := mustOpenAPI(t)
	post := at(t, doc, "paths", "/v1/operations", "post", "responses").(map[string]any)
	for _, d := range errorCodes {
		switch d.name {
		case codes.OperationNotFound, codes.NotFound, codes.MethodNotAllowed, // not answers of this route
			codes.EventSourceUnknown, codes.EventUnknown, codes.EventMalformed, codes.EventSenderRefused:
			continue
		}
		status := strconv.Itoa(codes.Status(d.name))
		desc, _ := at(t, post, status, "description").(string)
		if !strings.Contains(desc, d.name) {
			t.Errorf("POST /v1/operations %s does not name %s: %q", status, d.name, desc)
		}
	}
	for path, item := range at(t, doc, "paths").(map[string]any) {
		for method, op := range item.(map[string]any) {
			if sec, ok := op.(map[string]any)["security"]; ok && len(sec.([]any)) == 0 {
				continue // public
			}
			for _, code := range []string{"401", "429"} {
				if _, ok := at(t, op, "responses").(map[string]any)[code]; !ok {
					t.Errorf("%s %s: no %s response", method, path, code)
				}
			}
			if _, ok := at(t, op, "responses", "429").(map[string]any)["headers"].(map[string]any)["Retry-After"]; !ok {
				t.Errorf("%s %s: the 429 has no Retry-After", method, path)
			}
		}
	}
}

// mode has no default: openapi-typescript and other generators make a
// member with a default required in the request types they emit, though
// the gateway defaults it to execute.
func TestOpenAPI_ModeOptional(t *testing.T) {
	t.Parallel()
	doc := mustOpenAPI(t)
	for _, in := range intent.Builtin().All() {
		env := at(t, doc, "components", "schemas", schemaName(in.Name)+"Request").(map[string]any)
		mode := at(t, env, "properties", "mode").(map[string]any)
		if _, has := mode["default"]; has {
			t.Errorf("%s: mode has a default", in.Name)
		}
		if slices.Contains(env["required"].([]any), any("mode")) {
			t.Errorf("%s: mode is required", in.Name)
		}
	}
}
