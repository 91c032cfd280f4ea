package adapterstest

// The recorded-wire corpus: request/answer exchanges of a target's real API,
// transcribed from its public documentation, recordings and live-probe
// write-ups into an adapter's testdata/wire/. Two tests of each target read
// it: the adapter against a server that replays it (ReplayWire), and the
// simulator answering its requests (CompareWire), so that an adapter and a
// simulator written from one understanding cannot drift from the real API
// together.
//
// A file holds one exchange:
//
//	# free comment lines; "# key: value" lines are the exchange's fields:
//	# source: where it comes from (one line per source), read: the date
//	# assumption: what no source shows and why it is taken so
//	# match: body.fields.ORIGIN_ID query.limit  (what a replay compares)
//	# simulator: why the simulator does not play it (only when it does not)
//	# compare: description  (answer fields a simulator must repeat word for word)
//
//	POST /v3/payments
//	Content-Type: application/json
//
//	{"request": "body"}
//
//	HTTP/1.1 200 OK
//	Content-Type: application/json
//
//	{"answer": "body"}

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// WireExchange is one recorded request and its answer.
type WireExchange struct {
	Name   string              // the file name without .txt
	Fields map[string][]string // "# key: value" comment lines, by key
	Method string
	Path   string     // without the query
	Query  url.Values // of the request line
	Header http.Header
	Body   []byte // of the request; may be empty

	Status     int
	RespHeader http.Header
	RespBody   []byte
}

// Field is the first value of a comment field, or "".
func (e WireExchange) Field(key string) string {
	if v := e.Fields[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// LoadWire reads every *.txt exchange of dir, failing tb on a file that
// is not one or that names no source and no assumption.
func LoadWire(tb testing.TB, dir string) map[string]WireExchange {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("no wire corpus in %s (%v)", dir, err)
	}
	out := map[string]WireExchange{}
	for _, name := range names {
		raw, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		e, err := parseWire(strings.TrimSuffix(filepath.Base(name), ".txt"), raw)
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		if len(e.Fields["source"]) == 0 && len(e.Fields["assumption"]) == 0 {
			tb.Fatalf("%s names neither a source nor an assumption", name)
		}
		if len(e.Fields["source"]) > 0 && e.Field("read") == "" {
			tb.Fatalf("%s names a source but not when it was read (# read: YYYY-MM-DD)", name)
		}
		out[e.Name] = e
	}
	return out
}

// wireFields are the comment fields an exchange file may have; other
// comment lines are free text.
var wireFields = map[string]bool{"source": true, "read": true, "assumption": true, "match": true, "simulator": true, "compare": true}

// parseWire reads one exchange file.
func parseWire(name string, raw []byte) (WireExchange, error) {
	e := WireExchange{Name: name, Fields: map[string][]string{}, Header: http.Header{}, RespHeader: http.Header{}}
	lines := strings.Split(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n")
	i := 0
	for ; i < len(lines) && (strings.HasPrefix(lines[i], "#") || strings.TrimSpace(lines[i]) == ""); i++ {
		text := strings.TrimSpace(strings.TrimPrefix(lines[i], "#"))
		if k, v, ok := strings.Cut(text, ":"); ok && wireFields[k] {
			e.Fields[k] = append(e.Fields[k], strings.TrimSpace(v))
		}
	}
	if i == len(lines) {
		return e, fmt.Errorf("no request line")
	}
	method, target, ok := strings.Cut(strings.TrimSpace(lines[i]), " ")
	if !ok || method == "" || !strings.HasPrefix(target, "/") {
		return e, fmt.Errorf("request line %q is not METHOD /path", lines[i])
	}
	u, err := url.Parse(target)
	if err != nil {
		return e, fmt.Errorf("request target: %w", err)
	}
	e.Method, e.Path, e.Query = method, u.Path, u.Query()
	i = wireHeaders(lines, i+1, e.Header)
	start := i
	for i < len(lines) && !strings.HasPrefix(lines[i], "HTTP/") {
		i++
	}
	if i == len(lines) {
		return e, fmt.Errorf("no answer (a line HTTP/1.1 <status>)")
	}
	e.Body = []byte(strings.TrimSpace(strings.Join(lines[start:i], "\n")))
	f := strings.Fields(lines[i])
	if len(f) < 2 {
		return e, fmt.Errorf("status line %q has no status", lines[i])
	}
	if e.Status, err = strconv.Atoi(f[1]); err != nil {
		return e, fmt.Errorf("status line %q: %w", lines[i], err)
	}
	i = wireHeaders(lines, i+1, e.RespHeader)
	e.RespBody = []byte(strings.TrimSpace(strings.Join(lines[i:], "\n")))
	for _, b := range [][]byte{e.Body, e.RespBody} {
		if len(b) > 0 && !json.Valid(b) {
			return e, fmt.Errorf("a body is not JSON: %.60s", b)
		}
	}
	return e, nil
}

// wireHeaders reads "Name: value" lines from i to the first blank line
// and returns the index after it.
func wireHeaders(lines []string, i int, h http.Header) int {
	for ; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" {
			return i + 1
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return i
}

// Matches reports whether a request the adapter sent is this exchange's:
// the same method and path, and every "# match:" item equal — body.<path>
// a value of the JSON body (scalars compared as text, so 3 and "3" are
// one), query.<key> a query value.
func (e WireExchange) Matches(method, path string, query url.Values, body []byte) bool {
	if method != e.Method || path != e.Path {
		return false
	}
	var got, want any
	for _, item := range strings.Fields(strings.Join(e.Fields["match"], " ")) {
		switch {
		case strings.HasPrefix(item, "query."):
			k := strings.TrimPrefix(item, "query.")
			if query.Get(k) != e.Query.Get(k) || e.Query.Get(k) == "" {
				return false
			}
		case strings.HasPrefix(item, "body."):
			if got == nil {
				if json.Unmarshal(body, &got) != nil || json.Unmarshal(e.Body, &want) != nil {
					return false
				}
			}
			p := strings.TrimPrefix(item, "body.")
			w, ok := WirePath(want, p)
			g, ok2 := WirePath(got, p)
			if !ok || !ok2 || wireText(g) != wireText(w) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// WirePath finds a dotted path (a.b.0.c) in a decoded JSON value.
func WirePath(v any, path string) (any, bool) {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			n, err := strconv.Atoi(k)
			if err != nil || n < 0 || n >= len(x) {
				return nil, false
			}
			v = x[n]
		default:
			return nil, false
		}
	}
	return v, true
}

func wireText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// WireReplay is a server answering requests with the recorded answers of
// the exchanges mounted on it.
type WireReplay struct {
	URL string
	mu  sync.Mutex
	// Served counts the answers given, by exchange name.
	Served map[string]int
}

// ReplayWire serves exchanges on a loopback server; its URL plus prefix
// is where the adapter is pointed, so the adapter's request paths are the
// recorded ones. A request is answered with the recorded answer of the
// first exchange it matches, in the order given; one that matches none
// fails tb and is answered 501.
func ReplayWire(tb testing.TB, prefix string, exchanges ...WireExchange) *WireReplay {
	tb.Helper()
	rp := &WireReplay{Served: map[string]int{}}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		path := r.URL.Path
		for _, e := range exchanges {
			if !e.Matches(r.Method, path, r.URL.Query(), body) {
				continue
			}
			rp.mu.Lock()
			rp.Served[e.Name]++
			rp.mu.Unlock()
			for k, vs := range e.RespHeader {
				for _, v := range vs {
					w.Header().Add(k, v)
				}
			}
			w.WriteHeader(e.Status)
			w.Write(e.RespBody)
			return
		}
		tb.Errorf("no recorded exchange for %s %s?%s %s", r.Method, path, r.URL.RawQuery, clipWire(body))
		w.WriteHeader(http.StatusNotImplemented)
	}))
	tb.Cleanup(hs.Close)
	rp.URL = hs.URL + prefix
	return rp
}

// Count is how many times the exchange was answered.
func (rp *WireReplay) Count(name string) int {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.Served[name]
}

func clipWire(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// WireShape lists how a simulator's answer departs from a recorded one
// in what an adapter reads. Each of read is a dotted path ("*" for every
// element of an array): where the recording has a non-null value there,
// the answer must have one of the same JSON kind; for the paths also in
// exact, the same value. The exchange's "# compare:" paths are compared
// exactly too, read or not.
func (e WireExchange) WireShape(got []byte, read, exact []string) []string {
	more := strings.Fields(strings.Join(e.Fields["compare"], " "))
	return WireShape(e.RespBody, got, append(append([]string(nil), read...), more...), append(append([]string(nil), exact...), more...))
}

// WireShape compares a recorded answer and a simulator's as
// (WireExchange).WireShape does, with no "# compare:" paths.
func WireShape(recorded, got []byte, read, exact []string) []string {
	var rec, ans any
	if len(recorded) == 0 {
		return nil
	}
	if err := json.Unmarshal(recorded, &rec); err != nil {
		return []string{"the recording is not JSON"}
	}
	if err := json.Unmarshal(got, &ans); err != nil {
		return []string{fmt.Sprintf("the answer is not JSON: %.80s", got)}
	}
	isExact := map[string]bool{}
	for _, p := range exact {
		isExact[p] = true
	}
	var diffs []string
	for _, p := range read {
		for _, pair := range wireExpand(rec, ans, p) {
			r, a, at := pair.rec, pair.ans, pair.path
			if r == nil {
				continue
			}
			if !pair.found {
				diffs = append(diffs, at+": missing (recorded "+clipWire([]byte(wireText(r)))+")")
				continue
			}
			if wireKind(r) != wireKind(a) {
				diffs = append(diffs, fmt.Sprintf("%s: %s %s, recorded %s %s", at, wireKind(a), clipWire([]byte(wireText(a))), wireKind(r), clipWire([]byte(wireText(r)))))
				continue
			}
			if isExact[p] && wireText(r) != wireText(a) {
				diffs = append(diffs, fmt.Sprintf("%s: %q, recorded %q", at, wireText(a), wireText(r)))
			}
		}
	}
	sort.Strings(diffs)
	return diffs
}

type wirePair struct {
	path     string
	rec, ans any
	found    bool
}

// wireExpand resolves path in both values, "*" standing for every element
// of the recorded array (matched to the answer's first element: lists are
// compared by the shape of their rows, not row by row).
func wireExpand(rec, ans any, path string) []wirePair {
	head, rest, more := strings.Cut(path, ".*")
	r, ok := WirePath(rec, head)
	if !ok {
		return nil
	}
	a, found := WirePath(ans, head)
	if !more {
		return []wirePair{{path: path, rec: r, ans: a, found: found}}
	}
	ra, _ := r.([]any)
	aa, _ := a.([]any)
	if len(ra) == 0 {
		return nil
	}
	if len(aa) == 0 {
		return []wirePair{{path: head, rec: r, ans: a, found: false}}
	}
	rest = strings.TrimPrefix(rest, ".")
	var out []wirePair
	for _, el := range ra {
		if rest == "" {
			out = append(out, wirePair{path: path, rec: el, ans: aa[0], found: true})
			continue
		}
		for _, p := range wireExpand(el, aa[0], rest) {
			p.path = head + ".*." + p.path
			out = append(out, p)
		}
	}
	return out
}

func wireKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// WireRequest builds the recorded request for a server at base (the
// simulator's mount point), with each of replace's old texts replaced by
// its new one in the path, query and body: ids the simulator gave in
// place of the recording's.
func WireRequest(tb testing.TB, base string, e WireExchange, replace map[string]string) *http.Request {
	tb.Helper()
	path, body := e.Path, string(e.Body)
	q := e.Query.Encode()
	for old, repl := range replace {
		path = strings.ReplaceAll(path, old, repl)
		body = strings.ReplaceAll(body, old, repl)
		q = strings.ReplaceAll(q, url.QueryEscape(old), url.QueryEscape(repl))
	}
	target := base + path
	if q != "" {
		target += "?" + q
	}
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(e.Method, target, rd)
	if err != nil {
		tb.Fatal(err)
	}
	for k, vs := range e.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return req
}

// WireDo sends req and reads the answer, failing tb on a transport error.
func WireDo(tb testing.TB, req *http.Request) (int, []byte) {
	tb.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, b
}
