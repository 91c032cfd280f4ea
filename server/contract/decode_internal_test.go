package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeStrict reads the body walking well-formed bytes itself; it must
// answer exactly what a walk over encoding/json's token stream answers —
// the same value, or the same refusal with the same field.
func FuzzDecodeStrictAsTokens(f *testing.F) {
	for _, s := range []string{
		`{"schema_version":"1.0","intent":"invoice.create","payload":{"order_id":"o-1","items":[{"quantity":2.50,"price_minor":-1e3}],"due":null,"ok":true,"no":false}}`,
		`{"a":{"b":[1,[2,{"c":"\u0000"}]]}}`, `{"a":1,"a":2}`, `{"x":{"y":1,"y":2}}`, `[{"k\n":1}]`,
		`{"s":"\ud83d\ude00 \"q\" \\ \/ \t"}`, `{"s":"\ud800"}`, ` [ ] `, `{}`, `"x"`, `0`, `-0.0e+1`, `{"a":1}{`, `{"a":1,}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, "{\"a\":\"\xff\"}", `{"a" : [ 1 , 2 ] , "b" : "c" }`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gotErr := decodeStrict(data)
		want, wantErr := decodeStrictTokens(data)
		if fmt.Sprintf("%#v", gotErr) != fmt.Sprintf("%#v", wantErr) {
			t.Fatalf("%q: error %#v, want %#v", data, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %#v, want %#v", data, got, want)
		}
	})
}

// decodeStrictTokens is decodeStrict as it was written over encoding/json's
// token stream, kept as the reference the walk is compared with.
func decodeStrictTokens(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, errNotUTF8
	}
	if !json.Valid(data) { // also refuses trailing data
		return nil, errNotJSON
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeTokens(dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errNotJSON
	}
	return v, nil
}

// decodeValue reads the value starting at the decoder's next token; path is its field
// path and depth its nesting.
func decodeTokens(dec *json.Decoder, path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, errNotJSON
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := map[string]any{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, errNotJSON
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errNotJSON
				}
				child, err := member(obj, path, k)
				if err != nil {
					return nil, err
				}
				v, err := decodeTokens(dec, child, depth+1)
				if err != nil {
					return nil, err
				}
				obj[k] = v
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, errNotJSON
			}
			return obj, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeTokens(dec, path+"["+strconv.Itoa(len(arr))+"]", depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, errNotJSON
			}
			return arr, nil
		}
		return nil, errNotJSON
	case string:
		if r, ok := controlRune(t); ok {
			return nil, &controlError{Field: path, Rune: r}
		}
		return t, nil
	case json.Number, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %T", tok)
}

// compareUTF16 compares without converting; it orders as the comparison of
// the strings' UTF-16 encodings, which RFC 8785 names.
func FuzzCompareUTF16(f *testing.F) {
	for _, p := range [][2]string{{"a", "b"}, {"\U0001F600", "\uFFFD"}, {"\uE000", "\U00010000"}, {"ab", "a"}, {"", "x"},
		{"\U0001F600", "\U0001F601"}, {"\U00010400", "\U0001F600"}, {"x\xff", "x\uFFFD"}, {"é", "e\u0301"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := compareUTF16(a, b); got != want {
			t.Fatalf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
		}
	})
}
