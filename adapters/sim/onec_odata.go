package sim

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// The OData simulator plays 1C's standard OData interface (OData v3) of a
// Бухгалтерия предприятия 3.0 base published at
// /onec-odata/odata/standard.odata/: Basic auth (any user, password
// "sim"), Atom unless JSON is asked for ($format=json or Accept), both
// error shapes, Int64 as strings, naive local dates, a client's Ref_Key
// kept and a second create with it refused, Numbers assigned, Post and
// Unpost. What 1C's documentation does not say is a setting
// (POST /_sim/onec_odata/settings): the duplicate's answer, a base that
// ignores client keys or truncates long strings, a refused create or
// posting, what is published. Its answers are checked against the
// recorded corpus in adapters/onecodata/testdata/wire.

// odataRoot is the standard interface's root under the simulators' base URL.
const odataRoot = "/onec-odata/odata/standard.odata/"

// odataPassword is the password the simulator accepts for any user.
const odataPassword = "sim"

// ODataPath is where the standard interface answers below the simulators'
// base URL (a target's base_url is that URL followed by it), and
// ODataPassword the password it accepts for any user.
const (
	ODataPath     = "/onec-odata/odata/standard.odata"
	ODataPassword = odataPassword
)

// OData error codes (17.4.10) and the business one.
const (
	odataCodeBadURL   = "6"
	odataCodeNotFound = "9"
	odataCodeRows     = "13"
	odataCodeQuery    = "14"
	odataCodeKey      = "15"
	odataCodeMethod   = "19"
	odataCodeBusiness = "-1"
)

func init() {
	registrations = append(registrations, registerOData)
}

func registerOData(s *Server) {
	o := &odata{s: s}
	o.reset()
	s.odata = o
	s.Handle("GET "+odataRoot+"{rest...}", o.handleGet)
	s.Handle("POST "+odataRoot+"{rest...}", o.handlePost)
	s.Handle("PATCH "+odataRoot+"{rest...}", o.handlePatch)
	s.Handle("GET /_sim/onec_odata/settings", o.handleSettingsGet)
	s.Handle("POST /_sim/onec_odata/settings", o.handleSettings)
	s.OnReset(o.reset)
}

// odata is the state of the simulated base.
type odata struct {
	s *Server

	mu       sync.Mutex
	settings ODataSettings
	data     map[string]map[string]map[string]any // set → Ref_Key → entity
	numbers  map[string]int                       // set → last number
}

func (o *odata) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.settings = defaultODataSettings()
	o.data = map[string]map[string]map[string]any{}
	o.numbers = map[string]int{}
	for _, t := range odataTypes {
		o.data[t.Set] = map[string]map[string]any{}
	}
	for _, sd := range odataSeeds {
		t := odataTypeOf(sd.set)
		e := t.blank()
		e["Ref_Key"], e["Code"], e["Description"], e["DeletionMark"] = sd.ref, sd.code, sd.name, sd.deleted
		e["DataVersion"] = odataVersion()
		for k, v := range sd.props {
			e[k] = v
		}
		o.data[sd.set][sd.ref] = e
	}
}

// ODataRef is the Ref_Key of the seeded catalog item with code in set
// (e.g. "Catalog_Контрагенты", "customer-1042"), "" when none.
func ODataRef(set, code string) string {
	for _, sd := range odataSeeds {
		if sd.set == set && sd.code == code {
			return sd.ref
		}
	}
	return ""
}

// ODataSettingsOf returns the OData simulator's settings; SetODataSettings
// replaces them (as POST /_sim/onec_odata/settings does).
func (s *Server) ODataSettingsOf() ODataSettings { return s.odata.current() }

// SetODataSettings replaces the OData simulator's settings.
func (s *Server) SetODataSettings(st ODataSettings) { s.odata.set(st) }

func (o *odata) published(set string) bool {
	t := odataTypeOf(set)
	if t == nil {
		return false
	}
	for _, u := range o.settings.Unpublished {
		if u == set {
			return false
		}
	}
	return true
}

// odataErrorBody is the JSON error shape (docs/targets.md, What the adapter relies on).
func odataErrorBody(code, msg string) map[string]any {
	return map[string]any{"odata.error": map[string]any{"code": code, "message": map[string]any{"lang": "ru", "value": msg}}}
}

// wantsJSON: $format=json or an Accept naming JSON; Atom otherwise.
func wantsJSON(r *http.Request) bool {
	if f := r.URL.Query().Get("$format"); f != "" {
		return strings.HasPrefix(f, "json") || strings.HasPrefix(f, "application/json")
	}
	return strings.Contains(r.Header.Get("Accept"), "application/json")
}

// fail answers an OData error in the shape the request asked for: JSON, or
// the XML m:error of 17.4.10.
func odataFail(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json;charset=utf-8")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(odataErrorBody(code, msg))
		return
	}
	w.Header().Set("Content-Type", "application/xml;charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><m:error xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"><m:code>%s</m:code><m:message xml:lang="ru">%s</m:message></m:error>`,
		xmlText(code), xmlText(msg))
}

// authorized checks Basic auth: any user, the password "sim".
func (o *odata) authorized(w http.ResponseWriter, r *http.Request) bool {
	if _, pw, ok := r.BasicAuth(); ok && pw == odataPassword {
		return true
	}
	// The realm's text is unconfirmed (docs/targets.md, What the adapter relies on).
	w.Header().Set("WWW-Authenticate", `Basic realm="1C:Enterprise 8.3"`)
	w.WriteHeader(http.StatusUnauthorized)
	return false
}

// encodedSyntax finds, in the path as sent, the key segment's
// parentheses and quotes percent-encoded (%28guid%27…%27%29), and in the
// query an option name whose '$' is (%24filter).
var (
	encodedKey    = regexp.MustCompile(`(?i)%2[789]`)
	encodedOption = regexp.MustCompile(`(?i)(^|&)%24`)
)

// literalSyntax refuses a request whose key segment or $-options are
// percent-encoded: 1C's documentation writes them literally, every client
// seen working sends them so, and nothing shows 1C taking the encoded
// form (which RFC 3986 does not make the same URL). 400, as a URL 1C
// cannot read.
func literalSyntax(w http.ResponseWriter, r *http.Request) bool {
	path, q, _ := strings.Cut(r.RequestURI, "?")
	switch {
	case encodedKey.MatchString(path):
		odataFail(w, r, http.StatusBadRequest, odataCodeBadURL, "Неверный URL: скобки и кавычки ключа сущности (guid'…') передаются без процентного кодирования")
		return false
	case encodedOption.MatchString(q):
		odataFail(w, r, http.StatusBadRequest, odataCodeQuery, "Ошибка разбора опций запроса: имя опции ($filter, $select, $format, $top) передается без процентного кодирования")
		return false
	}
	return true
}

// odataKeyPath is Set(guid'…') with an optional /Post or /Unpost.
var odataKeyPath = regexp.MustCompile(`^([^()/]+)\(guid'([0-9A-Fa-f-]{36})'\)(?:/(Post|Unpost))?$`)

// route splits the path under the root into the set, a key and an action.
func route(rest string) (set, key, action string, ok bool) {
	if m := odataKeyPath.FindStringSubmatch(rest); m != nil {
		return m[1], strings.ToLower(m[2]), m[3], true
	}
	if strings.ContainsAny(rest, "()/") {
		return "", "", "", false
	}
	return rest, "", "", true
}

func (o *odata) base(r *http.Request) string {
	return "http://" + r.Host + odataRoot
}

// handleGet serves the service document, $metadata, an entity by key and
// a collection with $filter, $select and $top.
func (o *odata) handleGet(w http.ResponseWriter, r *http.Request) {
	if !o.authorized(w, r) || !literalSyntax(w, r) {
		return
	}
	rest := r.PathValue("rest")
	switch rest {
	case "":
		o.serviceDocument(w, r)
		return
	case "$metadata":
		o.mu.Lock()
		body := odataMetadata(o.published)
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/xml;charset=utf-8")
		io.WriteString(w, body)
		return
	}
	set, key, action, ok := route(rest)
	if !ok || action != "" {
		odataFail(w, r, http.StatusNotFound, odataCodeBadURL, "Неправильный адрес ресурса")
		return
	}
	o.mu.Lock()
	published := o.published(set)
	o.mu.Unlock()
	if !published {
		// An object left out of the composition: 404 (the body's code is
		// unconfirmed; 6 «Неверный URL» here).
		odataFail(w, r, http.StatusNotFound, odataCodeBadURL, fmt.Sprintf("Сегмент URL '%s' не найден", set))
		return
	}
	t := odataTypeOf(set)
	if key != "" {
		o.getEntity(w, r, t, key)
		return
	}
	o.getCollection(w, r, t)
}

func (o *odata) serviceDocument(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	var sets []string
	for _, t := range odataTypes {
		if o.published(t.Set) {
			sets = append(sets, t.Set)
		}
	}
	o.mu.Unlock()
	if wantsJSON(r) {
		list := make([]map[string]string, 0, len(sets))
		for _, s := range sets {
			list = append(list, map[string]string{"name": s, "url": s})
		}
		WriteJSON(w, http.StatusOK, map[string]any{"odata.metadata": o.base(r) + "$metadata", "value": list})
		return
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><service xmlns="http://www.w3.org/2007/app" xmlns:atom="http://www.w3.org/2005/Atom" xml:base="` +
		xmlText(o.base(r)) + `"><workspace><atom:title>Default</atom:title>`)
	for _, s := range sets {
		fmt.Fprintf(&b, `<collection href="%s"><atom:title>%s</atom:title></collection>`, xmlText(s), xmlText(s))
	}
	b.WriteString(`</workspace></service>`)
	w.Header().Set("Content-Type", "application/atomsvc+xml;charset=utf-8")
	io.WriteString(w, b.String())
}

func (o *odata) getEntity(w http.ResponseWriter, r *http.Request, t *odataType, key string) {
	f := o.s.TakeFault(OneCOData, OnLookup)
	if f.Before(w) {
		return
	}
	o.mu.Lock()
	e, found := o.data[t.Set][key]
	var body map[string]any
	if found {
		body = odataJSON(t, e, selectList(r))
	}
	o.mu.Unlock()
	if f.After(w) {
		return
	}
	if !found {
		odataFail(w, r, http.StatusNotFound, odataCodeNotFound, fmt.Sprintf("Экземпляр сущности \"%s\" не найден по переданному ключу.", t.Set))
		return
	}
	o.answerEntity(w, r, http.StatusOK, t, body)
}

func (o *odata) answerEntity(w http.ResponseWriter, r *http.Request, status int, t *odataType, body map[string]any) {
	if wantsJSON(r) {
		body["odata.metadata"] = o.base(r) + "$metadata#" + t.Set + "/@Element"
		WriteJSON(w, status, body)
		return
	}
	w.Header().Set("Content-Type", "application/atom+xml;type=entry;charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, atomDocument(o.base(r), t.Set, []string{atomEntry(o.base(r), t, body, nil)}, false))
}

func selectList(r *http.Request) []string {
	sel := r.URL.Query().Get("$select")
	if sel == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(sel, ",") {
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

func (o *odata) getCollection(w http.ResponseWriter, r *http.Request, t *odataType) {
	if strings.Contains(r.URL.RawQuery, "+") {
		// A '+' is not a space here (docs/targets.md, What the adapter relies on): 1C answers 400.
		odataFail(w, r, http.StatusBadRequest, odataCodeQuery, "Ошибка разбора опций запроса")
		return
	}
	q := r.URL.Query()
	conds, err := parseFilter(t, q.Get("$filter"))
	if err != nil {
		odataFail(w, r, http.StatusBadRequest, odataCodeQuery, "Ошибка разбора опций запроса: "+err.Error())
		return
	}
	top := -1
	if s := q.Get("$top"); s != "" {
		if _, err := fmt.Sscanf(s, "%d", &top); err != nil || top < 0 {
			odataFail(w, r, http.StatusBadRequest, odataCodeQuery, "Ошибка разбора опций запроса: $top")
			return
		}
	}
	sel := selectList(r)
	o.mu.Lock()
	var list []map[string]any
	for _, e := range o.data[t.Set] {
		if top >= 0 && len(list) >= top {
			break
		}
		if matches(e, conds) {
			list = append(list, odataJSON(t, e, sel))
		}
	}
	o.mu.Unlock()
	if wantsJSON(r) {
		if list == nil {
			list = []map[string]any{}
		}
		WriteJSON(w, http.StatusOK, map[string]any{"odata.metadata": o.base(r) + "$metadata#" + t.Set, "value": list})
		return
	}
	entries := make([]string, 0, len(list))
	for _, e := range list {
		entries = append(entries, atomEntry(o.base(r), t, e, sel))
	}
	w.Header().Set("Content-Type", "application/atom+xml;type=feed;charset=utf-8")
	io.WriteString(w, atomDocument(o.base(r), t.Set, entries, true))
}

// handlePost serves a create (POST Set) and Post/Unpost of a document.
func (o *odata) handlePost(w http.ResponseWriter, r *http.Request) {
	if !o.authorized(w, r) || !literalSyntax(w, r) {
		return
	}
	set, key, action, ok := route(r.PathValue("rest"))
	o.mu.Lock()
	published := ok && o.published(set)
	o.mu.Unlock()
	switch {
	case !ok:
		odataFail(w, r, http.StatusNotFound, odataCodeBadURL, "Неправильный адрес ресурса")
	case key == "" && strings.HasSuffix(set, "_"+odataRowsName) && odataTypeOf(strings.TrimSuffix(set, "_"+odataRowsName)) != nil:
		odataFail(w, r, http.StatusBadRequest, odataCodeRows, "Создание строк табличных частей напрямую не поддерживается")
	case !published:
		odataFail(w, r, http.StatusNotFound, odataCodeBadURL, fmt.Sprintf("Сегмент URL '%s' не найден", set))
	case key == "":
		o.create(w, r, odataTypeOf(set))
	case action == "" || !odataTypeOf(set).Document:
		odataFail(w, r, http.StatusMethodNotAllowed, odataCodeMethod, "Использованный HTTP-метод запрещен в данном контексте")
	default:
		o.post(w, r, odataTypeOf(set), key, action == "Post")
	}
}

var odataGUID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// create writes a new object and its tabular sections in one step.
func (o *odata) create(w http.ResponseWriter, r *http.Request, t *odataType) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	var in map[string]any
	if err == nil {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		err = dec.Decode(&in)
	}
	if err != nil || in == nil {
		odataFail(w, r, http.StatusBadRequest, "1", "Не удалось разобрать строку")
		return
	}
	sent, _ := in["Ref_Key"].(string)
	sent = strings.ToLower(sent)
	o.s.Call(OneCOData, sent)
	f := o.s.TakeFault(OneCOData, OnExecute)
	if f != nil && f.Fault == FaultLateCommit {
		// Held past the client's timeout, committed afterwards: the client
		// sees no answer, and a look-up before the commit finds nothing.
		time.Sleep(time.Duration(f.DelayMS) * time.Millisecond)
		o.commit(t, in, sent)
		abort(w, false)
		return
	}
	if f.Before(w) {
		return
	}
	e, status, code, msg := o.commit(t, in, sent)
	if f.After(w) {
		return
	}
	switch {
	case e != nil:
		w.Header().Set("Location", o.base(r)+fmt.Sprintf("%s(guid'%s')", t.Set, e["Ref_Key"]))
		o.answerEntity(w, r, http.StatusCreated, t, e)
	case code == "":
		w.WriteHeader(status)
	default:
		odataFail(w, r, status, code, msg)
	}
}

// commit makes the object from the body in: properties the type does not
// have are ignored, as 1C does; a Ref_Key the base holds is refused as the
// settings say. It returns the entity as answered, or the refusal.
func (o *odata) commit(t *odataType, in map[string]any, sent string) (map[string]any, int, string, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := t.blank()
	for k, v := range in {
		p, ok := t.prop(k)
		if !ok || k == "DataVersion" || k == "Posted" {
			continue
		}
		e[k] = o.fit(p, odataScalar(p.Type, v))
	}
	for _, sec := range t.Sections {
		if rows, ok := in[sec.Name].([]any); ok {
			e[sec.Name] = odataRows(sec, rows)
		}
	}
	if msg := o.settings.RefuseCreate; msg != "" {
		return nil, http.StatusInternalServerError, odataCodeBusiness, msg
	}
	if !numbered(t, in) {
		return nil, http.StatusInternalServerError, odataCodeBusiness, odataInternalError
	}
	ref := sent
	if o.settings.IgnoreClientKeys || !odataGUID.MatchString(ref) || ref == odataEmptyRef {
		ref = odataNewRef()
	}
	if _, exists := o.data[t.Set][ref]; exists {
		st := o.settings
		switch st.DuplicateBody {
		case DupKeyExists:
			return nil, st.DuplicateStatus, odataCodeKey, "Сущность с таким ключом уже существует"
		case DupEmpty:
			return nil, st.DuplicateStatus, "", ""
		}
		return nil, st.DuplicateStatus, odataCodeBusiness, "Ошибка при выполнении операции над данными:\n" +
			"Microsoft SQL Server Native Client 11.0: Не удается вставить повторяющуюся строку ключа в объект \"dbo._Document\" с уникальным индексом. Нарушено условие уникальности"
	}
	e["Ref_Key"] = ref
	e["DataVersion"] = odataVersion()
	if t.Document {
		if n, _ := e["Number"].(string); n == "" {
			o.numbers[t.Set]++
			e["Number"] = fmt.Sprintf("0000-%06d", o.numbers[t.Set])
		}
		if d, _ := e["Date"].(string); d == "" || d == odataEmptyDate {
			e["Date"] = time.Now().In(odataZone).Format(odataDateLayout)
		}
	}
	o.data[t.Set][ref] = e
	o.s.Effect(OneCOData, ref)
	return odataJSON(t, e, nil), 0, "", ""
}

// odataZone is the simulated base's time zone: its dates are naive times
// of this zone.
var odataZone = func() *time.Location {
	if z, err := time.LoadLocation("Europe/Moscow"); err == nil {
		return z
	}
	return time.FixedZone("MSK", 3*60*60)
}()

// odataScalar stores a JSON value as the property's type holds it. A date
// keeps its first 19 characters: 1C reads a zone suffix as another time.
func odataScalar(typ string, v any) any {
	switch typ {
	case edmDouble, edmInt64:
		switch x := v.(type) {
		case json.Number:
			f, _ := x.Float64()
			return f
		case string:
			var f float64
			fmt.Sscanf(x, "%g", &f)
			return f
		}
		return float64(0)
	case edmBoolean:
		b, _ := v.(bool)
		return b
	case edmGuid:
		s, _ := v.(string)
		if !odataGUID.MatchString(s) {
			return odataEmptyRef
		}
		return strings.ToLower(s)
	case edmDateTime:
		s, _ := v.(string)
		if len(s) > 19 {
			s = s[:19]
		}
		return s
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// odataNewRef is a Ref_Key chosen by the base (1C's own are version 1).
func odataNewRef() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x10
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func odataVersion() string {
	b := make([]byte, 8)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
