// Package wirecorpus reads the recorded-wire corpus of 1C's standard OData
// interface (adapters/onecodata/testdata/wire): request and answer
// exchanges transcribed from 1C's documentation, public clients and live
// probe write-ups, each file naming its source, its date and what is an
// assumption. Two tests read it: the adapter against a server replaying
// it, and the simulator answering its requests the same way.
package wirecorpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Exchange is one request and the answer 1C gives it.
type Exchange struct {
	// Comment names the source and its date, and what is assumed.
	Comment []string `json:"//"`
	Name    string   `json:"name"`
	// Sim is the simulator's settings under which it answers so (POST
	// /_sim/onec_odata/settings); Given the exchanges that come first.
	Sim     json.RawMessage `json:"sim"`
	Given   []string        `json:"given"`
	Request Request         `json:"request"`
	Answer  Answer          `json:"answer"`
}

// Request is what is sent: the path below the standard interface's root
// with its query as 1C's documentation writes it (unencoded), the body,
// "xml" when JSON is not asked for, "wrong" for a refused password.
type Request struct {
	Method   string         `json:"method"`
	Path     string         `json:"path"`
	Body     map[string]any `json:"body"`
	Accept   string         `json:"accept"`
	Password string         `json:"password"`
}

// Answer is what 1C answers: a status, headers, a JSON body or an XML
// one, and what a comparison looks at beyond the status and 1C's error
// code: properties whose values must be the same (Compare), the length
// of a collection (CompareList), properties that must be absent, and
// whether the entity's Ref_Key is another than the one sent (OtherKey).
type Answer struct {
	Status      int               `json:"status"`
	Headers     map[string]string `json:"headers"`
	Body        json.RawMessage   `json:"body"`
	XML         string            `json:"xml"`
	ContentType string            `json:"content_type"`
	Code        string            `json:"code"`
	Compare     []string          `json:"compare"`
	CompareList int               `json:"compare_list"`
	Absent      []string          `json:"absent"`
	OtherKey    bool              `json:"other_key"`
}

// Load reads every exchange in dir by its file name, refusing a file
// that does not name its source.
func Load(dir string) (map[string]Exchange, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no corpus in %s: %v", dir, err)
	}
	out := map[string]Exchange{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var ex Exchange
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ex); err != nil {
			return nil, fmt.Errorf("%s: %v", filepath.Base(f), err)
		}
		if len(ex.Comment) == 0 || !strings.HasPrefix(ex.Comment[0], "source: ") || ex.Answer.Status == 0 {
			return nil, fmt.Errorf("%s: an exchange names its source first and has an answer's status", filepath.Base(f))
		}
		out[filepath.Base(f)] = ex
	}
	return out, nil
}

// Fill replaces the placeholders: {ref} by the key of the test, {own} by
// a key 1C chose, {base} by the standard interface's root URL.
func Fill(s, ref, own, base string) string {
	return strings.NewReplacer("{ref}", ref, "{own}", own, "{base}", base).Replace(s)
}

// FillJSON is Fill over a JSON value's text.
func FillJSON(raw json.RawMessage, ref, own, base string) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	return json.RawMessage(Fill(string(raw), ref, own, base))
}

// Canonical is a path and query as a comparable string, the options
// sorted. Sent (decoded true), only the bytes a URL must encode are
// decoded: letters beyond ASCII (the configuration's Cyrillic names) and
// spaces. 1C's documentation writes a key's parentheses and quotes and an
// option's '$' literally, and an encoded one (%28guid%27, %24filter)
// stays encoded here, so it matches no exchange.
func Canonical(rawPath, rawQuery string, decoded bool) string {
	path, query := rawPath, rawQuery
	if decoded {
		path = letters(path)
	}
	var pairs []string
	if query != "" {
		for _, kv := range strings.Split(query, "&") {
			if decoded {
				kv = letters(kv)
			}
			pairs = append(pairs, kv)
		}
	}
	slices.Sort(pairs)
	if len(pairs) == 0 {
		return path
	}
	return path + "?" + strings.Join(pairs, "&")
}

// letters decodes the percent-encoded bytes of s that are a space or not
// ASCII, leaving every other escape as sent.
func letters(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil && (v >= 0x80 || v == 0x20) {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Split cuts a corpus path into its path and query.
func Split(p string) (string, string) {
	path, query, _ := strings.Cut(p, "?")
	return path, query
}
