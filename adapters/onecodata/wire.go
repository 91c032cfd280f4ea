package onecodata

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// odataError is 1C's error: JSON {"odata.error": {"code", "message":
// {"value"}}} or the XML <m:error> of 17.4.10. Code is "" when the body
// is neither (a proxy's HTML page, an empty body).
type odataError struct {
	Status  int
	Code    string
	Message string
}

// OData error codes the adapter tells apart (17.4.10).
const (
	odataNotFound = "9"
	odataQuery    = "14"
	odataKeyTaken = "15"
	odataRights   = "20"
	odataBusiness = "-1"
)

// entityURL is the URL of set, or of its entity with key, plus an action
// (Post) and a query, written as 1C's documentation writes it and the
// clients seen working send it: the key segment (guid'…') and the query's
// $-options literal, only the names and values percent-encoded (a space
// as %20: 1C answers a '+' with 400). Percent-encoded sub-delimiters
// (%28guid%27…, %24filter) are not the same URL under RFC 3986, and
// nothing shows 1C taking them.
func (c *Client) entityURL(set, key, action string, q url.Values) string {
	p := url.PathEscape(set)
	if key != "" {
		p += "(guid'" + url.PathEscape(key) + "')"
	}
	if action != "" {
		p += "/" + url.PathEscape(action)
	}
	return c.root + p + query(q)
}

// query is "?" and q's options in the order of their names, or "" when q
// is empty. A name keeps a leading '$' ($filter, $select, $format, $top);
// names and values are otherwise percent-encoded, except the characters
// of OData's own literal syntax that a query may carry as they are: the
// quotes of a string, the parentheses and commas of a list, a datetime's
// colons and a path's slash.
func query(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	var b strings.Builder
	for i, name := range slices.Sorted(maps.Keys(q)) {
		for j, v := range q[name] {
			if i > 0 || j > 0 {
				b.WriteByte('&')
			} else {
				b.WriteByte('?')
			}
			if rest, ok := strings.CutPrefix(name, "$"); ok {
				b.WriteString("$" + queryEscape(rest))
			} else {
				b.WriteString(queryEscape(name))
			}
			b.WriteByte('=')
			b.WriteString(queryEscape(v))
		}
	}
	return b.String()
}

// queryEscape percent-encodes s for a query, byte by byte (UTF-8), all
// but the unreserved characters of RFC 3986 and ' ( ) , : /.
func queryEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9',
			strings.IndexByte("-._~'(),:/", ch) >= 0:
			b.WriteByte(ch)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[ch>>4])
			b.WriteByte(hex[ch&0x0f])
		}
	}
	return b.String()
}

// request builds a call with Basic auth, asking for JSON.
func (c *Client) request(ctx context.Context, method, u string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, &adapters.Error{Class: adapters.Final, Code: codes.TargetRejected, Message: "the request to 1C could not be built", Err: errors.New("build request")}
	}
	if method == http.MethodPost {
		// IIS answers a POST without Content-Length 411; Post has no body.
		req.ContentLength = int64(len(body))
		if body == nil {
			req.Body = http.NoBody
		}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json;charset=utf-8")
	}
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(c.user, c.password)
	return req, nil
}

// send performs req; 1C refuses a second create with one Ref_Key, so a
// reset after sending is Retry, except where a key_field guards (1C
// itself refuses nothing there, and the create may have been written).
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := adapters.Send(c.http, req, c.DedupesByKey())
	if err != nil {
		var e *adapters.Error
		if errors.As(err, &e) && e.Err != nil {
			e.Err = errors.New(c.clean(e.Err.Error()))
		}
		return nil, err
	}
	return resp, nil
}

// call sends method to u and returns the status and the body read.
func (c *Client) call(ctx context.Context, method, u string, body []byte) (int, http.Header, []byte, error) {
	req, err := c.request(ctx, method, u, body)
	if err != nil {
		return 0, nil, nil, err
	}
	resp, err := c.send(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer adapters.Drain(resp)
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, nil, nil, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
			Message: "1C's answer broke off", Err: errors.New(c.clean(err.Error()))}
	}
	return resp.StatusCode, resp.Header, b, nil
}

// readAttempts bounds how often a read 1C answered with a 500 is made:
// the first and two more, readBackoff apart and twice that.
const (
	readAttempts = 3
	readBackoff  = 100 * time.Millisecond
)

// readCall GETs u. A 500 (1C's internal error, or a server's page) is no
// answer to a read, which changes nothing: it is made again, at most
// readAttempts times in all and within ctx, and one that persists is
// TARGET_UNAVAILABLE (Retry).
func (c *Client) readCall(ctx context.Context, u string) (int, http.Header, []byte, error) {
	for n := 1; ; n++ {
		status, h, body, err := c.call(ctx, http.MethodGet, u, nil)
		if err != nil || status != http.StatusInternalServerError {
			return status, h, body, err
		}
		cause := c.classify(parseError(status, body), h).Err
		wait := readBackoff << (n - 1)
		if dl, ok := ctx.Deadline(); n >= readAttempts || ok && time.Until(dl) < wait {
			return 0, nil, nil, &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable,
				Message: fmt.Sprintf("1C failed internally at a read, %d times in a row", n), Err: cause}
		}
		select {
		case <-ctx.Done():
			return 0, nil, nil, &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable,
				Message: "1C failed internally at a read", Err: cause}
		case <-time.After(wait):
		}
	}
}

// parseError reads 1C's error from a failed answer, in either shape.
func parseError(status int, body []byte) odataError {
	e := odataError{Status: status}
	var j struct {
		Err *struct {
			Code    json.RawMessage `json:"code"`
			Message struct {
				Value string `json:"value"`
			} `json:"message"`
		} `json:"odata.error"`
	}
	if json.Unmarshal(body, &j) == nil && j.Err != nil {
		var code any
		json.Unmarshal(j.Err.Code, &code)
		e.Code = strings.TrimSpace(fmt.Sprint(code))
		e.Message = j.Err.Message.Value
		return e
	}
	var x struct {
		XMLName xml.Name `xml:"error"`
		Code    string   `xml:"code"`
		Message string   `xml:"message"`
	}
	if xml.Unmarshal(body, &x) == nil && x.XMLName.Local == "error" && x.Code != "" {
		e.Code, e.Message = strings.TrimSpace(x.Code), x.Message
	}
	return e
}

// classify maps a failed answer onto the adapter's classes and the
// catalogue's codes, once for every call:
//
//   - code 15 under any 4xx: the key exists (Final TARGET_REJECTED here;
//     a create reads the document under the key, which settles it);
//   - 401, 403, or code 20 (rights; also a row-level restriction): the
//     gateway's user is refused (Misconfigured TARGET_PERMISSION_DENIED);
//   - 404 with code 9: the key is not there (Final NOT_FOUND, which the
//     callers turn into "not found" or a reference not found);
//   - any other 404 (an object not published, a wrong base_url, a proxy's
//     HTML page): Misconfigured TARGET_NOT_PUBLISHED;
//   - an internal error (internalError: 1C failed rather than refused):
//     Reconcile OUTCOME_UNKNOWN, a write settled by a look-up of its key;
//     a read is made again a few times first (readCall);
//   - code -1 (the configuration's own refusal: a check or a uniqueness
//     rule in its ПередЗаписью or ОбработкаПроверкиЗаполнения): Final
//     TARGET_REJECTED with the message, trimmed and safe; the callers that
//     know better (posting) give their own code;
//   - code 14 (a query 1C cannot parse) and other 4xx with 1C's body:
//     Final TARGET_REJECTED;
//   - a 5xx, 429 or any status without 1C's body (a proxy's page, an
//     empty answer): adapters.StatusError (429, 502, 503 Retry; others
//     Reconcile: the request may have been applied).
func (c *Client) classify(e odataError, h http.Header) *adapters.Error {
	cause := fmt.Sprintf("%d %s", e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		cause += ": code " + e.Code + ": " + c.clean(e.Message)
	}
	switch {
	case keyTaken(e):
		return &adapters.Error{Class: adapters.Final, Code: codes.TargetRejected, Message: "1C holds an object under this key already", Err: errors.New(cause)}
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || e.Code == odataRights:
		return adapters.Misconfigured(codes.TargetPermissionDenied,
			"1C refused the gateway's user (its password, or its rights to this object); check the user and its roles", errors.New(cause))
	case e.Status == http.StatusNotFound && e.Code == odataNotFound:
		return &adapters.Error{Class: adapters.Final, Code: codes.NotFound, Message: "the object was not found in 1C", Err: errors.New(cause)}
	case e.Status == http.StatusNotFound:
		return adapters.Misconfigured(codes.TargetNotPublished,
			"1C's standard OData interface does not publish this object at the configured address; check base_url and the composition («Настройка стандартного интерфейса OData»)", errors.New(cause))
	case internalError(e):
		return &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
			Message: "1C failed internally while handling the request; whether it was applied is settled by the object's key", Err: errors.New(cause)}
	case e.Code == odataBusiness:
		msg := safeMessage(c, e.Message)
		if msg == "" {
			msg = "1C refused the operation"
		}
		return &adapters.Error{Class: adapters.Final, Code: codes.TargetRejected, Message: "1C refused: " + msg, Err: errors.New(cause)}
	case e.Code != "" && e.Status >= 400 && e.Status < 500:
		return &adapters.Error{Class: adapters.Final, Code: codes.TargetRejected, Message: "1C refused the request", Err: errors.New(cause)}
	}
	resp := &http.Response{StatusCode: e.Status, Status: cause, Header: h}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	se := adapters.StatusError(resp)
	se.Err = errors.New(cause)
	return se
}

// keyTaken is 1C saying an object with the key exists: code 15, under
// whatever 4xx status (409 is not the only one seen or possible).
func keyTaken(e odataError) bool {
	return e.Code == odataKeyTaken && e.Status >= 400 && e.Status < 500
}

// internalError is 1C failing rather than refusing: a 500 with 1C's body
// and a code that is neither the configuration's refusal (-1) nor the key
// taken (15), or -1 with 1C's own «внутренняя ошибка». A write may or may
// not have been applied; a read is made again.
func internalError(e odataError) bool {
	switch {
	case e.Code == "":
		return false
	case e.Code == odataBusiness:
		return strings.Contains(strings.ToLower(e.Message), "внутренняя ошибка")
	}
	return e.Status == http.StatusInternalServerError && e.Code != odataKeyTaken
}

var (
	// unsafeLine finds lines of a 1C message that are no business text: a
	// module's location, a stack, SQL, connection strings, headers.
	unsafeLine = regexp.MustCompile(`(?i)^\s*(at\s|select\s|insert\s|update\s|delete\s)|srvr=|usr=|pwd=|ref=|authorization:|://|\{[^}]*\(\d+\)\}|microsoft sql|postgres|dbo\.`)
	// modulePrefix is the location 1C puts before a module's message:
	// {Документ.РеализацияТоваровУслуг.МодульОбъекта(123)}:
	modulePrefix = regexp.MustCompile(`^\{[^}]*\}:\s*`)
	// addrPattern finds IP addresses (and ports) that errors quote.
	addrPattern = regexp.MustCompile(`\[[0-9A-Fa-f:.%]+\](:[0-9]+)?|\b[0-9]{1,3}(\.[0-9]{1,3}){3}(:[0-9]+)?\b`)
)

// maxMessage bounds the 1C text passed on to an agent, in runes.
const maxMessage = 300

// safeMessage is the business part of a 1C message, safe for a model to
// read: its lines without module locations, stacks, SQL or connection
// strings, secrets and the host masked, at most maxMessage runes.
func safeMessage(c *Client, s string) string {
	var keep []string
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r", ""), "\n") {
		line = strings.TrimSpace(modulePrefix.ReplaceAllString(strings.TrimSpace(line), ""))
		if line == "" || unsafeLine.MatchString(line) {
			continue
		}
		keep = append(keep, line)
	}
	out := strings.Join(keep, " ")
	out = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return -1
		}
		return r
	}, out)
	out = c.clean(out)
	if utf8.RuneCountInString(out) > maxMessage {
		out = string([]rune(out)[:maxMessage]) + "…"
	}
	return out
}

// clean keeps a text free of the publication's host, the user, the
// password, credential patterns and IP addresses, and short.
func (c *Client) clean(s string) string {
	s = strings.ReplaceAll(s, c.host, "<1c>")
	s = c.red.Foreign(s)
	s = addrPattern.ReplaceAllString(s, "<addr>")
	if len(s) > 512 {
		s = strings.ToValidUTF8(s[:512], "") + "…"
	}
	return s
}
