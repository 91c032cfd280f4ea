// Package mcp serves the agent contract as MCP tools over streamable
// HTTP.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/intent"
)

// The MCP endpoint offers the same contract as tools: one tool per intent
// of the whitelist the agent's token may use, with the intent's schema as
// the payload's, plus get_operation. A tool call is answered by the agent
// API itself (an in-process request to /v1/...), so keys, fingerprints,
// scopes, rate limits, approvals and every answer code are exactly the
// API's; MCP adds no path of its own to a target.

const mcpInstructions = `oncegate performs business intents (1C documents, CRM tasks, payments) exactly once per operation key.
Every mutating tool needs operation_key: <contour>:<intent>:<business id>:v<n>, e.g. %[1]s:invoice.create:order-48291:v1; this gateway's contour is %[1]s.
Send the same key with the same payload on every retry of one intent: a retry returns the first result and never makes a second effect. A new key is a new effect.
mode "validate" is a dry run: it checks everything, returns a plan and plan_hash, writes nothing and leaves the key free; pass plan_hash with mode "execute" to refuse a changed plan.
awaiting_approval (money) and unknown are not failures: call again later with the same key and payload, or read the state with get_operation.
Errors carry stable codes in errors[].code; retryable tells whether the same call may succeed later.`

// mcpMaxBody bounds an MCP request; the envelope inside is bounded again
// by the API's own 64 KiB limit.
const mcpMaxBody = 256 << 10

// Config is what the endpoint needs of the gateway.
type Config struct {
	Contour string
	// Catalog is the whitelist: one tool per intent it serves.
	Catalog *intent.Catalog
	Log     *slog.Logger
	// API is the agent API; each tool call is one request to it.
	API http.Handler
	// Scopes are the scopes of the token that authenticated r, which the
	// caller checked before the endpoint sees r.
	Scopes func(r *http.Request) []string
	// InProcess marks the context of a request a tool call makes to API.
	InProcess func(context.Context) context.Context
	// Refusal renders a refusal made before the API is asked as the API
	// renders its own: the HTTP status and the JSON answer.
	Refusal func(*codes.Refusal) (status int, body []byte)
}

type endpoint struct{ Config }

// Handler serves MCP over streamable HTTP, stateless: no session outlives
// a request, so a restart or a second gateway loses nothing.
func Handler(cfg Config) http.Handler {
	s := &endpoint{cfg}
	var (
		mu      sync.Mutex
		servers = map[string]*mcp.Server{} // by the token's sorted scopes
	)
	serverFor := func(r *http.Request) *mcp.Server {
		scopes := slices.Sorted(slices.Values(s.Scopes(r)))
		id := strings.Join(scopes, ",")
		mu.Lock()
		defer mu.Unlock()
		if srv, ok := servers[id]; ok {
			return srv
		}
		srv := s.newMCPServer(scopes)
		servers[id] = srv
		return srv
	}
	return mcp.NewStreamableHTTPHandler(serverFor, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              quiet(s.Log),
		MaxRequestBodyBytes: mcpMaxBody,
		// The SDK refuses a non-loopback Host arriving on loopback, against
		// DNS rebinding of unauthenticated local servers. Every request
		// here carries an agent token, checked before the SDK sees it, and
		// a gateway on loopback behind the firm's reverse proxy is the
		// usual deployment, whose Host is the public name.
		DisableLocalhostProtection: true,
	})
}

// newMCPServer builds the tools a token with scopes may call.
func (s *endpoint) newMCPServer(scopes []string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "oncegate", Version: "1.0"}, &mcp.ServerOptions{
		Instructions: fmt.Sprintf(mcpInstructions, s.Contour),
		Logger:       quiet(s.Log),
		// Tools, without listChanged: the list changes only with a
		// restart, and the endpoint is stateless (GET /mcp is 405), so no
		// notification could reach a client. No resources or prompts.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{}},
		// The tool list depends on the token: no shared cache may keep it.
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
	})
	srv.AddReceivingMiddleware(unadvertised)
	for _, def := range s.Catalog.Offered() {
		if slices.ContainsFunc(def.Needs(), func(sc string) bool { return !slices.Contains(scopes, sc) }) {
			continue
		}
		srv.AddTool(intentTool(def, s.Contour), s.callIntent(def))
	}
	srv.AddTool(&mcp.Tool{
		Name:  "get_operation",
		Title: "Read an operation's state",
		Description: "Reads the current state of an operation by its operation_key: the same answer the intent's own call gives, without running anything. " +
			"Use it to follow an operation that answered awaiting_approval, unknown or started, or to learn the outcome of a call whose answer was lost. " +
			"It changes nothing; call it as often as needed. With wait_seconds it holds the answer until the state changes (to one other than started) or that many seconds pass (at most 60), so waiting for a person needs no polling.",
		InputSchema: map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []string{"operation_key"},
			"properties": map[string]any{
				"operation_key": keySchema,
				"wait_seconds": map[string]any{"type": "integer", "minimum": 0, "maximum": 60,
					"description": "Hold the answer until the operation's state changes, at most this many seconds; 0 or none answers at once."},
			},
		},
		OutputSchema: answerSchema,
		// Reads the gateway's own journal: nothing outside it.
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)},
	}, s.callGetOperation)
	return srv
}

func ptr[T any](v T) *T { return &v }

// unadvertised answers the methods of capabilities the endpoint does not
// advertise — resources, prompts, completion — as JSON-RPC's method not
// found, instead of the SDK's empty lists.
func unadvertised(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "resources/") || strings.HasPrefix(method, "prompts/") || strings.HasPrefix(method, "completion/") {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + method + " (this server offers tools only)"}
		}
		return next(ctx, method, req)
	}
}

// quiet is log for the SDK, with its per-request INFO lines (a stateless
// endpoint connects and disconnects a session on every request) at DEBUG.
func quiet(log *slog.Logger) *slog.Logger { return slog.New(demote{log.Handler()}) }

// demote is a handler that logs INFO records as DEBUG.
type demote struct{ slog.Handler }

func (d demote) Enabled(ctx context.Context, level slog.Level) bool {
	if level == slog.LevelInfo {
		level = slog.LevelDebug
	}
	return d.Handler.Enabled(ctx, level)
}

func (d demote) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo {
		r.Level = slog.LevelDebug
	}
	return d.Handler.Handle(ctx, r)
}

func (d demote) WithAttrs(attrs []slog.Attr) slog.Handler { return demote{d.Handler.WithAttrs(attrs)} }
func (d demote) WithGroup(name string) slog.Handler       { return demote{d.Handler.WithGroup(name)} }

// answerSchema is the output schema of every tool: the API's answer
// (docs/api.md, Answers), which is each result's structured content — an answer of a
// 200 or 202 (status the state again) or a problem (status the HTTP status).
var answerSchema = map[string]any{
	"type":     "object",
	"required": []string{"state", "status", "errors"},
	"properties": map[string]any{
		"operation_key": map[string]any{"type": "string"},
		"request_id":    map[string]any{"type": "string"},
		"operation":     map[string]any{"type": "string"},
		"state": map[string]any{
			"description": "The operation's state; read this.",
			"type":        "string",
			"enum": []string{"valid", "rejected", "awaiting_approval", "started", "succeeded", "failed_retryable", "failed_final", "unknown",
				"compensating", "compensated", "needs_review"},
		},
		"status":           map[string]any{"description": "The state again (HTTP 200, 202), or the HTTP status of an error answer (RFC 9457).", "type": []string{"string", "integer"}},
		"target_system":    map[string]any{"type": []string{"string", "null"}},
		"target_object_id": map[string]any{"type": []string{"string", "null"}},
		"result":           map[string]any{"type": []string{"object", "null"}},
		"errors": map[string]any{
			"type": "array",
			"items": map[string]any{
				"type":     "object",
				"required": []string{"code", "message", "retryable"},
				"properties": map[string]any{
					"code":      map[string]any{"type": "string"},
					"field":     map[string]any{"type": "string"},
					"message":   map[string]any{"type": "string"},
					"retryable": map[string]any{"type": "boolean"},
				},
			},
		},
		"warnings":      map[string]any{"type": "array"},
		"fingerprint":   map[string]any{"type": []string{"string", "null"}},
		"attempt_count": map[string]any{"type": "integer"},
		"replayed":      map[string]any{"type": "boolean"},
		"needs_review":  map[string]any{"type": "boolean"},
		"steps":         map[string]any{"type": "array", "description": "A process only: its steps, each an operation of its own."},
		"plan":          map[string]any{"type": "object"},
		"plan_hash":     map[string]any{"type": "string"},
		"type":          map[string]any{"type": "string"},
		"title":         map[string]any{"type": "string"},
		"detail":        map[string]any{"type": "string"},
	},
}

var keySchema = map[string]any{
	"type":        "string",
	"minLength":   8,
	"maxLength":   255,
	"pattern":     `^[A-Za-z0-9._:-]+$`,
	"description": "The operation key: the same on every retry of this one business intent.",
}

// intentTool describes in as a tool: the envelope's fields, with the
// intent's own schema as the payload, and a description saying what it
// does, when to use it and what a retry resends, with keys of contour.
func intentTool(def *intent.Intent, contour string) *mcp.Tool {
	props := map[string]any{
		"payload": def.Schema,
		"actor_id": map[string]any{
			"type": "string", "maxLength": 255,
			"description": "The person on whose behalf the agent acts, for the audit trail.",
		},
	}
	required := []string{"payload"}
	desc := schemaDescription(def)
	// Every tool reaches a business system beyond the gateway (open
	// world). A retry with the same key does nothing again (idempotent).
	// Creating, drafting, posting add to the target; moving money cannot
	// be taken back by the tool, so it counts as destructive.
	ann := &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(def.Money), OpenWorldHint: ptr(true)}
	if def.Journaled {
		props["operation_key"] = keySchema
		props["mode"] = map[string]any{
			"type": "string", "enum": []string{"execute", "validate"}, "default": "execute",
			"description": "validate: a dry run that writes nothing and returns plan and plan_hash; execute: do it.",
		}
		props["plan_hash"] = map[string]any{
			"type":        "string",
			"description": "From an earlier validate: execute is refused with PLAN_CHANGED if the plan differs now.",
		}
		required = append(required, "operation_key")
		desc += fmt.Sprintf(" Use it once per business intent, with an operation_key made for that intent, e.g. %s:%s:<business id>:v1."+
			" A retry (after a timeout, a lost answer, an error marked retryable, or an answer unknown or started) must resend the same operation_key and the same payload:"+
			" it returns the first result and never makes a second effect. A changed payload needs a new key (…:v2)."+
			" mode validate checks everything and writes nothing.", contour, def.Name)
		if def.Money {
			desc += " Money: a person approves it first, so the first answer is awaiting_approval; call again later with the same operation_key and payload, or read get_operation."
		}
		if def.IsProcess() {
			desc += fmt.Sprintf(" It is a process of %d steps (%s), run in order by the gateway, each an operation of its own (listed in steps):"+
				" it may wait for a person at a step, and a step that fails for good undoes the earlier ones as the firm declared (state compensated)."+
				" Follow it with get_operation and wait_seconds.", len(def.Steps), strings.Join(def.StepIntents(), ", "))
		}
	} else {
		ann.ReadOnlyHint = true
		desc += " It only reads: it changes nothing and needs no operation_key; call it again as often as needed."
	}
	return &mcp.Tool{
		Name:         def.Name,
		Title:        def.Title.EN,
		Description:  desc,
		OutputSchema: answerSchema,
		InputSchema: map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             required,
			"properties":           props,
		},
		Annotations: ann,
	}
}

// callIntent answers a call of in's tool through POST /v1/operations.
func (s *endpoint) callIntent(def *intent.Intent) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]json.RawMessage
		if err := json.Unmarshal(orEmpty(req.Params.Arguments), &args); err != nil || args == nil {
			return s.refused(codes.Validation, "", "the arguments must be a JSON object"), nil
		}
		envelope := map[string]json.RawMessage{
			"schema_version": json.RawMessage(`"1.0"`),
			"intent":         mustJSON(def.Name),
		}
		header := http.Header{}
		for name, v := range args {
			switch name {
			case "operation_key":
				var key string
				if err := json.Unmarshal(v, &key); err != nil {
					return s.refused(codes.Validation, "operation_key", "operation_key must be a string"), nil
				}
				header.Set("Idempotency-Key", key)
			case "payload", "actor_id", "mode", "plan_hash":
				envelope[name] = v
			default:
				return s.refused(codes.UnknownField, name, "no such argument: "+name), nil
			}
		}
		if _, ok := args["operation_key"]; !ok && def.Journaled && string(args["mode"]) != `"validate"` {
			// Told in MCP's words, not the HTTP API's (a header, request_id),
			// with an example in this gateway's contour.
			return s.refused(codes.KeyMissing, "operation_key", fmt.Sprintf(
				"%s changes a business system, so it needs operation_key: make one per business intent, e.g. %s:%s:<business id>:v1, and send the same operation_key on every retry of it",
				def.Name, s.Contour, def.Name)), nil
		}
		body, err := json.Marshal(envelope)
		if err != nil {
			return nil, err
		}
		header.Set("Content-Type", "application/json")
		return s.callAPI(ctx, req, http.MethodPost, "/v1/operations", body, header), nil
	}
}

// callGetOperation answers get_operation through GET /v1/operations/{key}.
func (s *endpoint) callGetOperation(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Key  string `json:"operation_key"`
		Wait int    `json:"wait_seconds"`
	}
	dec := json.NewDecoder(bytes.NewReader(orEmpty(req.Params.Arguments)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return s.refused(codes.Validation, "", "the arguments must be {\"operation_key\": \"...\", \"wait_seconds\": 0-60}"), nil
	}
	if args.Key == "" {
		return s.refused(codes.Validation, "operation_key", "operation_key is required"), nil
	}
	if args.Wait < 0 || args.Wait > 60 {
		return s.refused(codes.Validation, "wait_seconds", "wait_seconds is a whole number of seconds from 0 to 60"), nil
	}
	path := "/v1/operations/" + url.PathEscape(args.Key)
	if args.Wait > 0 {
		path += "?wait=" + strconv.Itoa(args.Wait)
	}
	return s.callAPI(ctx, req, http.MethodGet, path, nil, http.Header{}), nil
}

// callAPI runs one request through the gateway's own HTTP handler with the
// caller's credentials and turns the answer into a tool result: the API's
// JSON answer as the structured content (and as text for models that read
// only text), an error result for any 4xx or 5xx, and the HTTP status and
// Retry-After in _meta.
func (s *endpoint) callAPI(ctx context.Context, req *mcp.CallToolRequest, method, path string, body []byte, header http.Header) *mcp.CallToolResult {
	r, err := http.NewRequestWithContext(s.InProcess(ctx), method, path, bytes.NewReader(body))
	if err != nil {
		return s.refused(codes.Validation, "", "the request could not be formed")
	}
	if req.Extra != nil {
		header.Set("Authorization", req.Extra.Header.Get("Authorization"))
	}
	r.Header = header
	if len(body) > 0 {
		r.ContentLength = int64(len(body))
	}
	w := &recorder{header: http.Header{}, status: http.StatusOK}
	s.API.ServeHTTP(w, r)
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: w.body.String()}},
		StructuredContent: json.RawMessage(w.body.Bytes()),
		IsError:           w.status >= 400,
		Meta:              mcp.Meta{"http_status": w.status},
	}
	if ra, err := strconv.Atoi(w.header.Get("Retry-After")); err == nil {
		res.Meta["retry_after_seconds"] = ra
	}
	if w.header.Get("Idempotent-Replayed") == "true" {
		res.Meta["replayed"] = true
	}
	return res
}

// refused is a refusal made before the API is asked, in the API's own
// answer shape.
func (s *endpoint) refused(code, field, message string) *mcp.CallToolResult {
	status, body := s.Refusal(codes.New(code, field, message))
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(body)}},
		StructuredContent: json.RawMessage(body),
		IsError:           true,
		Meta:              mcp.Meta{"http_status": status},
	}
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(`{}`)
	}
	return raw
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// recorder is the http.ResponseWriter of an in-process API request.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	wrote  bool
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if !w.wrote {
		w.status, w.wrote = status, true
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.wrote = true
	return w.body.Write(b)
}

// schemaDescription is what the tool does: the payload schema's own
// description, a sentence written for agents, or else the intent's
// one-line description.
func schemaDescription(def *intent.Intent) string {
	var s struct {
		Description string `json:"description"`
	}
	if json.Unmarshal(def.Schema, &s) == nil && strings.TrimSpace(s.Description) != "" {
		d := strings.TrimSpace(s.Description)
		if !strings.HasSuffix(d, ".") {
			d += "."
		}
		return d
	}
	return fmt.Sprintf("Performs %s: %s.", def.Name, strings.TrimSuffix(def.Description, "."))
}
