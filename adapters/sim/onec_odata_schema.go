package sim

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// The published slice of Бухгалтерия предприятия 3.0: its entity types as
// the standard OData interface describes them (1C Developer Guide 8.3.27,
// 17.4; a copy is in github.com/hacker-cb/1c-odata, docs/1c/markdown).
// Names are the configuration's own; standard properties are English
// (Ref_Key, Code, Description, Number, Date, Posted, DeletionMark).

// EDM types the simulator uses (17.4, the table of types: Число целое →
// Int16/32/64, дробное → Double, Ссылка → Guid, Дата → DateTime).
const (
	edmGuid     = "Edm.Guid"
	edmString   = "Edm.String"
	edmDateTime = "Edm.DateTime"
	edmBoolean  = "Edm.Boolean"
	edmDouble   = "Edm.Double"
	edmInt64    = "Edm.Int64"
)

// odataNamespace is the schema namespace of every standard interface.
const odataNamespace = "StandardODATA"

// odataProp is one property of an entity type or a tabular section's row.
type odataProp struct {
	Name, Type string
	// Ref is the entity set a _Key property refers to, if any.
	Ref string
	// Len is a string's length as the configuration limits it, which
	// $metadata gives as MaxLength; 0 is an unlimited string (no
	// MaxLength), which 1C cannot filter or sort on.
	Len int
}

// odataSection is a tabular section: an array property whose rows have
// the RowType Document_X_Name_RowType.
type odataSection struct {
	Name  string
	Props []odataProp
}

// odataType is one published object.
type odataType struct {
	Set      string // the entity set and type name, e.g. Catalog_Контрагенты
	Document bool
	Props    []odataProp
	Sections []odataSection
}

func catalogProps(extra ...odataProp) []odataProp {
	return append([]odataProp{
		{Name: "Ref_Key", Type: edmGuid},
		{Name: "DataVersion", Type: edmString},
		{Name: "DeletionMark", Type: edmBoolean},
		{Name: "Code", Type: edmString, Len: 11},
		{Name: "Description", Type: edmString, Len: 100},
	}, extra...)
}

func documentProps(extra ...odataProp) []odataProp {
	return append([]odataProp{
		{Name: "Ref_Key", Type: edmGuid},
		{Name: "DataVersion", Type: edmString},
		{Name: "DeletionMark", Type: edmBoolean},
		{Name: "Number", Type: edmString, Len: 11},
		{Name: "Date", Type: edmDateTime},
		{Name: "Posted", Type: edmBoolean},
	}, extra...)
}

// Entity sets of the slice.
const (
	odataOrgs       = "Catalog_Организации"
	odataParties    = "Catalog_Контрагенты"
	odataProducts   = "Catalog_Номенклатура"
	odataStores     = "Catalog_Склады"
	odataContracts  = "Catalog_ДоговорыКонтрагентов"
	odataInvoices   = "Document_СчетНаОплатуПокупателю"
	odataShipments  = "Document_РеализацияТоваровУслуг"
	odataReceipts   = "Document_ПоступлениеНаРасчетныйСчет"
	odataRowsName   = "Товары"
	odataEmptyRef   = "00000000-0000-0000-0000-000000000000"
	odataEmptyDate  = "0001-01-01T00:00:00"
	odataDateLayout = "2006-01-02T15:04:05"
)

// odataTypes are the published objects, in $metadata's order.
var odataTypes = []*odataType{
	{Set: odataOrgs, Props: catalogProps(
		odataProp{Name: "ИНН", Type: edmString, Len: 12}, odataProp{Name: "КПП", Type: edmString, Len: 9},
		odataProp{Name: "НаименованиеПолное", Type: edmString})},
	{Set: odataParties, Props: catalogProps(
		odataProp{Name: "ИНН", Type: edmString, Len: 12}, odataProp{Name: "КПП", Type: edmString, Len: 9},
		odataProp{Name: "НаименованиеПолное", Type: edmString})},
	{Set: odataProducts, Props: catalogProps(
		odataProp{Name: "Артикул", Type: edmString, Len: 25}, odataProp{Name: "НаименованиеПолное", Type: edmString})},
	{Set: odataStores, Props: catalogProps()},
	{Set: odataContracts, Props: catalogProps(
		odataProp{Name: "Owner_Key", Type: edmGuid, Ref: odataParties},
		odataProp{Name: "Организация_Key", Type: edmGuid, Ref: odataOrgs},
		odataProp{Name: "ВидДоговора", Type: edmString})},
	{Set: odataInvoices, Document: true, Props: documentProps(
		odataProp{Name: "Организация_Key", Type: edmGuid, Ref: odataOrgs},
		odataProp{Name: "Контрагент_Key", Type: edmGuid, Ref: odataParties},
		odataProp{Name: "ДоговорКонтрагента_Key", Type: edmGuid, Ref: odataContracts},
		odataProp{Name: "Склад_Key", Type: edmGuid, Ref: odataStores},
		odataProp{Name: "СрокОплаты", Type: edmDateTime},
		odataProp{Name: "СуммаДокумента", Type: edmDouble},
		odataProp{Name: "Комментарий", Type: edmString},
		odataProp{Name: odataKeyAttr, Type: edmString, Len: odataKeyAttrLen}),
		Sections: []odataSection{{Name: odataRowsName, Props: rowProps()}}},
	{Set: odataShipments, Document: true, Props: documentProps(
		odataProp{Name: "Организация_Key", Type: edmGuid, Ref: odataOrgs},
		odataProp{Name: "Контрагент_Key", Type: edmGuid, Ref: odataParties},
		odataProp{Name: "ДоговорКонтрагента_Key", Type: edmGuid, Ref: odataContracts},
		odataProp{Name: "Склад_Key", Type: edmGuid, Ref: odataStores},
		odataProp{Name: "СуммаДокумента", Type: edmDouble},
		odataProp{Name: "Комментарий", Type: edmString},
		odataProp{Name: odataKeyAttr, Type: edmString, Len: odataKeyAttrLen}),
		Sections: []odataSection{{Name: odataRowsName, Props: rowProps()}}},
	// A receipt of money to the firm's bank account: what a payment the
	// shop was paid makes in accounting.
	{Set: odataReceipts, Document: true, Props: documentProps(
		odataProp{Name: "Организация_Key", Type: edmGuid, Ref: odataOrgs},
		odataProp{Name: "Контрагент_Key", Type: edmGuid, Ref: odataParties},
		odataProp{Name: "СуммаДокумента", Type: edmDouble},
		odataProp{Name: "НазначениеПлатежа", Type: edmString},
		odataProp{Name: "Комментарий", Type: edmString},
		odataProp{Name: odataKeyAttr, Type: edmString, Len: odataKeyAttrLen})},
}

// odataKeyAttr is a string attribute of the documents that a typical
// configuration does not have: the one a firm adds (in an extension) for
// a base that does not keep client keys, so the gateway can write the
// operation's key there and find the document by it (a target's
// key_field). Комментарий, the configuration's own, is an unlimited string.
const (
	odataKeyAttr    = "КлючОперации"
	odataKeyAttrLen = 50
)

func rowProps() []odataProp {
	return []odataProp{
		{Name: "LineNumber", Type: edmInt64},
		{Name: "Номенклатура_Key", Type: edmGuid, Ref: odataProducts},
		{Name: "Количество", Type: edmDouble},
		{Name: "Цена", Type: edmDouble},
		{Name: "Сумма", Type: edmDouble},
		{Name: "СтавкаНДС", Type: edmString},
		{Name: "СуммаНДС", Type: edmDouble},
	}
}

func odataTypeOf(set string) *odataType {
	for _, t := range odataTypes {
		if t.Set == set {
			return t
		}
	}
	return nil
}

func (t *odataType) prop(name string) (odataProp, bool) {
	for _, p := range t.Props {
		if p.Name == name {
			return p, true
		}
	}
	return odataProp{}, false
}

func (t *odataType) section(name string) *odataSection {
	for i := range t.Sections {
		if t.Sections[i].Name == name {
			return &t.Sections[i]
		}
	}
	return nil
}

// odataSeed is one seeded catalog item: the project's external id as its
// Code, and a fixed Ref_Key so tests can name it.
type odataSeed struct {
	set, ref, code, name string
	deleted              bool
	props                map[string]any
}

// OData seeds: the simulators' seeded ids as Codes, plus two counterparties
// sharing an ИНН (a firm's branches, told apart by КПП) and two products
// sharing an Артикул, for ambiguous look-ups.
var odataSeeds = []odataSeed{
	{set: odataOrgs, ref: "a1000000-0000-1000-8000-000000000001", code: "org-main", name: "ООО «Ромашка»",
		props: map[string]any{"ИНН": "7701000001", "КПП": "770101001"}},
	{set: odataParties, ref: "a2000000-0000-1000-8000-000000001042", code: "customer-1042", name: "ООО «Вектор»",
		props: map[string]any{"ИНН": "7702104200", "КПП": "770201001"}},
	{set: odataParties, ref: "a2000000-0000-1000-8000-000000002001", code: "customer-2001", name: "ИП Соколов А. В.",
		props: map[string]any{"ИНН": "770220010001", "КПП": ""}},
	{set: odataParties, ref: "a2000000-0000-1000-8000-00000000b001", code: "customer-blocked-1", name: "ООО «Закрыто»", deleted: true,
		props: map[string]any{"ИНН": "7703000003", "КПП": "770301001"}},
	{set: odataParties, ref: "a2000000-0000-1000-8000-00000000a001", code: "customer-branch-a", name: "АО «Сеть» (Москва)",
		props: map[string]any{"ИНН": "7707083893", "КПП": "770701001"}},
	{set: odataParties, ref: "a2000000-0000-1000-8000-00000000a002", code: "customer-branch-b", name: "АО «Сеть» (Казань)",
		props: map[string]any{"ИНН": "7707083893", "КПП": "165502001"}},
	{set: odataProducts, ref: "a3000000-0000-1000-8000-000000000778", code: "product-778", name: "Кофе в зёрнах 1 кг",
		props: map[string]any{"Артикул": "CF-1000"}},
	{set: odataProducts, ref: "a3000000-0000-1000-8000-000000000779", code: "product-779", name: "Чай листовой 250 г",
		props: map[string]any{"Артикул": "TE-250"}},
	{set: odataProducts, ref: "a3000000-0000-1000-8000-0000000de001", code: "product-deleted-1", name: "Снято с продажи", deleted: true,
		props: map[string]any{"Артикул": "OLD-1"}},
	{set: odataProducts, ref: "a3000000-0000-1000-8000-00000000a001", code: "product-twin-a", name: "Фильтр (партия 1)",
		props: map[string]any{"Артикул": "FLT-1"}},
	{set: odataProducts, ref: "a3000000-0000-1000-8000-00000000a002", code: "product-twin-b", name: "Фильтр (партия 2)",
		props: map[string]any{"Артикул": "FLT-1"}},
	{set: odataStores, ref: "a4000000-0000-1000-8000-000000000001", code: "warehouse-01", name: "Основной склад"},
	{set: odataContracts, ref: "a5000000-0000-1000-8000-000000001042", code: "contract-1042", name: "Основной договор",
		props: map[string]any{"Owner_Key": "a2000000-0000-1000-8000-000000001042",
			"Организация_Key": "a1000000-0000-1000-8000-000000000001", "ВидДоговора": "СПокупателем"}},
}

// blank is an entity of t with every property at its empty value.
func (t *odataType) blank() map[string]any {
	e := map[string]any{}
	for _, p := range t.Props {
		switch p.Type {
		case edmGuid:
			e[p.Name] = odataEmptyRef
		case edmBoolean:
			e[p.Name] = false
		case edmDouble, edmInt64:
			e[p.Name] = float64(0)
		case edmDateTime:
			e[p.Name] = odataEmptyDate
		default:
			e[p.Name] = ""
		}
	}
	for _, s := range t.Sections {
		e[s.Name] = []map[string]any{}
	}
	return e
}

// jsonValue is v as the JSON form gives it: Int64 as a string (OData v3's
// JSON format writes 64-bit integers as strings), Double as a number.
func jsonValue(typ string, v any) any {
	if typ == edmInt64 {
		if f, ok := v.(float64); ok {
			return strconv.FormatInt(int64(f), 10)
		}
	}
	return v
}

// odataJSON is the entity e of t, selected to sel (all when empty).
func odataJSON(t *odataType, e map[string]any, sel []string) map[string]any {
	out := map[string]any{}
	want := func(name string) bool {
		if len(sel) == 0 {
			return true
		}
		for _, s := range sel {
			if s == name {
				return true
			}
		}
		return false
	}
	for _, p := range t.Props {
		if want(p.Name) {
			out[p.Name] = jsonValue(p.Type, e[p.Name])
		}
	}
	for _, s := range t.Sections {
		if !want(s.Name) {
			continue
		}
		rows, _ := e[s.Name].([]map[string]any)
		list := make([]map[string]any, 0, len(rows))
		for _, r := range rows {
			row := map[string]any{"Ref_Key": e["Ref_Key"]}
			for _, p := range s.Props {
				row[p.Name] = jsonValue(p.Type, r[p.Name])
			}
			list = append(list, row)
		}
		out[s.Name] = list
	}
	return out
}

// xmlText escapes s for XML character data.
func xmlText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

func atomValue(v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return xmlText(x)
	}
	return xmlText(fmt.Sprint(v))
}

// atomEntry is the entity e of t as an Atom entry (17.4.13.1.2's example).
func atomEntry(base string, t *odataType, e map[string]any, sel []string) string {
	js := odataJSON(t, e, sel)
	id := fmt.Sprintf("%s(guid'%s')", t.Set, e["Ref_Key"])
	var b strings.Builder
	fmt.Fprintf(&b, `<entry><id>%s%s</id><category term="%s.%s" scheme="http://schemas.microsoft.com/ado/2007/08/dataservices/scheme"/>`,
		xmlText(base), xmlText(id), odataNamespace, xmlText(t.Set))
	fmt.Fprintf(&b, `<title type="text"/><updated/><author/><summary/><link rel="edit" href="%s" title="edit link"/>`, xmlText(id))
	b.WriteString(`<content type="application/xml"><m:properties>`)
	for _, p := range t.Props {
		if v, ok := js[p.Name]; ok {
			fmt.Fprintf(&b, "<d:%s>%s</d:%s>", p.Name, atomValue(v), p.Name)
		}
	}
	for _, s := range t.Sections {
		rows, ok := js[s.Name].([]map[string]any)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, `<d:%s m:type="Collection(%s.%s_%s_RowType)">`, s.Name, odataNamespace, t.Set, s.Name)
		for _, r := range rows {
			b.WriteString("<d:element>")
			for _, p := range s.Props {
				fmt.Fprintf(&b, "<d:%s>%s</d:%s>", p.Name, atomValue(r[p.Name]), p.Name)
			}
			b.WriteString("</d:element>")
		}
		fmt.Fprintf(&b, "</d:%s>", s.Name)
	}
	b.WriteString(`</m:properties></content></entry>`)
	return b.String()
}

const atomNamespaces = `xmlns="http://www.w3.org/2005/Atom" xmlns:d="http://schemas.microsoft.com/ado/2007/08/dataservices" xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"`

// atomDocument wraps one entry, or a feed of entries, with the namespaces.
func atomDocument(base, set string, entries []string, feed bool) string {
	head := `<?xml version="1.0" encoding="UTF-8"?>`
	if !feed {
		return head + strings.Replace(entries[0], "<entry>", "<entry "+atomNamespaces+` xml:base="`+xmlText(base)+`">`, 1)
	}
	return head + `<feed ` + atomNamespaces + ` xml:base="` + xmlText(base) + `"><id>` + xmlText(base+set) +
		`</id><title type="text">` + xmlText(set) + `</title><updated/><author/><link rel="self" href="` + xmlText(set) +
		`" title="` + xmlText(set) + `"/>` + strings.Join(entries, "") + `</feed>`
}

// odataMetadata is the EDMX of the published types, in the shape of
// 1C's $metadata: namespace StandardODATA, a RowType complex type per
// tabular section, and the container EnterpriseV8.
func odataMetadata(published func(string) bool) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` +
		`<edmx:Edmx xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx" Version="1.0">` +
		`<edmx:DataServices xmlns:m="http://schemas.microsoft.com/ado/2007/08/dataservices/metadata" m:DataServiceVersion="3.0">` +
		`<Schema xmlns="http://schemas.microsoft.com/ado/2009/11/edm" Namespace="` + odataNamespace + `">`)
	for _, t := range odataTypes {
		if !published(t.Set) {
			continue
		}
		fmt.Fprintf(&b, `<EntityType Name="%s"><Key><PropertyRef Name="Ref_Key"/></Key>`, t.Set)
		for _, p := range t.Props {
			nullable := "true"
			if p.Name == "Ref_Key" {
				nullable = "false"
			}
			fmt.Fprintf(&b, `<Property Name="%s" Type="%s" Nullable="%s"%s/>`, p.Name, p.Type, nullable, maxLength(p))
		}
		for _, s := range t.Sections {
			fmt.Fprintf(&b, `<Property Name="%s" Type="Collection(%s.%s_%s_RowType)" Nullable="true"/>`, s.Name, odataNamespace, t.Set, s.Name)
		}
		b.WriteString(`</EntityType>`)
		for _, s := range t.Sections {
			fmt.Fprintf(&b, `<ComplexType Name="%s_%s_RowType">`, t.Set, s.Name)
			for _, p := range s.Props {
				fmt.Fprintf(&b, `<Property Name="%s" Type="%s" Nullable="true"%s/>`, p.Name, p.Type, maxLength(p))
			}
			b.WriteString(`</ComplexType>`)
		}
	}
	b.WriteString(`<EntityContainer Name="EnterpriseV8" m:IsDefaultEntityContainer="true">`)
	for _, t := range odataTypes {
		if published(t.Set) {
			fmt.Fprintf(&b, `<EntitySet Name="%s" EntityType="%s.%s"/>`, t.Set, odataNamespace, t.Set)
		}
	}
	b.WriteString(`</EntityContainer></Schema></edmx:DataServices></edmx:Edmx>`)
	return b.String()
}

// maxLength is a limited string's MaxLength attribute in $metadata, as
// 1C writes it (Code MaxLength="11"); nothing for an unlimited one.
func maxLength(p odataProp) string {
	if p.Type != edmString || p.Len == 0 {
		return ""
	}
	return fmt.Sprintf(` MaxLength="%d"`, p.Len)
}
