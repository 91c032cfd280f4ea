package onec

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
)

// The 1C side cannot run here, so its reference modules are held to the
// contract by reading them: one variant per typical configuration, the
// same protocol in each, the routing table the only dispatch, the key's
// lock before its read, one transaction for the document and its key, the
// deadline checked before the commit, and one vocabulary of codes with
// the simulator and the adapter.

// bslVariants are the modules, one per typical configuration.
var bslVariants = []string{"bsl/ut11/OncegateService.bsl", "bsl/bp30/OncegateService.bsl"}

// bslModule is a module's text without comments and string literals'
// contents kept (they are the intents and codes).
type bslModule struct {
	path string
	raw  string
	code string // comments removed
}

func readModule(t *testing.T, path string) bslModule {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	raw := string(b)
	var code []string
	for _, line := range strings.Split(raw, "\n") {
		code = append(code, stripComment(line))
	}
	return bslModule{path: path, raw: raw, code: strings.Join(code, "\n")}
}

// stripComment removes a // comment outside string literals.
func stripComment(line string) string {
	in := false
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '"':
			in = !in
		case !in && strings.HasPrefix(line[i:], "//"):
			return line[:i]
		}
	}
	return line
}

var methodDecl = regexp.MustCompile(`(?m)^(?:Процедура|Функция)\s+([\p{L}\p{N}_]+)\(`)

// methods are the module's procedures and functions, by name, with bodies.
func (m bslModule) methods() map[string]string {
	out := map[string]string{}
	idx := methodDecl.FindAllStringSubmatchIndex(m.code, -1)
	for i, at := range idx {
		name := m.code[at[2]:at[3]]
		end := len(m.code)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out[name] = m.code[at[0]:end]
	}
	return out
}

// region returns the text of #Область name … its #КонецОбласти.
func (m bslModule) region(t *testing.T, text, name string) string {
	t.Helper()
	start := strings.Index(text, "#Область "+name+"\n")
	if start < 0 {
		t.Fatalf("%s: no region %s", m.path, name)
	}
	depth := 0
	for i := start; i < len(text); {
		switch {
		case strings.HasPrefix(text[i:], "#Область "):
			depth++
		case strings.HasPrefix(text[i:], "#КонецОбласти"):
			depth--
			if depth == 0 {
				return text[start : i+len("#КонецОбласти")]
			}
		}
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
	}
	t.Fatalf("%s: region %s not closed", m.path, name)
	return ""
}

// literals are the string literals of s equal to an intent name.
var intentLiteral = regexp.MustCompile(`"([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+)"`)

func intentsIn(s string) []string {
	var out []string
	for _, m := range intentLiteral.FindAllStringSubmatch(s, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

func TestBSLModules(t *testing.T) {
	t.Parallel()
	var protocol []string
	for _, path := range bslVariants {
		m := readModule(t, path)
		methods := m.methods()
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			// Every method the header names exists.
			header := m.raw[:strings.Index(m.raw, "#Область ")]
			named := regexp.MustCompile(`(?:Обработчик|—|:|,)\s+([А-ЯЁ][\p{L}]+(?:POST|GET|[а-яё]))\b`)
			for _, want := range append([]string{"ОперацииPOST", "ОперацииGET", "ПроверкаPOST", "ЗаказКлиентаGET", "ВнешнийИдентификаторGET", "ДокументGET"}, adaptation...) {
				if !strings.Contains(header, want) {
					t.Errorf("the header does not name %s", want)
				}
			}
			// Every route is in the header's table, with its method.
			for _, r := range bslRoutes {
				if !regexp.MustCompile(`(?m)^//\s+` + regexp.QuoteMeta(r.template) + `(\s+|\n//\s+)` + r.method + `\s+` + r.handler + `\b`).MatchString(header) {
					t.Errorf("the header's table does not route %s %s to %s", r.method, r.template, r.handler)
				}
			}
			for _, n := range named.FindAllStringSubmatch(header, -1) {
				if strings.HasSuffix(n[1], "POST") || strings.HasSuffix(n[1], "GET") || slices.Contains(adaptation, n[1]) {
					if _, ok := methods[n[1]]; !ok {
						t.Errorf("the header names %s, which the module does not define", n[1])
					}
				}
			}
			// Every method called by name exists (a typo would fail only
			// at 1C's compile; the call-site list is the module's own).
			call := regexp.MustCompile(`(?m)(?:^|[^.\p{L}\p{N}_])([А-ЯЁ][\p{L}\p{N}_]*)\(`)
			for _, c := range call.FindAllStringSubmatch(m.code, -1) {
				name := c[1]
				if _, ok := methods[name]; ok || bslBuiltins[name] {
					continue
				}
				t.Errorf("%s is called but neither defined in the module nor a platform function", name)
			}

			// No computed calls, no privileged mode.
			for _, banned := range []string{"Выполнить(", "Вычислить(", "УстановитьПривилегированныйРежим(", "ПривилегированныйРежим("} {
				if strings.Contains(m.code, banned) && !(banned == "Выполнить(" && onlyQueryExecute(m.code)) {
					t.Errorf("the module calls %s", banned)
				}
			}

			// The routing table: the published intents are the literals of
			// НамерениеОпубликовано, and each has a branch in the check and
			// the effect; those two route nothing else.
			published := intentsIn(methods["НамерениеОпубликовано"])
			for b := range builtins {
				if b == orderStatusIntent {
					if _, ok := methods["ЗаказКлиентаGET"]; !ok {
						t.Errorf("no handler for %s", b)
					}
					continue
				}
				if !slices.Contains(published, b) {
					t.Errorf("the built-in %s is not published by the routing table (%v)", b, published)
				}
			}
			for _, fn := range []string{"ПроверитьКоманду", "СоздатьЭффект"} {
				if got := intentsIn(methods[fn]); !slices.Equal(got, published) {
					t.Errorf("%s routes %v, the routing table publishes %v", fn, got, published)
				}
			}
			if got := intentsIn(methods["РазобратьКоманду"]); len(got) == 0 || !isSubset(got, published) {
				t.Errorf("РазобратьКоманду parses %v, not all published (%v)", got, published)
			}

			// The execute: a transaction; the key's lock before its read;
			// the key registered and the deadline checked before the commit;
			// a lock refused answered 503.
			order(t, methods["ВыполнитьОперацию"], "НачатьТранзакцию()", "ЗаблокироватьКлюч(", "ЗаписьОперации(",
				"СоздатьЭффект(", "ЗарегистрироватьОперацию(", "СрокИстек(", "ЗафиксироватьТранзакцию()")
			order(t, methods["ВыполнитьОперацию"], "СрокФиксации(", "НачатьТранзакцию()")
			if !strings.Contains(methods["ВыполнитьОперацию"], "РежимБлокировкиДанных.Исключительный") {
				t.Error("the execute does not lock the key exclusively")
			}
			if !strings.Contains(methods["ВыполнитьОперацию"], "ОтменитьТранзакцию()") || !strings.Contains(methods["ВыполнитьОперацию"], `"LOCK_CONFLICT"`) {
				t.Error("the execute does not roll back and answer LOCK_CONFLICT")
			}
			// The look-up: a shared lock before the read.
			order(t, methods["НайтиОперациюПоКлючу"], "НачатьТранзакцию()", "РежимБлокировкиДанных.Разделяемый", "ЗаписьОперации(", "ЗафиксироватьТранзакцию()")
			// The register is read and locked by the key's hash.
			if !strings.Contains(methods["ЗаблокироватьКлюч"], `"ХешКлюча"`) || !strings.Contains(methods["ЗаписьОперации"], "ХешКлюча = &ХешКлюча") {
				t.Error("the key register is not locked and read by ХешКлюча")
			}
			// The document's id is its reference's UUID.
			if !strings.Contains(methods["ЗаписатьДокумент"], "УникальныйИдентификатор()") || strings.Contains(methods["ЗаписатьДокумент"], "Префикс + Номер") {
				t.Error("ЗаписатьДокумент does not make the id from the reference's UUID")
			}
			// Messages left from an earlier call are cleared in every handler.
			for _, r := range bslRoutes {
				if !strings.Contains(methods[r.handler], "ПолучитьСообщенияПользователю(Истина)") {
					t.Errorf("%s does not clear the session's user messages", r.handler)
				}
			}
			// Who an id names is read as a reference is resolved, only
			// read, and only of a catalog item.
			describe := methods["ОписаниеОбъекта"]
			if !strings.Contains(methods["ВнешнийИдентификаторGET"], "ОписаниеОбъекта(") {
				t.Error("ВнешнийИдентификаторGET does not answer with ОписаниеОбъекта")
			}
			order(t, describe, "НайтиПоВнешнемуИдентификатору(", "Справочники.ТипВсеСсылки()", `"NOT_FOUND"`, `"inn"`, `"kpp"`, "ОтветJSON(200")
			for _, write := range []string{"Записать(", "НачатьТранзакцию(", "ПолучитьОбъект("} {
				if strings.Contains(describe, write) {
					t.Errorf("ОписаниеОбъекта calls %s: a read must write nothing", write)
				}
			}

			// A document is read by its id: first as the module registered
			// it, then by its prefix and UUID (one a person made in 1C),
			// only if it exists, with the key of the caller's intent; a
			// malformed id is no exception. It is only read.
			if !strings.Contains(methods["ДокументGET"], "ОписаниеДокумента(") {
				t.Error("ДокументGET does not answer with ОписаниеДокумента")
			}
			order(t, methods["ОписаниеДокумента"], `"intent"`, "НайтиДокумент(", `"NOT_FOUND"`, `"object_id, kind, number, state"`,
				"СостояниеДокумента(", "КлючОперацииДокумента(", `"operation_key"`, "ОтветJSON(200")
			order(t, methods["НайтиДокумент"], "ЭтоУникальныйИдентификатор(", "ДокументПоПрефиксу(", "Новый УникальныйИдентификатор(",
				"ДокументПоВнешнемуИдентификатору(", "ДокументСуществует(")
			order(t, methods["КлючОперацииДокумента"], "РегистрСведений.ОперацииOncegate", "ТипОперации = &ТипОперации", "Объект = &Объект")
			order(t, methods["СостояниеДокумента"], "ПометкаУдаления", `"deleted"`, "Проведение.Разрешить И Ссылка.Проведен", `"posted"`)
			for _, fn := range []string{"ОписаниеДокумента", "НайтиДокумент", "ДокументПоВнешнемуИдентификатору", "ДокументСуществует", "КлючОперацииДокумента", "СостояниеДокумента", "ДокументПоПрефиксу"} {
				for _, write := range []string{"Записать(", "НачатьТранзакцию(", "ПолучитьОбъект(", "Заблокировать("} {
					if strings.Contains(methods[fn], write) {
						t.Errorf("%s calls %s: a read must write nothing", fn, write)
					}
				}
			}
			// The prefixes, kinds and states a document is found by are
			// the ones the module writes it with and the adapter expects.
			byPrefix := methods["ДокументПоПрефиксу"]
			for _, w := range [][3]string{{"INV-", "invoice", "created"}, {"SO-", "sales_order", "draft"}} {
				order(t, byPrefix, `Префикс = "`+w[0]+`"`, `"`+w[1]+`"`, "ПолучитьСсылку(УИД)", `"`+w[2]+`"`)
				if !strings.Contains(m.code, `"`+w[1]+`", "`+w[0]+`", "`+w[2]+`")`) {
					t.Errorf("no document is written as %s, %s, %s", w[1], w[0], w[2])
				}
			}

			// An order marked for deletion is not a draft.
			order(t, methods["СостояниеЗаказаКлиента"], "ПометкаУдаления", `"deleted"`, "Проведен")

			// Documents are named only in the adaptation region.
			adapt := m.region(t, m.code, "АдаптацияКонфигурации")
			rest := strings.Replace(m.code, adapt, "", 1)
			// The type of every document names none.
			rest = strings.ReplaceAll(rest, "Документы.ТипВсеСсылки()", "")
			if d := regexp.MustCompile(`Документы\.[\p{L}]+|"Документ\.[\p{L}]+"|ДокументСсылка\.[\p{L}]+`).FindString(rest); d != "" {
				t.Errorf("%s outside the region АдаптацияКонфигурации", d)
			}

			// Codes: one vocabulary with the simulator and the adapter.
			for _, c := range answerCodes(m.code) {
				if !slices.Contains(simCodes, c) {
					t.Errorf("the module answers %s, which the simulator never does", c)
				}
			}
			for _, c := range simCodes {
				if !slices.Contains(answerCodes(m.code), c) {
					t.Errorf("the simulator answers %s, which the module never does", c)
				}
			}
			protocol = append(protocol, strings.Replace(m.raw[strings.Index(m.raw, "#Область "):], m.region(t, m.raw, "АдаптацияКонфигурации"), "", 1))
		})
	}
	// The variants share the protocol word for word.
	for i := 1; i < len(protocol); i++ {
		if protocol[i] != protocol[0] {
			a, b := strings.Split(protocol[0], "\n"), strings.Split(protocol[i], "\n")
			for j := range min(len(a), len(b)) {
				if a[j] != b[j] {
					t.Fatalf("%s and %s differ outside АдаптацияКонфигурации at line %d of the protocol: %q vs %q", bslVariants[0], bslVariants[i], j+1, a[j], b[j])
				}
			}
			t.Fatalf("%s and %s differ outside АдаптацияКонфигурации in length", bslVariants[0], bslVariants[i])
		}
	}
}

// bslRoute is a URL template of the HTTP service, its method and handler.
type bslRoute struct{ template, method, handler string }

// bslRoutes are the service's routes: each in every module's header, in
// bsl/README.md's installation and contract, and served by the simulator.
var bslRoutes = []bslRoute{
	{"/operations", "POST", "ОперацииPOST"},
	{"/operations", "GET", "ОперацииGET"},
	{"/validate", "POST", "ПроверкаPOST"},
	{"/sales-orders/{object_id}", "GET", "ЗаказКлиентаGET"},
	{"/references/{kind}/{external_id}", "GET", "ВнешнийИдентификаторGET"},
	{"/documents/{object_id}", "GET", "ДокументGET"},
}

// adaptation are the functions of the region АдаптацияКонфигурации the
// header names.
var adaptation = []string{"СоздатьСчет", "СоздатьЧерновикЗаказа", "ПолноеИмяДокументаЗаказа", "ЭтоДокументЗаказа", "ВалютаРубль", "ДокументПоПрефиксу"}

func TestBSLReadme(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("bsl/README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, r := range bslRoutes {
		if !strings.Contains(readme, "`"+r.method+" "+r.template) {
			t.Errorf("README.md's contract has no %s %s", r.method, r.template)
		}
		if !regexp.MustCompile(regexp.QuoteMeta("`"+r.template+"`") + ".*`" + r.method + "` → `" + r.handler + "`").MatchString(readme) {
			t.Errorf("README.md's installation does not route %s %s to %s", r.method, r.template, r.handler)
		}
	}
}

// simCodes are the codes of the 1C simulator (adapters/sim/onec.go).
var simCodes = []string{
	"IDEMPOTENCY_KEY_MISSING", "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH", "INTENT_NOT_ALLOWED", "VALIDATION_ERROR",
	"REFERENCE_NOT_FOUND", "REFERENCE_INACTIVE", "INVALID_STATE", "NOT_FOUND",
	"LOCK_CONFLICT", "DEADLINE_EXCEEDED", "INTERNAL_ERROR",
}

// serviceOnly are codes of 5xx answers, which the adapter classifies by
// status and never passes on.
var serviceOnly = []string{"LOCK_CONFLICT", "DEADLINE_EXCEEDED", "INTERNAL_ERROR"}

var codeLiteral = regexp.MustCompile(`"([A-Z][A-Z_]{3,})"`)

// answerCodes are the error codes the module answers with.
func answerCodes(code string) []string {
	var out []string
	for _, m := range codeLiteral.FindAllStringSubmatch(code, -1) {
		switch m[1] {
		case "RUB", "POST", "GET":
			continue
		}
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

func TestBSLCodesKnownToAdapter(t *testing.T) {
	t.Parallel()
	for _, c := range simCodes {
		if slices.Contains(serviceOnly, c) {
			continue
		}
		if codes.Status(c) == 0 {
			t.Errorf("the 1C service answers %s, which the gateway's catalogue of codes does not know", c)
		}
	}
}

// onlyQueryExecute reports whether every Выполнить( is a query's
// ЗапросКБазе.Выполнить(), not the statement that runs code.
func onlyQueryExecute(code string) bool {
	return !regexp.MustCompile(`(?m)(?:^|[^.\p{L}])Выполнить\(`).MatchString(code)
}

func isSubset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// order checks that the markers occur in body in this order.
func order(t *testing.T, body string, markers ...string) {
	t.Helper()
	at := 0
	for _, m := range markers {
		i := strings.Index(body[at:], m)
		if i < 0 {
			t.Errorf("%q missing or out of order (want %v)", m, markers)
			return
		}
		at += i + len(m)
	}
}

// bslBuiltins are the platform's global functions and constructors the
// modules call.
var bslBuiltins = map[string]bool{
	"НачатьТранзакцию": true, "ЗафиксироватьТранзакцию": true, "ОтменитьТранзакцию": true, "ТранзакцияАктивна": true,
	"ИнформацияОбОшибке": true, "ПодробноеПредставлениеОшибки": true, "ЗаписьЖурналаРегистрации": true,
	"ПолучитьСообщенияПользователю": true, "ЗначениеЗаполнено": true, "СтрДлина": true, "СтрНайти": true,
	"СтрРазделить": true, "СтрСоединить": true, "Сред": true, "Лев": true, "СокрЛП": true, "НРег": true,
	"Строка": true, "Число": true, "Цел": true, "Окр": true, "Дата": true, "ТипЗнч": true, "Тип": true,
	"XMLСтрока": true, "XMLЗначение": true, "ПрочитатьJSON": true, "ЗаписатьJSON": true,
	"ПолучитьСтрокуИзДвоичныхДанных": true, "ПолучитьДвоичныеДанныеИзСтроки": true, "ПолучитьHexСтрокуИзДвоичныхДанных": true,
	"ТекущаяДатаСеанса": true, "ТекущаяУниверсальнаяДатаВМиллисекундах": true, "ЗаполнитьЗначенияСвойств": true,
	"ВызватьИсключение": true, "Структура": true, "Массив": true, "Соответствие": true, "Запрос": true,
	"БлокировкаДанных": true, "ХешированиеДанных": true, "УникальныйИдентификатор": true, "ЧтениеJSON": true, "ЗаписьJSON": true, "HTTPСервисОтвет": true,
}
