package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxDepth bounds the nesting of any JSON this package decodes; the contract needs
// three levels, the rest is headroom.
const maxDepth = 32

// Reasons decodeStrict refuses its input.
var (
	errNotJSON = errors.New("not valid JSON")
	errNotUTF8 = errors.New("not valid UTF-8")
	errTooDeep = errors.New("nested too deeply")
)

// dupKeyError is a member name that occurs twice in one JSON object.
type dupKeyError struct {
	Path string // field path of the object holding the duplicate, "" at the top
	Key  string
}

// Field is the field path of the duplicate member.
func (e *dupKeyError) Field() string {
	if e.Path == "" {
		return e.Key
	}
	return e.Path + "." + e.Key
}

func (e *dupKeyError) Error() string { return "duplicate key " + strconv.Quote(e.Key) }

// controlError is a string (or member name) holding a control character
// inside its text: NUL, a line break, an escape. No field of any intent is multi-line
// text, and such characters in what people read (the approval page, the
// audit trail, logs, a CSV export) forge lines or hide text.
type controlError struct {
	Field string // field path of the string, or of the member named with it
	Rune  rune
}

func (e *controlError) Error() string {
	return fmt.Sprintf("control character U+%04X in %s", e.Rune, e.Field)
}

// controlRune returns the first control character (Unicode category Cc:
// C0, DEL, C1) in s, if any, leaving out white space around the text:
// Normalize trims that (a trailing line break is a common slip, and a
// request sent so before must still match its key's fingerprint).
func controlRune(s string) (rune, bool) {
	for _, r := range strings.TrimSpace(s) {
		if unicode.IsControl(r) {
			return r, true
		}
	}
	return 0, false
}

// decodeStrict decodes one JSON value into map[string]any, []any, string, json.Number,
// bool and nil. It refuses invalid JSON or UTF-8, trailing data, nesting deeper than
// maxDepth, and duplicate member names at any level (*dupKeyError): JSON parsers
// disagree on which duplicate wins, so such input is ambiguous.
//
// The syntax is checked whole first (json.Valid), so a malformed body is errNotJSON
// whatever else it holds; the walk that builds the value then reads input known to be
// well-formed, one byte at a time, without encoding/json's token stream (which made an
// error value for the end of every number and literal).
func decodeStrict(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, errNotUTF8
	}
	if !json.Valid(data) { // also refuses trailing data
		return nil, errNotJSON
	}
	w := walker{data: data}
	return w.value("", 0)
}

// walker reads a value out of well-formed JSON (json.Valid holds for data).
type walker struct {
	data []byte
	i    int
}

func (w *walker) space() {
	for w.i < len(w.data) {
		switch w.data[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value reads the value at the next non-space byte; path is its field path and depth
// its nesting.
func (w *walker) value(path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	w.space()
	switch w.data[w.i] {
	case '{':
		w.i++
		obj := map[string]any{}
		for {
			w.space()
			if w.data[w.i] == '}' {
				w.i++
				return obj, nil
			}
			if w.data[w.i] == ',' {
				w.i++
				w.space()
			}
			k, err := w.str()
			if err != nil {
				return nil, err
			}
			child, err := member(obj, path, k)
			if err != nil {
				return nil, err
			}
			w.space()
			w.i++ // ':'
			v, err := w.value(child, depth+1)
			if err != nil {
				return nil, err
			}
			obj[k] = v
		}
	case '[':
		w.i++
		arr := []any{}
		for {
			w.space()
			switch w.data[w.i] {
			case ']':
				w.i++
				return arr, nil
			case ',':
				w.i++
			}
			v, err := w.value(path+"["+strconv.Itoa(len(arr))+"]", depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
	case '"':
		s, err := w.str()
		if err != nil {
			return nil, err
		}
		if r, ok := controlRune(s); ok {
			return nil, &controlError{Field: path, Rune: r}
		}
		return s, nil
	case 't':
		w.i += len("true")
		return true, nil
	case 'f':
		w.i += len("false")
		return false, nil
	case 'n':
		w.i += len("null")
		return nil, nil
	}
	start := w.i
	for w.i < len(w.data) && strings.IndexByte("+-.0123456789eE", w.data[w.i]) >= 0 {
		w.i++
	}
	return json.Number(w.data[start:w.i]), nil
}

// str reads the string at w.i (its opening quote), unescaped as encoding/json
// unescapes it.
func (w *walker) str() (string, error) {
	start, escaped := w.i, false
	w.i++
	for ; w.data[w.i] != '"'; w.i++ {
		if w.data[w.i] == '\\' {
			escaped = true
			w.i++ // the escaped byte, which may be a quote
		}
	}
	w.i++
	raw := w.data[start:w.i]
	if !escaped {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errNotJSON
	}
	return s, nil
}

// fieldPath renders a location inside root as a field path: object members dotted,
// array elements as [i] ("items[0].quantity"). Whether a step is an array index is read
// from root itself, so a member named "0" stays a member.
func fieldPath(root any, loc []string) string {
	var b []byte
	cur := root
	for _, step := range loc {
		switch c := cur.(type) {
		case []any:
			b = append(b, '[')
			b = append(b, step...)
			b = append(b, ']')
			if i, err := strconv.Atoi(step); err == nil && i >= 0 && i < len(c) {
				cur = c[i]
			} else {
				cur = nil
			}
		default:
			if len(b) > 0 {
				b = append(b, '.')
			}
			b = append(b, step...)
			if m, ok := c.(map[string]any); ok {
				cur = m[step]
			} else {
				cur = nil
			}
		}
	}
	return string(b)
}

// fieldPathIn is fieldPath followed by a member name; "" loc gives the bare name.
func fieldPathIn(root any, loc []string, member string) string {
	if p := fieldPath(root, loc); p != "" {
		return p + "." + member
	}
	return member
}

// member checks the name k of a member of obj, an object at path, before
// its value is read: a name given twice or holding a control character is
// refused. It returns the member's path.
func member(obj map[string]any, path, k string) (string, error) {
	if _, dup := obj[k]; dup {
		return "", &dupKeyError{Path: path, Key: k}
	}
	child := k
	if path != "" {
		child = path + "." + k
	}
	if r, ok := controlRune(k); ok {
		return "", &controlError{Field: child, Rune: r}
	}
	return child, nil
}
