package server_test

import (
	"encoding/json"
	"github.com/oncegate/oncegate/server/config/configtest"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/config"
)

// servedOpenAPI is the document g serves, decoded.
func servedOpenAPI(t *testing.T, g *gateway) map[string]any {
	t.Helper()
	served := g.do("GET", "/v1/openapi.json", "", nil, nil)
	if served.Code != 200 {
		t.Fatalf("GET /v1/openapi.json: %d", served.Code)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(served.Raw), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// dig walks v along path (object members, or array indexes), failing
// when a step is missing.
func dig(t *testing.T, v any, path ...string) any {
	t.Helper()
	for i, p := range path {
		switch m := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = m[p]; !ok {
				t.Fatalf("%s is missing", strings.Join(path[:i+1], "/"))
			}
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n >= len(m) {
				t.Fatalf("%s is missing", strings.Join(path[:i+1], "/"))
			}
			v = m[n]
		default:
			t.Fatalf("%s is not an object", strings.Join(path[:i], "/"))
		}
	}
	return v
}

// Every number in every schema the served OpenAPI document holds — the
// built-in intents', a declared intent's, the answers' — says its width:
// a non-integer number is a double (a generator's float32 would send
// 999999.999 as 1000000), an integer int32 or int64.
func TestOpenAPINumbersHaveFormats(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.IntentsDir = configtest.Dir(t, map[string]string{"purchase_order.create_draft.v1.yaml": purchaseOrder})
	g := setupWith(t, cfg)
	doc := servedOpenAPI(t, g)
	var seen int
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			types := []any{v["type"]}
			if list, ok := v["type"].([]any); ok {
				types = list
			}
			for _, typ := range types {
				switch typ {
				case "number":
					seen++
					if v["format"] != "double" && v["format"] != "float" {
						t.Errorf("%s: a number without format double: %v", path, v)
					}
				case "integer":
					seen++
					if v["format"] != "int32" && v["format"] != "int64" {
						t.Errorf("%s: an integer without format int32 or int64: %v", path, v)
					}
				}
			}
			for k, child := range v {
				if k != "example" && k != "examples" && k != "const" && k != "enum" && k != "default" {
					walk(path+"/"+k, child)
				}
			}
		case []any:
			for i, child := range v {
				walk(path+"/"+strconv.Itoa(i), child)
			}
		}
	}
	walk("#", doc)
	if seen == 0 {
		t.Fatal("no number in the document")
	}
	// The declared intent's quantity, which its file gives no format.
	qty := dig(t, doc, "components", "schemas", "PurchaseOrderCreateDraftPayload", "properties", "items", "items", "properties", "quantity").(map[string]any)
	if qty["format"] != "double" {
		t.Errorf("the declared quantity has format %v, want double", qty["format"])
	}
}

// The quantity bound the document shows is the one the gateway enforces:
// the definition's limit by default, the configuration's when it sets
// one, and the request just over it is the 422 LIMIT_EXCEEDED the
// document's 422 names.
func TestOpenAPIShowsEffectiveLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		limit float64 // 0: the definition's
		want  float64
	}{
		{"definition", 0, 1000000},
		{"configuration", 500, 500},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			if c.limit > 0 {
				cfg.Limits = map[string]config.IntentLimits{"invoice.create": {MaxQuantity: c.limit}}
			}
			g := setupWith(t, cfg)
			doc := servedOpenAPI(t, g)
			qty := dig(t, doc, "components", "schemas", "InvoiceCreatePayload", "properties", "items", "items", "properties", "quantity").(map[string]any)
			if got := qty["maximum"]; got != c.want {
				t.Errorf("the served quantity's maximum is %v, the gateway's limit %v", got, c.want)
			}
			if desc, _ := qty["description"].(string); !strings.Contains(desc, "LIMIT_EXCEEDED") || !strings.Contains(desc, strconv.FormatFloat(c.want, 'f', -1, 64)) {
				t.Errorf("the served quantity's description does not name the limit: %q", desc)
			}
			if desc := dig(t, doc, "paths", "/v1/operations", "post", "responses", "422", "description").(string); !strings.Contains(desc, "LIMIT_EXCEEDED") {
				t.Errorf("the 422's description does not name LIMIT_EXCEEDED: %q", desc)
			}

			// A price of one kopeck keeps the total under its own ceiling.
			cheap := func(order string, quantity float64) map[string]any {
				env := withMode(invoice(order, quantity), "validate")
				env["payload"].(map[string]any)["items"].([]any)[0].(map[string]any)["price_minor"] = 1
				return env
			}
			at := g.post("test:invoice.create:order-limit-1:v1", cheap("order-limit-1", c.want))
			expect(t, at, http.StatusOK, "valid", "")
			over := g.post("test:invoice.create:order-limit-2:v1", cheap("order-limit-2", c.want+1))
			expect(t, over, http.StatusUnprocessableEntity, "rejected", "LIMIT_EXCEEDED")
			if got, want := over.errField(), "items[0].quantity"; got != want {
				t.Errorf("LIMIT_EXCEEDED names %q, want %q", got, want)
			}
		})
	}
}

// "Try it" against the served document works: its request example, sent
// as it is with its Idempotency-Key example, succeeds at this gateway —
// every key the document shows is in this gateway's contour.
func TestOpenAPIExamplesInContour(t *testing.T) {
	t.Parallel()
	g := setup(t) // contour test
	served := g.do("GET", "/v1/openapi.json", "", nil, nil)
	if strings.Contains(served.Raw, "prod:") {
		i := strings.Index(served.Raw, "prod:")
		t.Errorf("the document of a test gateway shows a prod key: …%s…", served.Raw[max(0, i-80):min(len(served.Raw), i+80)])
	}
	doc := servedOpenAPI(t, g)
	post := dig(t, doc, "paths", "/v1/operations", "post").(map[string]any)
	key := dig(t, post, "parameters", "0", "example").(string)
	if dig(t, post, "parameters", "0", "name") != "Idempotency-Key" || !strings.HasPrefix(key, "test:") {
		t.Fatalf("Idempotency-Key example %q", key)
	}
	example := dig(t, post, "requestBody", "content", "application/json", "examples", "invoice.create", "value")
	body, _ := json.Marshal(example)
	r := g.do("POST", "/v1/operations", g.token, map[string]string{"Idempotency-Key": key}, body)
	expect(t, r, http.StatusOK, "succeeded", "")
	get := dig(t, doc, "paths", "/v1/operations/{key}", "get", "parameters", "0", "example").(string)
	expect(t, g.do("GET", "/v1/operations/"+get, g.token, nil, nil), http.StatusOK, "succeeded", "")
}
