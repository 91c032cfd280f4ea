package onecodata

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// metadata is what $metadata says is published: per entity set, its
// properties' EDM types and its tabular sections' row properties. 1C
// ignores properties a type does not have, so every mapped name is
// checked here before anything is sent.
type metadata struct {
	sets map[string]*entityType
}

type entityType struct {
	props    map[string]string            // property → Edm type
	sections map[string]map[string]string // tabular section → row property → Edm type
	// maxLen is a string property's MaxLength; 0 for an unlimited string,
	// which $metadata gives without one (1C cannot filter on it).
	maxLen map[string]int
}

// edmx is the part of EDMX (OData v3's CSDL) the adapter reads.
type edmx struct {
	Schemas []struct {
		Namespace    string    `xml:"Namespace,attr"`
		EntityTypes  []edmType `xml:"EntityType"`
		ComplexTypes []edmType `xml:"ComplexType"`
		Containers   []struct {
			Sets []struct {
				Name       string `xml:"Name,attr"`
				EntityType string `xml:"EntityType,attr"`
			} `xml:"EntitySet"`
		} `xml:"EntityContainer"`
	} `xml:"DataServices>Schema"`
}

type edmType struct {
	Name  string `xml:"Name,attr"`
	Props []struct {
		Name      string `xml:"Name,attr"`
		Type      string `xml:"Type,attr"`
		MaxLength string `xml:"MaxLength,attr"`
	} `xml:"Property"`
}

func parseMetadata(body []byte) (*metadata, error) {
	var doc edmx
	if err := xml.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("$metadata is not EDMX: %v", err)
	}
	types := map[string]edmType{}
	complexes := map[string]edmType{}
	for _, s := range doc.Schemas {
		for _, t := range s.EntityTypes {
			types[s.Namespace+"."+t.Name] = t
		}
		for _, t := range s.ComplexTypes {
			complexes[s.Namespace+"."+t.Name] = t
		}
	}
	m := &metadata{sets: map[string]*entityType{}}
	for _, s := range doc.Schemas {
		for _, ct := range s.Containers {
			for _, set := range ct.Sets {
				t, ok := types[set.EntityType]
				if !ok {
					continue
				}
				et := &entityType{props: map[string]string{}, sections: map[string]map[string]string{}, maxLen: map[string]int{}}
				for _, p := range t.Props {
					inner, isColl := strings.CutPrefix(p.Type, "Collection(")
					if row, ok := complexes[strings.TrimSuffix(inner, ")")]; isColl && ok {
						rp := map[string]string{}
						for _, q := range row.Props {
							rp[q.Name] = q.Type
						}
						et.sections[p.Name] = rp
						continue
					}
					et.props[p.Name] = p.Type
					if p.Type == "Edm.String" {
						n, _ := strconv.Atoi(p.MaxLength)
						et.maxLen[p.Name] = max(n, 0)
					}
				}
				m.sets[set.Name] = et
			}
		}
	}
	if len(m.sets) == 0 {
		return nil, errors.New("$metadata publishes no entity set")
	}
	return m, nil
}

// metadata reads $metadata once; a failed read is tried again next time.
func (c *Client) metadata(ctx context.Context) (*metadata, error) {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	if c.meta != nil {
		return c.meta, nil
	}
	status, h, body, err := c.readCall(ctx, c.root+"$metadata")
	if err != nil {
		return nil, adapters.ReadFailure(err)
	}
	if status != http.StatusOK {
		return nil, adapters.ReadFailure(c.classify(parseError(status, body), h))
	}
	m, err := parseMetadata(body)
	if err != nil {
		return nil, adapters.Misconfigured(codes.TargetNotPublished,
			"the address does not serve 1C's standard OData interface ($metadata could not be read); check base_url", errors.New(c.clean(err.Error())))
	}
	c.meta = m
	return m, nil
}

// missing lists what a binding needs that $metadata does not publish:
// its entity set, a header property, a tabular section or a row property.
func (b *binding) missing(m *metadata) []string {
	et, ok := m.sets[b.entity]
	if !ok {
		return []string{b.entity}
	}
	var out []string
	for _, name := range append(b.props(), b.keyFieldName()...) {
		if _, ok := et.props[name]; !ok {
			out = append(out, b.entity+"."+name)
		}
	}
	for sec, rows := range b.rowProps() {
		rp, ok := et.sections[sec]
		if !ok {
			out = append(out, b.entity+"."+sec)
			continue
		}
		for _, name := range rows {
			if _, ok := rp[name]; !ok {
				out = append(out, b.entity+"."+sec+"."+name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// published refuses a binding whose entity set or properties 1C does not
// publish: 1C would silently drop an unknown property.
func (c *Client) published(ctx context.Context, b *binding) (*entityType, error) {
	m, err := c.metadata(ctx)
	if err != nil {
		return nil, err
	}
	if miss := b.missing(m); len(miss) > 0 {
		return nil, adapters.Misconfigured(codes.TargetNotPublished,
			"1C does not publish what the intent's mapping names: "+strings.Join(miss, ", ")+"; add it in «Настройка стандартного интерфейса OData» or fix the mapping",
			fmt.Errorf("%s: not in $metadata: %s", b.intent, strings.Join(miss, ", ")))
	}
	et := m.sets[b.entity]
	if msg := b.keyFieldFault(et); msg != "" {
		return nil, adapters.Misconfigured(codes.TargetNotPublished, msg, errors.New(msg))
	}
	return et, nil
}

// Probe implements check: it reads the service document and $metadata,
// writing nothing, and reports per bound intent whether its entity set
// and every mapped property are published, and whether this base was seen
// ignoring client keys. An error is returned when anything is missing.
func (c *Client) Probe(ctx context.Context) (string, error) {
	status, h, body, err := c.readCall(ctx, c.root+"?$format=json")
	if err != nil {
		return "", adapters.ReadFailure(err)
	}
	if status != http.StatusOK {
		return "", adapters.ReadFailure(c.classify(parseError(status, body), h))
	}
	var svc struct {
		Value []struct {
			Name string `json:"name"`
		} `json:"value"`
	}
	if json.Unmarshal(body, &svc) != nil {
		return "", adapters.Misconfigured(codes.TargetNotPublished,
			"the address does not serve 1C's standard OData interface (no service document); check base_url", errors.New("service document is not JSON"))
	}
	var listed []string
	for _, v := range svc.Value {
		listed = append(listed, v.Name)
	}
	c.metaMu.Lock()
	c.meta = nil // read afresh: the composition may have changed
	c.metaMu.Unlock()
	m, err := c.metadata(ctx)
	if err != nil {
		return "", err
	}
	var lines, bad []string
	for _, b := range c.sortedBindings() {
		miss := b.missing(m)
		if len(miss) == 0 && !slices.Contains(listed, b.entity) {
			miss = []string{b.entity + " (not in the service document)"}
		}
		if len(miss) > 0 {
			bad = append(bad, fmt.Sprintf("%s v%d: not published: %s", b.intent, b.version, strings.Join(miss, ", ")))
			continue
		}
		if msg := b.keyFieldFault(m.sets[b.entity]); msg != "" {
			bad = append(bad, fmt.Sprintf("%s v%d: %s", b.intent, b.version, msg))
			continue
		}
		line := fmt.Sprintf("%s v%d: %s and every mapped property are published", b.intent, b.version, b.entity)
		if b.keyField != "" {
			line += fmt.Sprintf("; the operation key goes into %s (a string of %d), found by it after a lost answer", b.keyField, m.sets[b.entity].maxLen[b.keyField])
		}
		lines = append(lines, line)
	}
	if ignored, note := c.IgnoresKeys(); ignored && c.keylessBinding() {
		return "", adapters.Misconfigured(codes.TargetIgnoresKeys, "this base does not keep client keys (set key_field, or run check --probe on a copy of the base): "+note, errors.New(note))
	}
	if len(bad) > 0 {
		return "", adapters.Misconfigured(codes.TargetNotPublished, strings.Join(bad, "; "), errors.New(strings.Join(bad, "; ")))
	}
	what := fmt.Sprintf("the standard OData interface answers and publishes %d entity sets", len(listed))
	if len(lines) > 0 {
		what += "; " + strings.Join(lines, "; ")
	}
	return what, nil
}
